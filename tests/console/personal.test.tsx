import { afterEach, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, within, act } from "@testing-library/react";
import {
  ADMIN,
  USER,
  location,
  mockFetch,
  ok,
  fail,
  renderApp,
  resetDom,
  numberInput,
  type FetchMock,
} from "./helpers.tsx";
import {
  deletionConfirmed,
  validateNotify,
  validatePasswordChange,
  validateTransfer,
  validateEmailBind,
} from "../../console/pages/personal/validation.ts";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

const self = {
  ...USER,
  email: "alice@example.com",
  used_quota: 250_000,
  request_count: 42,
  aff_quota: 1_000_000,
  aff_history_quota: 2_000_000,
  aff_count: 3,
  setting: "",
};
const models = Array.from({ length: 14 }, (_, i) => `model-${i + 1}`);

function personalApi(extra: Record<string, unknown> = {}) {
  return mockFetch({ "GET /api/user/self": ok(self), "GET /api/user/models": ok(models), ...extra });
}

const modal = () => document.querySelector(".arco-modal:not([style*='display: none'])") as HTMLElement;

describe("personal settings rules", () => {
  test("change password: original and new required, new differs, confirmation matches", () => {
    expect(validatePasswordChange({ original: "", password: "", confirm: "" })).toEqual({
      original: "personal.originalRequired",
      password: "personal.newRequired",
    });
    expect(validatePasswordChange({ original: "same1234", password: "same1234", confirm: "same1234" }).password).toBe(
      "personal.newSameAsOld",
    );
    expect(validatePasswordChange({ original: "old12345", password: "new12345", confirm: "other" }).confirm).toBe(
      "personal.confirmMismatch",
    );
    expect(validatePasswordChange({ original: "old12345", password: "new12345", confirm: "new12345" })).toEqual({});
  });

  test("deleting the account needs the exact username", () => {
    expect(deletionConfirmed("alice", "alice")).toBe(true);
    expect(deletionConfirmed("Alice", "alice")).toBe(false);
    expect(deletionConfirmed("", "")).toBe(false);
  });

  test("a transfer is at least one quota unit", () => {
    expect(validateTransfer(499_999, 500_000)).toBe("personal.transferMinimum");
    expect(validateTransfer(undefined, 500_000)).toBe("personal.transferMinimum");
    expect(validateTransfer(500_000, 500_000)).toBeNull();
  });

  test("webhook must be https; email binding needs an email and a code", () => {
    const base = {
      notify_type: "webhook" as const,
      webhook_url: "http://hook.test",
      webhook_secret: "",
      notification_email: "",
      quota_warning_threshold: 100000,
    };
    expect(validateNotify(base).webhook_url).toBe("personal.webhookHttps");
    expect(validateNotify({ ...base, webhook_url: "https://hook.test/x" })).toEqual({});
    expect(validateEmailBind("", "")).toEqual({ email: "personal.emailRequired", code: "personal.codeRequired" });
  });
});

