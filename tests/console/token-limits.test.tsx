// Token page: the drawer edits the per-token limits and budget; the list shows usage against them.
import { afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { USER, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";

let fm: FetchMock;
afterEach(() => {
  resetDom();
  fm?.restore();
});

const LIMITED = {
  id: 7,
  name: "agent",
  key: "sk-cccc",
  status: 1,
  remain_quota: 0,
  used_quota: 0,
  unlimited_quota: true,
  expired_time: -1,
  model_limits_enabled: false,
  model_limits: "",
  allow_ips: "",
  group: "",
  created_time: 1_700_000_000,
  rpm_limit: 60,
  tpm_limit: 100000,
  concurrency_limit: 4,
  budget_quota: 1_000_000,
  budget_period: "daily",
  rpm_used: 3,
  tpm_used: 1200,
  concurrency_used: 1,
  budget_used: 250_000,
  budget_reset_at: 1_700_086_400,
};
const PLAIN = {
  id: 8,
  name: "plain",
  key: "sk-dddd",
  status: 1,
  remain_quota: 500000,
  used_quota: 0,
  unlimited_quota: false,
  expired_time: -1,
  model_limits_enabled: false,
  model_limits: "",
  allow_ips: "",
  group: "",
  created_time: 1_700_000_000,
  rpm_limit: 0,
  tpm_limit: 0,
  concurrency_limit: 0,
  budget_quota: 0,
  budget_period: "",
  rpm_used: 0,
  tpm_used: 0,
  concurrency_used: 0,
  budget_used: 0,
  budget_reset_at: 0,
};

const routes = (extra: Record<string, unknown> = {}) => ({
  "GET /api/token/": ok({ items: [LIMITED, PLAIN], total: 2, page: 1, page_size: 10 }),
  "GET /api/user/models": ok(["gpt-4o-mini"]),
  "GET /api/user/self/groups": ok({ default: { desc: "Default", ratio: 1 } }),
  ...extra,
});

const input = (testId: string) => within(screen.getByTestId(testId)).getByRole("spinbutton") as HTMLInputElement;
const type = (testId: string, value: string) => {
  const el = input(testId);
  fireEvent.focus(el);
  fireEvent.change(el, { target: { value } });
  fireEvent.blur(el);
};
const submit = () => fireEvent.click(screen.getAllByText("Submit").at(-1)!);

describe("token limits in the console", () => {
  test("the list shows each limit with what is used of it now; a token without limits shows none", async () => {
    fm = mockFetch(routes());
    await renderApp("/token", { user: USER });
    const row = (await screen.findByText("agent")).closest("tr")!;
    const usage = within(row).getByTestId("token-limit-usage").textContent!;
    expect(usage).toContain("3/60 requests/min");
    expect(usage).toContain("1200/100000 tokens/min");
    expect(usage).toContain("1/4 in flight");
    expect(usage).toMatch(/\$0\.50\/\$2\.00 Daily/);
    expect(within(screen.getByText("plain").closest("tr")!).queryByTestId("token-limit-usage")).toBeNull();
  });

  test("editing shows the token's limits and sends the changed ones", async () => {
    fm = mockFetch(routes({ "PUT /api/token/": ok() }));
    await renderApp("/token", { user: USER });
    fireEvent.click(within((await screen.findByText("agent")).closest("tr")!).getByText("Edit"));
    await screen.findByText("Edit token");
    expect(input("limit-rpm").value).toBe("60");
    expect(input("limit-tpm").value).toBe("100000");
    expect(input("limit-concurrency").value).toBe("4");
    expect(input("limit-budget").value).toBe("1000000");
    expect(screen.getByTestId("budget-used").textContent).toContain("$0.50");
    type("limit-rpm", "120");
    type("limit-concurrency", "0");
    fireEvent.click(within(screen.getByTestId("token-limits")).getByText("Weekly"));
    submit();
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    expect(fm.calls.find((c) => c.method === "PUT")!.body).toMatchObject({
      id: 7,
      rpm_limit: 120,
      tpm_limit: 100000,
      concurrency_limit: 0,
      budget_quota: 1_000_000,
      budget_period: "weekly",
    });
  });

  test("a new token has no limits; a budget without a reset period is refused before sending", async () => {
    fm = mockFetch(routes({ "POST /api/token/": ok() }));
    await renderApp("/token", { user: USER });
    await screen.findByText("agent");
    fireEvent.click(screen.getByText("Add token"));
    await screen.findByText("Create token");
    fireEvent.change(screen.getByPlaceholderText("A name for this token"), { target: { value: "ci" } });
    type("limit-budget", "500000");
    submit();
    expect(await screen.findByText("choose when the budget resets: daily, weekly or monthly")).toBeTruthy();
    expect(fm.calls.some((c) => c.method === "POST")).toBe(false);
    fireEvent.click(within(screen.getByTestId("token-limits")).getByText("Monthly"));
    type("limit-tpm", "5000");
    submit();
    await waitFor(() => expect(fm.calls.some((c) => c.method === "POST")).toBe(true));
    expect(fm.calls.find((c) => c.method === "POST")!.body).toMatchObject({
      name: "ci",
      rpm_limit: 0,
      tpm_limit: 5000,
      concurrency_limit: 0,
      budget_quota: 500000,
      budget_period: "monthly",
    });
  });
});
