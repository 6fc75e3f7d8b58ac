// Token page (spec 001 §2 Token page, §5 token rules, §9 presets/expiry shortcuts): what is shown and sent.
import { afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { USER, fail, mockFetch, ok, renderApp, resetDom, withClipboard, type FetchMock } from "./helpers.tsx";

let fm: FetchMock;
// Unmount explicitly (with several test files in one run, the library's own cleanup is registered only once),
// and clear the toasts, so no test's message is left in the document for the next one.
afterEach(() => {
  resetDom();
  fm?.restore();
});

const TOKENS = [
  {
    id: 1,
    name: "laptop",
    key: "sk-aaaa",
    status: 1,
    remain_quota: 500000,
    used_quota: 1000,
    unlimited_quota: false,
    expired_time: -1,
    model_limits_enabled: false,
    model_limits: "",
    allow_ips: "",
    group: "",
    created_time: 1_700_000_000,
  },
  {
    id: 2,
    name: "server",
    key: "sk-bbbb",
    status: 2,
    remain_quota: 0,
    used_quota: 0,
    unlimited_quota: true,
    expired_time: -1,
    model_limits_enabled: false,
    model_limits: "",
    allow_ips: "",
    group: "",
    created_time: 1_700_000_000,
  },
];

function baseRoutes() {
  return {
    "GET /api/token/": ok({ items: TOKENS, total: 2, page: 1, page_size: 10 }),
    "GET /api/user/models": ok(["gpt-4o-mini", "gpt-4o"]),
    "GET /api/user/self/groups": ok({ default: { desc: "Default", ratio: 1 }, vip: { desc: "VIP", ratio: 2 } }),
  };
}

async function openCreate() {
  await screen.findByText("laptop");
  fireEvent.click(screen.getByText("Add token"));
  return screen.findByText("Create token");
}

const submit = () => fireEvent.click(screen.getAllByText("Submit").at(-1)!);

describe("token page", () => {
  test("shows the usage warning and the tokens with their status and quota", async () => {
    fm = mockFetch(baseRoutes());
    await renderApp("/token", { user: USER });
    expect(await screen.findByText(/Tokens cannot precisely limit usage/)).toBeTruthy();
    expect(await screen.findByText("laptop")).toBeTruthy();
    expect(screen.getByText("server")).toBeTruthy();
    expect(screen.getByText("Unlimited quota")).toBeTruthy();
    expect(screen.getAllByText("Never").length).toBeGreaterThanOrEqual(2);
    const list = fm.calls.find((c) => c.path === "/api/token/")!;
    expect(list.query.get("p")).toBe("1");
    expect(list.headers["new-api-user"]).toBe(String(USER.id));
  });

  test("each key is shown masked (start and end), and its copy button copies the whole sk- key", async () => {
    const long = { ...TOKENS[0], id: 3, name: "ci", key: "AbCdEfGhIjKlMnOpQrStUvWx1234" };
    fm = mockFetch({ ...baseRoutes(), "GET /api/token/": ok({ items: [long], total: 1 }) });
    await renderApp("/token", { user: USER });
    const row = (await screen.findByText("ci")).closest("tr")!;
    const cell = within(row).getByTestId("token-key");
    expect(cell.textContent).toBe("sk-AbCd…1234");
    expect(cell.textContent).not.toContain("IjKl");
    await withClipboard(() => fireEvent.click(within(cell).getByTestId("copy-key")), "sk-AbCdEfGhIjKlMnOpQrStUvWx1234");
  });

  test("disabling a token says which one, in a toast that replaces the previous one", async () => {
    fm = mockFetch({ ...baseRoutes(), "PUT /api/token/": ok() });
    await renderApp("/token", { user: USER });
    fireEvent.click(within((await screen.findByText("laptop")).closest("tr")!).getByText("Disable"));
    expect(await screen.findByText("Token laptop disabled")).toBeTruthy();
    fireEvent.click(within(screen.getByText("server").closest("tr")!).getByText("Enable"));
    expect(await screen.findByText("Token server enabled")).toBeTruthy();
    await waitFor(() => expect(screen.queryByText("Token laptop disabled")).toBeNull());
  });

  test("copy selected is disabled until a token is selected", async () => {
    fm = mockFetch(baseRoutes());
    await renderApp("/token", { user: USER });
    await screen.findByText("laptop");
    const btn = screen.getByText("Copy selected").closest("button")!;
    expect(btn.disabled).toBe(true);
    const rowBox = screen.getByText("laptop").closest("tr")!.querySelector("input[type=checkbox]")!;
    fireEvent.click(rowBox);
    await waitFor(() => expect(screen.getByText("Copy selected").closest("button")!.disabled).toBe(false));
  });

  test("creating without a name shows the validation message and sends nothing", async () => {
    fm = mockFetch(baseRoutes());
    await renderApp("/token", { user: USER });
    await openCreate();
    submit();
    expect(await screen.findByText("token name is required")).toBeTruthy();
    expect(fm.calls.some((c) => c.method === "POST")).toBe(false);
  });

  test("a malformed expiry time is refused with 'expiry time format error'", async () => {
    fm = mockFetch(baseRoutes());
    await renderApp("/token", { user: USER });
    await openCreate();
    fireEvent.change(screen.getByPlaceholderText("A name for this token"), { target: { value: "ci" } });
    fireEvent.change(screen.getByPlaceholderText("yyyy-MM-dd HH:mm:ss, empty = never"), {
      target: { value: "tomorrow" },
    });
    submit();
    expect(await screen.findByText("expiry time format error")).toBeTruthy();
    expect(fm.calls.some((c) => c.method === "POST")).toBe(false);
  });

  test("create sends the default 500000 quota, never-expiring, with the count and chosen preset", async () => {
    fm = mockFetch({ ...baseRoutes(), "POST /api/token/": ok(undefined, "token created") });
    await renderApp("/token", { user: USER });
    await openCreate();
    fireEvent.change(screen.getByPlaceholderText("A name for this token"), { target: { value: "ci" } });
    submit();
    await waitFor(() => expect(fm.calls.some((c) => c.method === "POST" && c.path === "/api/token/")).toBe(true));
    const body = fm.calls.find((c) => c.method === "POST")!.body;
    expect(body).toMatchObject({
      name: "ci",
      remain_quota: 500000,
      expired_time: -1,
      unlimited_quota: false,
      count: 1,
      model_limits: "",
      allow_ips: "",
    });
  });

  test("the one-day shortcut and the $10 preset fill expiry and quota", async () => {
    fm = mockFetch({ ...baseRoutes(), "POST /api/token/": ok() });
    await renderApp("/token", { user: USER });
    await openCreate();
    fireEvent.change(screen.getByPlaceholderText("A name for this token"), { target: { value: "ci" } });
    fireEvent.click(screen.getByText("One day"));
    fireEvent.click(screen.getByText("$10"));
    fireEvent.click(screen.getByText("20"));
    const before = Math.floor(Date.now() / 1000);
    submit();
    await waitFor(() => expect(fm.calls.some((c) => c.method === "POST")).toBe(true));
    const body = fm.calls.find((c) => c.method === "POST")!.body;
    expect(body.remain_quota).toBe(5_000_000);
    expect(body.count).toBe(20);
    expect(Math.abs(body.expired_time - (before + 86400))).toBeLessThanOrEqual(2);
  });

  test("a server refusal is shown and the drawer stays open", async () => {
    fm = mockFetch({ ...baseRoutes(), "POST /api/token/": fail("token name is too long (at most 30 characters)") });
    await renderApp("/token", { user: USER });
    await openCreate();
    fireEvent.change(screen.getByPlaceholderText("A name for this token"), { target: { value: "x" } });
    submit();
    expect(await screen.findByText("token name is too long (at most 30 characters)")).toBeTruthy();
    expect(screen.getByText("Create token")).toBeTruthy();
  });

  test("disable sends a status-only update", async () => {
    fm = mockFetch({ ...baseRoutes(), "PUT /api/token/": ok() });
    await renderApp("/token", { user: USER });
    const row = (await screen.findByText("laptop")).closest("tr")!;
    fireEvent.click(within(row).getByText("Disable"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    const put = fm.calls.find((c) => c.method === "PUT")!;
    expect(put.query.get("status_only")).toBe("true");
    expect(put.body).toEqual({ id: 1, status: 2 });
  });

  test("editing keeps the token's values and sends its id", async () => {
    fm = mockFetch({ ...baseRoutes(), "PUT /api/token/": ok() });
    await renderApp("/token", { user: USER });
    const row = (await screen.findByText("server")).closest("tr")!;
    fireEvent.click(within(row).getByText("Edit"));
    await screen.findByText("Edit token");
    submit();
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    const put = fm.calls.find((c) => c.method === "PUT")!;
    expect(put.body).toMatchObject({ id: 2, name: "server", unlimited_quota: true, expired_time: -1 });
    expect(put.body.count).toBeUndefined();
  });

  test("search sends keyword and token to the search endpoint", async () => {
    fm = mockFetch({ ...baseRoutes(), "GET /api/token/search": ok({ items: [TOKENS[0]], total: 1 }) });
    await renderApp("/token", { user: USER });
    await screen.findByText("laptop");
    fireEvent.change(screen.getByPlaceholderText("Token name"), { target: { value: "lap" } });
    fireEvent.click(screen.getByText("Search"));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/token/search")).toBe(true));
    const call = fm.calls.find((c) => c.path === "/api/token/search")!;
    expect(call.query.get("keyword")).toBe("lap");
  });
});
