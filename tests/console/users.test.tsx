import { afterEach, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, within } from "@testing-library/react";
import { ADMIN, mockFetch, ok, fail, renderApp, resetDom, numberInput, type FetchMock } from "./helpers.tsx";
import { validateEditUser, validateNewUser } from "../../console/pages/user/UserDrawers.tsx";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

const rows = [
  {
    id: 1,
    username: "root",
    display_name: "Root",
    role: 100,
    status: 1,
    group: "default",
    quota: 100_000_000,
    used_quota: 0,
    request_count: 0,
    DeletedAt: null,
  },
  {
    id: 2,
    username: "alice",
    display_name: "Alice",
    role: 1,
    status: 1,
    group: "vip",
    quota: 1_000_000,
    used_quota: 250_000,
    request_count: 12345,
    DeletedAt: null,
  },
  {
    id: 3,
    username: "gone",
    display_name: "Gone",
    role: 1,
    status: 1,
    group: "default",
    quota: 0,
    used_quota: 0,
    request_count: 0,
    DeletedAt: "2026-01-01",
  },
];

function userApi(extra: Record<string, unknown> = {}) {
  return mockFetch({
    "GET /api/user/": ok({ items: rows, total: 3, page: 1 }),
    "GET /api/user/search": ok({ items: [rows[1]], total: 1, page: 1 }),
    "GET /api/group/": ok(["default", "vip"]),
    ...extra,
  });
}

const rowOf = (name: string) =>
  document.querySelector(`.arco-table tbody .sy-clip[title="${name}"]`)?.closest("tr") as HTMLElement;

