// Console screens of two-factor sign-in, passkeys and the channel key view: the personal page's 2FA
// section (set up with the QR code, enable, backup codes, disable), the login page's code step, and the
// super admin's "View key" in the channel form.
import { afterEach, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, within } from "@testing-library/react";
import { ADMIN, USER, location, mockFetch, ok, fail, renderApp, resetDom, type FetchMock } from "./helpers.tsx";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

const modal = () =>
  [...document.querySelectorAll(".arco-modal")].find(
    (m) => (m as HTMLElement).closest(".arco-modal-wrapper")?.getAttribute("style")?.includes("display: none") !== true,
  ) as HTMLElement;
const input = (name: string) => document.querySelector(`input[name="${name}"]`) as HTMLInputElement;
const type = (name: string, value: string) => fireEvent.change(input(name), { target: { value } });
const submitButton = (label: string) =>
  screen.getAllByRole("button").find((b) => b.textContent === label && b.getAttribute("type") === "submit")!;
const SETUP = {
  secret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
  qr_code_data: "otpauth://totp/Switchyard:alice?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Switchyard",
  backup_codes: [
    "AAAA-1111",
    "BBBB-2222",
    "CCCC-3333",
    "DDDD-4444",
    "EEEE-5555",
    "FFFF-6666",
    "GGGG-7777",
    "HHHH-8888",
  ],
};

function personalApi(extra: Record<string, unknown> = {}) {
  return mockFetch({
    "GET /api/user/self": ok(USER),
    "GET /api/user/models": ok([]),
    "GET /api/user/passkey": ok({ enabled: false, last_used_at: null, passkeys: [] }),
    ...extra,
  });
}