describe("personal settings screen", () => {
  test("summary, role tag and the first 10 model chips, expandable", async () => {
    fm = personalApi();
    await renderApp("/personal", { user: USER });
    expect(await screen.findByText("$0.50")).toBeTruthy();
    expect(screen.getByText("User")).toBeTruthy();
    await screen.findByText("model-1");
    const chips = screen.getByTestId("model-chips");
    expect(within(chips).queryByText("model-11")).toBeNull();
    fireEvent.click(within(chips).getByText("Show all 14"));
    expect(within(chips).getByText("model-14")).toBeTruthy();
  });

  test("change password shows the rules under the fields, then sends original_password and password", async () => {
    fm = personalApi({ "PUT /api/user/self": ok() });
    await renderApp("/personal", { user: USER });
    fireEvent.click(await screen.findByText("Change password"));
    const m = await waitFor(() => modal());
    fireEvent.click(within(m).getByText("OK"));
    expect(await within(m).findByText("Please enter the original password")).toBeTruthy();
    fireEvent.change(m.querySelector('input[name="original"]')!, { target: { value: "old12345" } });
    fireEvent.change(m.querySelector('input[name="password"]')!, { target: { value: "new12345" } });
    fireEvent.change(m.querySelector('input[name="confirm"]')!, { target: { value: "new12345x" } });
    fireEvent.click(within(m).getByText("OK"));
    expect(await within(m).findByText("The new password and its confirmation do not match")).toBeTruthy();
    expect(fm.calls.some((c) => c.method === "PUT")).toBe(false);
    fireEvent.change(m.querySelector('input[name="confirm"]')!, { target: { value: "new12345" } });
    fireEvent.click(within(m).getByText("OK"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT" && c.path === "/api/user/self")).toBe(true));
    expect(fm.calls.find((c) => c.method === "PUT")!.body).toEqual({
      original_password: "old12345",
      password: "new12345",
    });
  });

  test("delete account: wrong name is refused; the right name deletes, logs out and goes to /login", async () => {
    fm = personalApi({ "DELETE /api/user/self": ok(undefined, "account deleted"), "GET /api/user/logout": ok() });
    await renderApp("/personal", { user: USER });
    fireEvent.click(await screen.findByText("Delete account"));
    const m = await waitFor(() => modal());
    fireEvent.change(m.querySelector('input[name="confirm-username"]')!, { target: { value: "bob" } });
    fireEvent.click(within(m).getByText("OK"));
    expect((await within(m).findAllByText("Please enter your account name to confirm deletion")).length).toBe(2);
    expect(fm.calls.some((c) => c.method === "DELETE")).toBe(false);
    fireEvent.change(m.querySelector('input[name="confirm-username"]')!, { target: { value: "alice" } });
    fireEvent.click(within(m).getByText("OK"));
    await waitFor(() => expect(location()).toBe("/login"));
    expect(localStorage.getItem("user")).toBeNull();
    expect(await screen.findByText("Account deleted")).toBeTruthy();
  });

  test("the super admin, who cannot be deleted, is not offered account deletion", async () => {
    fm = personalApi({ "GET /api/user/self": ok({ ...ADMIN, email: "", aff_code: "x", setting: "" }) });
    await renderApp("/personal", { user: ADMIN });
    expect(await screen.findByText("Change password")).toBeTruthy();
    expect(screen.queryByText("Delete account")).toBeNull();
  });

  test("notification settings: webhook must be https; the saved body has every setting field", async () => {
    fm = personalApi({ "PUT /api/user/setting": ok(undefined, "settings updated") });
    await renderApp("/personal", { user: USER });
    fireEvent.click(
      await screen.findByText("Webhook", { selector: "span,label" }).catch(() => screen.getAllByText("Webhook")[0]),
    );
    const url = await waitFor(() => document.querySelector('input[name="webhook_url"]') as HTMLInputElement);
    fireEvent.change(url, { target: { value: "http://hook.test" } });
    fireEvent.click(screen.getAllByText("Save")[0]);
    expect(await screen.findByText("The webhook URL must start with https://")).toBeTruthy();
    expect(fm.calls.some((c) => c.path === "/api/user/setting")).toBe(false);
    fireEvent.change(url, { target: { value: "https://hook.test/x" } });
    fireEvent.change(document.querySelector('input[name="webhook_secret"]')!, { target: { value: "s3cret" } });
    fireEvent.click(screen.getAllByText("Save")[0]);
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/user/setting")).toBe(true));
    expect(fm.calls.find((c) => c.path === "/api/user/setting")!.body).toEqual({
      notify_type: "webhook",
      webhook_url: "https://hook.test/x",
      webhook_secret: "s3cret",
      notification_email: "",
      quota_warning_threshold: 100000,
      accept_unset_model_ratio_model: false,
      record_ip_log: false,
    });
  });

  test("privacy: recording the client's IP in one's logs is off until switched on, and saved as record_ip_log", async () => {
    fm = personalApi({ "PUT /api/user/setting": ok(undefined, "settings updated") });
    await renderApp("/personal", { user: USER });
    fireEvent.click(await screen.findByText("Privacy"));
    const toggle = await waitFor(() => document.querySelector('[data-testid="record-ip"]') as HTMLButtonElement);
    expect(toggle.getAttribute("aria-checked")).toBe("false");
    expect(screen.getByText(/kept in your consume and error logs/)).toBeTruthy();
    fireEvent.click(toggle);
    const pane = toggle.closest(".arco-tabs-content-item") as HTMLElement;
    fireEvent.click(within(pane).getByText("Save"));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/user/setting")).toBe(true));
    expect(fm.calls.find((c) => c.path === "/api/user/setting")!.body).toMatchObject({ record_ip_log: true });
  });

  test("clicking the empty invite-link field generates the link its placeholder promises", async () => {
    fm = personalApi({ "GET /api/user/aff": ok("INV1") });
    await renderApp("/personal", { user: USER });
    await screen.findByText("model-1");
    const field = screen.getByPlaceholderText("Click to generate your invite link") as HTMLInputElement;
    fireEvent.click(field);
    await waitFor(() => expect(field.value).toBe(`${globalThis.location.origin}/register?aff=INV1`));
    fireEvent.click(field);
    expect(fm.calls.filter((c) => c.path === "/api/user/aff").length).toBe(1);
  });

  test("the transfer dialog refuses less than one unit and sends quota", async () => {
    fm = personalApi({ "POST /api/user/aff_transfer": ok(undefined, "transferred") });
    await renderApp("/personal", { user: USER });
    await screen.findByText("model-1");
    await waitFor(() =>
      expect((screen.getByText("Transfer to balance").closest("button") as HTMLButtonElement).disabled).toBe(false),
    );
    fireEvent.click(screen.getByText("Transfer to balance"));
    const m = await waitFor(() => modal());
    const amount = numberInput(within(m).getByTestId("transfer-amount"));
    fireEvent.change(amount, { target: { value: "1000" } });
    fireEvent.blur(amount);
    fireEvent.click(within(m).getByText("OK"));
    expect(await within(m).findByText("The minimum transfer amount is $1.00")).toBeTruthy();
    fireEvent.change(amount, { target: { value: "600000" } });
    fireEvent.blur(amount);
    fireEvent.click(within(m).getByText("OK"));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/user/aff_transfer")).toBe(true));
    expect(fm.calls.find((c) => c.path === "/api/user/aff_transfer")!.body).toEqual({ quota: 600000 });
  });
});

describe("bindings", () => {
  test("only the providers the site enables are offered; a bound GitHub account shows as bound", async () => {
    fm = personalApi({ "GET /api/user/self": ok({ ...self, github_id: "octocat" }) });
    await renderApp("/personal", {
      user: USER,
      status: { github_oauth: true, wechat_login: false, oidc_enabled: false },
    });
    expect(await screen.findByText(/octocat/)).toBeTruthy();
    expect(screen.queryByText("WeChat")).toBeNull();
    expect(screen.queryByText("OIDC")).toBeNull();
    const row = screen.getByText(/octocat/).closest(".arco-space") as HTMLElement;
    expect((within(row).getByText("Bound").closest("button") as HTMLButtonElement).disabled).toBe(true);
  });

  test("provider labels are translated (Chinese shows 微信); Telegram binding calls back in the page", async () => {
    fm = personalApi();
    await renderApp("/personal", {
      user: USER,
      lang: "zh",
      status: { wechat_login: true, github_oauth: true, telegram_oauth: true, telegram_bot_name: "yard_bot" },
    });
    const bindings = (await screen.findByText("账户绑定")).closest(".arco-card") as HTMLElement;
    expect(within(bindings).getByText("微信")).toBeTruthy();
    expect(within(bindings).queryByText("WeChat")).toBeNull();
    expect(within(bindings).getByText("GitHub")).toBeTruthy();
    expect(within(bindings).getByText("Telegram")).toBeTruthy();
    const script = within(bindings).getByTestId("telegram-login").querySelector("script")!;
    expect(script.getAttribute("data-telegram-login")).toBe("yard_bot");
    expect(script.getAttribute("data-onauth")).toMatch(/\(user\)$/);
  });

  test("Telegram: the widget's signed fields go to the bind API with the user-id header (the server refuses a bare-cookie redirect)", async () => {
    fm = personalApi({ "GET /api/oauth/telegram/bind": ok({ ...self, telegram_id: "4242" }, "bind") });
    await renderApp("/personal", { user: USER, status: { telegram_oauth: true, telegram_bot_name: "yard_bot" } });
    const script = (await screen.findByTestId("telegram-login")).querySelector("script")!;
    expect(script.hasAttribute("data-auth-url")).toBe(false);
    fm.on("GET /api/user/self", ok({ ...self, telegram_id: "4242" }));
    const signed = { id: 4242, first_name: "Tele", auth_date: 1_700_000_000, hash: "abc123" };
    await act(async () => new Function("user", script.getAttribute("data-onauth")!)(signed));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/oauth/telegram/bind")).toBe(true));
    const call = fm.calls.find((c) => c.path === "/api/oauth/telegram/bind")!;
    expect(Object.fromEntries(call.query)).toEqual({
      id: "4242",
      first_name: "Tele",
      auth_date: "1700000000",
      hash: "abc123",
    });
    expect(call.headers["new-api-user"]).toBe(String(USER.id));
    expect(await screen.findByText("Bound successfully")).toBeTruthy();
    expect(await screen.findByText(/4242/)).toBeTruthy();
  });

  test("Telegram: a refused binding shows the server's message", async () => {
    fm = personalApi({
      "GET /api/oauth/telegram/bind": fail("this Telegram account is already bound to another user"),
    });
    await renderApp("/personal", { user: USER, status: { telegram_oauth: true, telegram_bot_name: "yard_bot" } });
    const script = (await screen.findByTestId("telegram-login")).querySelector("script")!;
    await act(async () =>
      new Function("user", script.getAttribute("data-onauth")!)({ id: 1, auth_date: 1, hash: "x" }),
    );
    expect(await screen.findByText("This Telegram account is already bound to another user")).toBeTruthy();
  });
});