describe("user administration", () => {
  test("lists users with quota in dollars and k/M/B counts; deactivated users have a tag and no actions", async () => {
    fm = userApi();
    await renderApp("/user", { user: ADMIN });
    await waitFor(() => expect(rowOf("alice")).toBeTruthy());
    const alice = rowOf("alice");
    expect(within(alice).getByText("$2.00")).toBeTruthy();
    expect(within(alice).getByText("12.3k")).toBeTruthy();
    // Balance, used quota and requests each under a header of their own, not three bare tags.
    const headers = [...document.querySelectorAll(".arco-table thead th")].map((th) => th.textContent);
    for (const h of ["Remaining quota", "Used quota", "Requests"]) expect(headers).toContain(h);
    expect(within(alice).getByText("Edit")).toBeTruthy();
    fireEvent.click(within(alice).getByTestId("row-more"));
    expect(await screen.findByText("Promote")).toBeTruthy();
    const gone = rowOf("gone");
    expect(within(gone).getByText("Deactivated")).toBeTruthy();
    expect(within(gone).queryByTestId("row-more")).toBeNull();
    expect(within(gone).queryByText("Edit")).toBeNull();
    const first = fm.calls.find((c) => c.path === "/api/user/")!;
    expect(first.query.get("p")).toBe("1");
    expect(first.query.get("page_size")).toBe("10");
  });

  test("the remembered page size (page-size) is used for the first page", async () => {
    fm = userApi();
    await renderApp("/user", { user: ADMIN, storage: { "page-size": "50" } });
    await waitFor(() => expect(rowOf("alice")).toBeTruthy());
    expect(fm.calls.find((c) => c.path === "/api/user/")!.query.get("page_size")).toBe("50");
  });

  test("search sends keyword and group", async () => {
    fm = userApi();
    await renderApp("/user", { user: ADMIN });
    await waitFor(() => expect(rowOf("alice")).toBeTruthy());
    fireEvent.change(screen.getByPlaceholderText("ID, username, display name or email"), { target: { value: "ali" } });
    fireEvent.click(screen.getByText("Search"));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/user/search")).toBe(true));
    expect(fm.calls.find((c) => c.path === "/api/user/search")!.query.get("keyword")).toBe("ali");
  });

  test("disable posts the action and the row shows the status the server returned", async () => {
    fm = userApi({ "POST /api/user/manage": ok({ status: 2, role: 1 }) });
    await renderApp("/user", { user: ADMIN });
    await waitFor(() => expect(rowOf("alice")).toBeTruthy());
    fireEvent.click(within(rowOf("alice")).getByText("Disable"));
    // "Disable" leads to a status called "Disabled", and the toast says who.
    await waitFor(() => expect(within(rowOf("alice")).getByText("Disabled")).toBeTruthy());
    expect(await screen.findByText("alice disabled")).toBeTruthy();
    expect(fm.calls.find((c) => c.path === "/api/user/manage")!.body).toEqual({ id: 2, action: "disable" });
    expect(within(rowOf("alice")).getByText("Enable")).toBeTruthy();
  });

  test("a refused action shows the server's message and changes nothing", async () => {
    fm = userApi({ "POST /api/user/manage": fail("the super admin cannot be disabled, deleted or demoted") });
    await renderApp("/user", { user: ADMIN });
    await waitFor(() => expect(rowOf("root")).toBeTruthy());
    // The super admin's own row does not even offer it.
    expect((within(rowOf("root")).getByText("Disable").closest("button") as HTMLButtonElement).disabled).toBe(true);
    fireEvent.click(within(rowOf("alice")).getByText("Disable"));
    expect(await screen.findByText("The super admin cannot be disabled, deleted or demoted")).toBeTruthy();
    expect(within(rowOf("alice")).getByText("Enabled")).toBeTruthy();
  });

  test("add user: username and password required, then POST /api/user/", async () => {
    expect(validateNewUser({ username: "", password: "x" })).toBe("users.emptyCredentials");
    fm = userApi({ "POST /api/user/": ok(undefined, "user created") });
    await renderApp("/user", { user: ADMIN });
    await waitFor(() => expect(rowOf("alice")).toBeTruthy());
    fireEvent.click(screen.getByText("Add user"));
    const drawer = await waitFor(() => document.querySelector(".arco-drawer") as HTMLElement);
    // A new account has no password to keep: the hint must not say "leave empty to keep".
    expect(drawer.querySelector('input[name="new-password"]')!.getAttribute("placeholder")).toBe(
      "At least 8 characters",
    );
    fireEvent.click(within(drawer).getByText("Submit"));
    expect((await within(drawer).findAllByText("Username and password cannot be empty")).length).toBe(2);
    fireEvent.change(drawer.querySelector('input[name="new-username"]')!, { target: { value: "bob" } });
    fireEvent.change(drawer.querySelector('input[name="new-password"]')!, { target: { value: "password123" } });
    fireEvent.click(within(drawer).getByText("Submit"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "POST" && c.path === "/api/user/")).toBe(true));
    expect(fm.calls.find((c) => c.method === "POST" && c.path === "/api/user/")!.body).toEqual({
      username: "bob",
      display_name: "bob",
      password: "password123",
    });
  });

  test("edit user: quota must be a whole number; add-quota accepts negatives; PUT sends quota as an integer", async () => {
    const base = { id: 2, username: "a", display_name: "", password: "", group: "default", quota: "10", email: "" };
    expect(validateEditUser({ ...base, quota: "1.5" }).quota).toBe("users.quotaNumeric");
    expect(validateEditUser({ ...base, quota: "-20" })).toEqual({});
    expect(validateEditUser({ ...base, password: "short" }).password).toBe("users.passwordShort");
    fm = userApi({ "GET /api/user/2": ok(rows[1]), "PUT /api/user/": ok(rows[1]) });
    await renderApp("/user/edit/2", { user: ADMIN });
    const drawer = await waitFor(() => {
      const d = document.querySelector(".arco-drawer") as HTMLElement;
      if (!d?.querySelector('input[name="edit-quota"]')) throw new Error("not yet");
      return d;
    });
    const quota = drawer.querySelector('input[name="edit-quota"]') as HTMLInputElement;
    expect(quota.value).toBe("1000000");
    fireEvent.change(quota, { target: { value: "abc" } });
    expect(await within(drawer).findByText("The quota must be a whole number")).toBeTruthy();
    fireEvent.change(quota, { target: { value: "1000000" } });
    const add = numberInput(within(drawer).getByTestId("add-quota"));
    fireEvent.change(add, { target: { value: "-250000" } });
    fireEvent.blur(add);
    fireEvent.click(within(drawer).getByText("Apply"));
    await waitFor(() =>
      expect((drawer.querySelector('input[name="edit-quota"]') as HTMLInputElement).value).toBe("750000"),
    );
    fireEvent.click(within(drawer).getByText("Submit"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    expect(fm.calls.find((c) => c.method === "PUT")!.body).toEqual({
      id: 2,
      username: "alice",
      display_name: "Alice",
      group: "vip",
      quota: 750000,
    });
  });
});