describe("personal page: two-factor sign-in", () => {
  test("set up shows the QR code, the secret and the backup codes; a 6-digit code enables it", async () => {
    let enabled = false;
    fm = personalApi({
      "GET /api/user/2fa/status": () =>
        ok(enabled ? { enabled: true, locked: false, backup_codes_remaining: 8 } : { enabled: false, locked: false }),
      "POST /api/user/2fa/setup": ok(SETUP),
      "POST /api/user/2fa/enable": () => {
        enabled = true;
        return ok(undefined, "two-factor sign-in is enabled");
      },
    });
    await renderApp("/personal", { user: USER });
    const card = await screen.findByTestId("twofa-card");
    expect(await within(card).findByText("Off")).toBeTruthy();
    fireEvent.click(within(card).getByText("Set up"));
    const qr = (await screen.findByTestId("totp-qr")) as HTMLImageElement;
    expect(qr.src).toStartWith("data:image/svg+xml");
    expect(decodeURIComponent(qr.src)).toContain("<svg");
    expect(screen.getByTestId("totp-secret").textContent).toContain(SETUP.secret);
    expect(screen.getByTestId("backup-codes").textContent).toContain("HHHH-8888");
    // Not six digits: nothing is sent.
    type("totp-code", "12345");
    fireEvent.click(screen.getByText("Enable"));
    expect(await screen.findByText("The 6-digit code from the app")).toBeTruthy();
    expect(fm.calls.some((c) => c.path === "/api/user/2fa/enable")).toBe(false);
    type("totp-code", "123456");
    fireEvent.click(screen.getByText("Enable"));
    await waitFor(() =>
      expect(fm.calls.find((c) => c.path === "/api/user/2fa/enable")?.body).toEqual({ code: "123456" }),
    );
    expect(await within(card).findByText("On")).toBeTruthy();
    expect(within(card).getByText("8 backup codes left")).toBeTruthy();
  });

  test("turning it off sends the code; a refusal shows the translated server message", async () => {
    fm = personalApi({
      "GET /api/user/2fa/status": ok({ enabled: true, locked: false, backup_codes_remaining: 3 }),
      "POST /api/user/2fa/disable": fail("the code is wrong or has already been used"),
    });
    await renderApp("/personal", { user: USER, lang: "zh" });
    const card = await screen.findByTestId("twofa-card");
    fireEvent.click(await within(card).findByText("关闭两步验证"));
    await waitFor(() => expect(input("twofa-code")).toBeTruthy());
    type("twofa-code", "AAAA-1111");
    fireEvent.click(within(modal()).getByText("确定"));
    await waitFor(() =>
      expect(fm.calls.find((c) => c.path === "/api/user/2fa/disable")?.body).toEqual({ code: "AAAA-1111" }),
    );
    expect(await screen.findByText("验证码错误或已被使用")).toBeTruthy();
  });

  test("new backup codes are shown once after a code from the app", async () => {
    fm = personalApi({
      "GET /api/user/2fa/status": ok({ enabled: true, locked: false, backup_codes_remaining: 1 }),
      "POST /api/user/2fa/backup_codes": ok({ backup_codes: ["ZZZZ-9999", "YYYY-8888"] }),
    });
    await renderApp("/personal", { user: USER });
    fireEvent.click(await screen.findByText("New backup codes"));
    await waitFor(() => expect(input("twofa-code")).toBeTruthy());
    type("twofa-code", "654321");
    fireEvent.click(within(modal()).getByText("OK"));
    expect(await screen.findByText(/ZZZZ-9999/)).toBeTruthy();
  });

  test("a super admin sent here to set it up (?twofa=setup) is told why and the setup opens by itself", async () => {
    fm = personalApi({
      "GET /api/user/self": ok(ADMIN),
      "GET /api/user/2fa/status": ok({ enabled: false, locked: false }),
      "POST /api/user/2fa/setup": ok(SETUP),
    });
    await renderApp("/personal?twofa=setup", { user: ADMIN });
    expect(await screen.findByTestId("twofa-required")).toBeTruthy();
    expect(await screen.findByTestId("totp-qr")).toBeTruthy();
  });

  test("the passkey section appears when passkeys are on and lists them", async () => {
    fm = personalApi({
      "GET /api/user/2fa/status": ok({ enabled: false, locked: false }),
      "GET /api/user/passkey": ok({
        enabled: true,
        last_used_at: null,
        passkeys: [{ id: 3, attachment: "platform", created_at: null, last_used_at: null }],
      }),
      "DELETE /api/user/passkey": ok(),
    });
    await renderApp("/personal", { user: USER, status: { passkey_login: true } });
    const card = await screen.findByTestId("passkey-card");
    expect(await within(card).findByText(/Passkey 1/)).toBeTruthy();
    fireEvent.click(within(card).getByText("Delete"));
    fireEvent.click(await screen.findByText("OK"));
    await waitFor(() =>
      expect(
        fm.calls.some((c) => c.method === "DELETE" && c.path === "/api/user/passkey" && c.query.get("id") === "3"),
      ).toBe(true),
    );
  });
});

describe("login: the two-factor step", () => {
  /** Renders /login and signs in with a password; `secondStep` answers the code. */
  const passwordFirst = async (secondStep: unknown, username = "bob", password = "password123") => {
    fm = mockFetch({
      "POST /api/user/login": ok({ require_2fa: true, flow_token: "flow123", expires_at: 1 }),
      "POST /api/user/login/2fa": secondStep,
    });
    await renderApp("/login");
    await screen.findByPlaceholderText("Username or email");
    type("username", username);
    type("password", password);
    fireEvent.click(submitButton("Log in"));
    await waitFor(() => expect(input("code")).toBeTruthy());
  };

  test("require_2fa opens the code step; the code and flow_token finish the sign-in", async () => {
    await passwordFirst(ok({ id: 7, username: "bob", role: 1, status: 1 }));
    expect(localStorage.getItem("user")).toBeNull();
    type("code", "123456");
    fireEvent.click(submitButton("Verify"));
    await waitFor(() => expect(location()).toBe("/token"));
    expect(fm.calls.find((c) => c.path === "/api/user/login/2fa")!.body).toEqual({
      code: "123456",
      flow_token: "flow123",
    });
    expect(JSON.parse(localStorage.getItem("user")!).id).toBe(7);
  });

  test("a wrong code keeps the step and shows why", async () => {
    await passwordFirst(fail("the code is wrong or has already been used"));
    type("code", "000000");
    fireEvent.click(submitButton("Verify"));
    expect(await screen.findByText("The code is wrong or has already been used")).toBeTruthy();
    expect(location()).toBe("/login");
  });

  test("a super admin who must set up 2FA lands on the personal page's setup", async () => {
    fm = mockFetch({
      "POST /api/user/login": ok({ ...ADMIN, require_2fa_setup: true }),
      "GET /api/user/self": ok(ADMIN),
      "GET /api/user/models": ok([]),
    });
    await renderApp("/login");
    await screen.findByPlaceholderText("Username or email");
    type("username", "root");
    type("password", "rootpass123");
    fireEvent.click(submitButton("Log in"));
    await waitFor(() => expect(location()).toBe("/personal?twofa=setup"));
  });

  test("the passkey button shows only when passkeys are on", async () => {
    fm = mockFetch({});
    await renderApp("/login", { status: { passkey_login: true } });
    await screen.findByPlaceholderText("Username or email");
    // happy-dom has no WebAuthn: the button stays hidden where the browser cannot use passkeys.
    expect(screen.queryByTestId("passkey-login")).toBeNull();
  });
});

describe("channel form: View key", () => {
  const channelRoutes = (extra: Record<string, unknown> = {}) => ({
    "GET /api/channel/4": ok({
      id: 4,
      type: 1,
      name: "main",
      key: "",
      models: "gpt-4o",
      group: "default",
      status: 1,
      key_count: 1,
    }),
    "GET /api/group/": ok(["default"]),
    "GET /api/channel/models_enabled": ok([]),
    ...extra,
  });

  test("the super admin gives the password and sees the key; the field itself stays empty", async () => {
    fm = mockFetch(channelRoutes({ "POST /api/channel/4/key": ok({ key: "sk-shown-once" }) }));
    await renderApp("/channel/edit/4", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("main"));
    expect((screen.getByTestId("channel-key") as HTMLTextAreaElement).value).toBe("");
    fireEvent.click(screen.getByTestId("view-key"));
    await waitFor(() => expect(input("key-view-password")).toBeTruthy());
    type("key-view-password", "rootpass123");
    fireEvent.click(screen.getByText("Show key"));
    await waitFor(() =>
      expect((screen.getByTestId("revealed-key") as HTMLTextAreaElement).value).toBe("sk-shown-once"),
    );
    expect(fm.calls.find((c) => c.path === "/api/channel/4/key")!.body).toEqual({ password: "rootpass123" });
  });

  test("a two-factor code goes as code; a refusal is shown and no key appears", async () => {
    fm = mockFetch(channelRoutes({ "POST /api/channel/4/key": fail("the code is wrong or has already been used") }));
    await renderApp("/channel/edit/4", { user: ADMIN });
    fireEvent.click(await screen.findByTestId("view-key"));
    fireEvent.click(await screen.findByText("Two-factor code"));
    await waitFor(() => expect(input("key-view-code")).toBeTruthy());
    type("key-view-code", "123456");
    fireEvent.click(screen.getByText("Show key"));
    expect(await screen.findByText("The code is wrong or has already been used")).toBeTruthy();
    expect(fm.calls.find((c) => c.path === "/api/channel/4/key")!.body).toEqual({ code: "123456" });
    expect(screen.queryByTestId("revealed-key")).toBeNull();
  });

  test("an admin (role 10) has no View key button", async () => {
    fm = mockFetch(channelRoutes());
    await renderApp("/channel/edit/4", { user: { ...ADMIN, role: 10 } });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("main"));
    expect(screen.queryByTestId("view-key")).toBeNull();
  });
});
