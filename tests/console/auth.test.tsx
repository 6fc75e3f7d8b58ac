import { afterEach, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, act, within } from "@testing-library/react";
import { location, mockFetch, ok, fail, renderApp, sleep, resetDom, type FetchMock } from "./helpers.tsx";
import { validateRegister } from "../../console/pages/register/index.tsx";
import { afterSetup, setupBody, validateSetup } from "../../console/pages/setup/index.tsx";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

const input = (name: string) => document.querySelector(`input[name="${name}"]`) as HTMLInputElement;
const type = (name: string, value: string) => fireEvent.change(input(name), { target: { value } });
const submitButton = (label: string) =>
  screen.getAllByRole("button").find((b) => b.textContent === label && b.getAttribute("type") === "submit")!;

describe("login", () => {
  test("empty fields show 'please enter username and password' under the fields and send nothing", async () => {
    fm = mockFetch({});
    await renderApp("/login");
    await screen.findByPlaceholderText("Username or email");
    fireEvent.click(submitButton("Log in"));
    expect((await screen.findAllByText("Please enter username and password")).length).toBe(2);
    expect(fm.calls.some((c) => c.path === "/api/user/login")).toBe(false);
  });

  test("success stores the user record and goes to /token", async () => {
    fm = mockFetch({ "POST /api/user/login": ok({ id: 7, username: "bob", role: 1, status: 1 }) });
    await renderApp("/login");
    await screen.findByPlaceholderText("Username or email");
    type("username", " bob ");
    type("password", "password123");
    fireEvent.click(submitButton("Log in"));
    await waitFor(() => expect(location()).toBe("/token"));
    const call = fm.calls.find((c) => c.path === "/api/user/login")!;
    expect(call.body).toEqual({ username: "bob", password: "password123" });
    expect(JSON.parse(localStorage.getItem("user")!).id).toBe(7);
    expect(await screen.findByText("Login successful")).toBeTruthy();
  });

  test("a failed login shows the server message and stays", async () => {
    fm = mockFetch({ "POST /api/user/login": fail("username or password is wrong, or the user has been banned") });
    await renderApp("/login");
    await screen.findByPlaceholderText("Username or email");
    type("username", "bob");
    type("password", "nope");
    fireEvent.click(submitButton("Log in"));
    expect(await screen.findByText("The username or password is wrong, or the user has been banned")).toBeTruthy();
    expect(location()).toBe("/login");
    expect(localStorage.getItem("user")).toBeNull();
  });

  test("?expired=true explains that the login expired", async () => {
    fm = mockFetch({});
    await renderApp("/login?expired=true");
    expect(
      (await screen.findAllByText("Not logged in or the login has expired, please log in again")).length,
    ).toBeGreaterThan(0);
  });

  test("third-party buttons follow the status flags", async () => {
    fm = mockFetch({});
    const { unmount } = await renderApp("/login");
    await screen.findByPlaceholderText("Username or email");
    expect(screen.queryByText("GitHub")).toBeNull();
    unmount();
    await renderApp("/login", {
      status: { github_oauth: true, oidc_enabled: true, wechat_login: true, linuxdo_oauth: false },
    });
    expect(await screen.findByText("GitHub")).toBeTruthy();
    expect(screen.getByText("OIDC")).toBeTruthy();
    expect(screen.getByText("WeChat")).toBeTruthy();
    expect(screen.queryByText("Linux DO")).toBeNull();
  });

  test("Telegram: the widget calls back in the page; the signed fields go to the login API, the user is stored, then /", async () => {
    fm = mockFetch({
      "GET /api/oauth/telegram/login": ok({ id: 12, username: "tg_user", role: 1, status: 1 }),
      "GET /api/home_page_content": ok(""),
      "GET /api/notice": ok(""),
    });
    await renderApp("/login", { status: { telegram_oauth: true, telegram_bot_name: "yard_bot" } });
    const script = (await screen.findByTestId("telegram-login")).querySelector("script")!;
    expect(script.getAttribute("data-telegram-login")).toBe("yard_bot");
    // No redirect to the JSON API: the browser would land on a JSON page and the user would never be stored.
    expect(script.hasAttribute("data-auth-url")).toBe(false);
    const onauth = script.getAttribute("data-onauth")!;
    expect(onauth).toMatch(/\(user\)$/);
    const signed = {
      id: 4242,
      first_name: "Tele",
      username: "tg_user",
      photo_url: "https://t.me/i/u.jpg",
      auth_date: 1_700_000_000,
      hash: "abc123",
    };
    // What telegram-widget.js does with data-onauth.
    await act(async () => new Function("user", onauth)(signed));
    await waitFor(() => expect(location()).toBe("/"));
    const call = fm.calls.find((c) => c.path === "/api/oauth/telegram/login")!;
    expect(Object.fromEntries(call.query)).toEqual({
      id: "4242",
      first_name: "Tele",
      username: "tg_user",
      photo_url: "https://t.me/i/u.jpg",
      auth_date: "1700000000",
      hash: "abc123",
    });
    expect(JSON.parse(localStorage.getItem("user")!).username).toBe("tg_user");
    expect(await screen.findByTestId("avatar-menu")).toBeTruthy();
  });

  test("Telegram: a refused login shows the server message and stays on /login", async () => {
    fm = mockFetch({ "GET /api/oauth/telegram/login": fail("telegram authorization failed") });
    await renderApp("/login", { status: { telegram_oauth: true, telegram_bot_name: "yard_bot" } });
    const script = (await screen.findByTestId("telegram-login")).querySelector("script")!;
    await act(async () =>
      new Function("user", script.getAttribute("data-onauth")!)({ id: 1, auth_date: 1, hash: "bad" }),
    );
    expect(await screen.findByText("telegram authorization failed")).toBeTruthy();
    expect(location()).toBe("/login");
    expect(localStorage.getItem("user")).toBeNull();
  });

  test("with Turnstile on, the widget shows and login waits for its token", async () => {
    fm = mockFetch({ "POST /api/user/login": ok({ id: 1, username: "a", role: 1 }) });
    await renderApp("/login", { status: { turnstile_check: true, turnstile_site_key: "site-key" } });
    expect(await screen.findByTestId("turnstile")).toBeTruthy();
    type("username", "a");
    type("password", "password123");
    fireEvent.click(submitButton("Log in"));
    expect(
      await screen.findByText("Please retry in a few seconds, Turnstile is checking the environment"),
    ).toBeTruthy();
    expect(fm.calls.some((c) => c.path === "/api/user/login")).toBe(false);
  });

  test("register link is hidden in self-use mode", async () => {
    fm = mockFetch({});
    await renderApp("/login", { status: { self_use_mode_enabled: true } });
    await screen.findByPlaceholderText("Username or email");
    expect(screen.queryByText("No account yet?")).toBeNull();
  });
});

describe("register", () => {
  test("rules: required fields, password at least 8, passwords match, email format when verification is on", () => {
    const base = { username: "amy", password: "password1", password2: "password1", email: "", code: "" };
    expect(validateRegister(base, false)).toEqual({});
    expect(validateRegister({ ...base, username: " " }, false).username).toBe("register.required");
    expect(validateRegister({ ...base, password: "short", password2: "short" }, false).password).toBe(
      "register.passwordShort",
    );
    expect(validateRegister({ ...base, password2: "other" }, false).password2).toBe("register.mismatch");
    expect(validateRegister({ ...base, username: "abcdefghijklm" }, false).username).toBe("register.usernameTooLong");
    expect(validateRegister(base, true)).toEqual({ email: "register.emailInvalid", code: "register.codeRequired" });
    expect(validateRegister({ ...base, email: "a@b.co", code: "123456" }, true)).toEqual({});
  });

  test("messages appear under the fields as the user types, and nothing is sent until valid", async () => {
    fm = mockFetch({ "POST /api/user/register": ok() });
    await renderApp("/register");
    await waitFor(() => expect(input("username")).toBeTruthy());
    type("username", "amy");
    type("password", "short");
    type("password2", "shorty");
    fireEvent.click(submitButton("Register"));
    expect(await screen.findByText("Password length must not be less than 8")).toBeTruthy();
    expect(screen.getByText("The two passwords do not match")).toBeTruthy();
    expect(fm.calls.some((c) => c.path === "/api/user/register")).toBe(false);
    type("password", "longenough1");
    type("password2", "longenough1");
    await waitFor(() => expect(screen.queryByText("The two passwords do not match")).toBeNull());
    fireEvent.click(submitButton("Register"));
    await waitFor(() => expect(location()).toBe("/login"));
    expect(fm.calls.find((c) => c.path === "/api/user/register")!.body).toEqual({
      username: "amy",
      password: "longenough1",
      password2: "longenough1",
      email: "",
      verification_code: "",
      aff_code: "",
    });
  });

  test("?aff= is stored locally and sent as aff_code", async () => {
    fm = mockFetch({ "POST /api/user/register": ok() });
    await renderApp("/register?aff=INV42");
    await waitFor(() => expect(localStorage.getItem("aff")).toBe("INV42"));
    type("username", "amy");
    type("password", "longenough1");
    type("password2", "longenough1");
    fireEvent.click(submitButton("Register"));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/user/register")).toBe(true));
    expect(fm.calls.find((c) => c.path === "/api/user/register")!.body.aff_code).toBe("INV42");
  });

  test("email verification: send code, then a 30-second 'resend (n)' countdown", async () => {
    fm = mockFetch({ "GET /api/verification": ok() });
    await renderApp("/register", { status: { email_verification: true } });
    await waitFor(() => expect(input("email")).toBeTruthy());
    const button = screen.getByTestId("send-code");
    fireEvent.click(button);
    expect(fm.calls.some((c) => c.path === "/api/verification")).toBe(false);
    type("email", "amy@example.com");
    fireEvent.click(button);
    await waitFor(() => expect(screen.getByTestId("send-code").textContent).toBe("Resend (30)"));
    expect(fm.calls.find((c) => c.path === "/api/verification")!.query.get("email")).toBe("amy@example.com");
    expect((screen.getByTestId("send-code") as HTMLButtonElement).disabled).toBe(true);
    await act(() => sleep(1100));
    expect(screen.getByTestId("send-code").textContent).toBe("Resend (29)");
  });

  test("registration is hidden in self-use mode", async () => {
    fm = mockFetch({});
    await renderApp("/register", { status: { self_use_mode_enabled: true } });
    expect(await screen.findByText("Registration is closed")).toBeTruthy();
    expect(input("username")).toBeNull();
  });
});

describe("setup wizard", () => {
  test("rules apply only when the admin is not initialised", () => {
    const f = { username: " ", password: "short", confirmPassword: "x", mode: "external" as const };
    expect(validateSetup(f, false)).toEqual({
      username: "setup.usernameRequired",
      password: "setup.passwordShort",
      confirmPassword: "setup.mismatch",
    });
    expect(validateSetup(f, true)).toEqual({});
  });

  test("the admin account has the register limits: username at most 12, password at most 20", () => {
    const f = {
      username: "n".repeat(13),
      password: "p".repeat(21),
      confirmPassword: "p".repeat(21),
      mode: "external" as const,
    };
    expect(validateSetup(f, false)).toEqual({
      username: "register.usernameTooLong",
      password: "register.passwordLong",
    });
    expect(
      validateSetup(
        { ...f, username: "n".repeat(12), password: "p".repeat(20), confirmPassword: "p".repeat(20) },
        false,
      ),
    ).toEqual({});
  });

  test("the mode is sent as SelfUseModeEnabled / DemoSiteEnabled, never as a mode field", () => {
    const f = { username: " root ", password: "password1", confirmPassword: "password1", mode: "self" as const };
    expect(setupBody(f, false)).toEqual({
      username: "root",
      password: "password1",
      confirmPassword: "password1",
      SelfUseModeEnabled: true,
      DemoSiteEnabled: false,
    });
    expect(setupBody({ ...f, mode: "demo" }, true)).toEqual({ SelfUseModeEnabled: false, DemoSiteEnabled: true });
  });

  test("shows messages under the fields, posts the setup, says 'system initialised', signs the new admin in and reloads into the console after 1.5 s", async () => {
    let reloads = 0;
    let target = "";
    afterSetup.reload = (to: string) => {
      reloads++;
      target = to;
    };
    const admin = { id: 1, username: "admin", display_name: "admin", role: 100, status: 1, group: "default", quota: 0 };
    fm = mockFetch({
      "GET /api/status": ok({ setup: true }),
      "GET /api/setup": ok({ status: false, root_init: false, database_type: "sqlite" }),
      "POST /api/setup": ok(undefined, "system initialised"),
      "POST /api/user/login": ok(admin),
    });
    await renderApp("/setup", { status: { setup: false } });
    await waitFor(() => expect(input("username")).toBeTruthy());
    fireEvent.click(submitButton("Initialise the system"));
    expect(await screen.findByText("The username cannot be empty")).toBeTruthy();
    expect(screen.getByText("The password must be at least 8 characters")).toBeTruthy();
    type("username", "admin");
    type("password", "password123");
    type("confirmPassword", "password123");
    fireEvent.click(screen.getByText("Demo site: for showing the product"));
    fireEvent.click(submitButton("Initialise the system"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "POST" && c.path === "/api/setup")).toBe(true));
    expect(fm.calls.find((c) => c.method === "POST")!.body).toEqual({
      username: "admin",
      password: "password123",
      confirmPassword: "password123",
      SelfUseModeEnabled: false,
      DemoSiteEnabled: true,
    });
    expect((await screen.findAllByText("System initialised")).length).toBeGreaterThan(0);
    expect(reloads).toBe(0);
    await waitFor(() => expect(reloads).toBe(1), { timeout: 3000 });
    expect(fm.calls.filter((c) => c.path === "/api/status").length).toBe(1);
    // Signed in with what was typed, the operator lands on the channel list, no longer a guest.
    expect(fm.calls.find((c) => c.path === "/api/user/login")!.body).toEqual({
      username: "admin",
      password: "password123",
    });
    expect(target).toBe("/channel");
    expect(JSON.parse(localStorage.getItem("user")!).username).toBe("admin");
  });

  test("during setup the top bar offers no login or register", async () => {
    fm = mockFetch({ "GET /api/setup": ok({ status: false, root_init: false, database_type: "sqlite" }) });
    await renderApp("/setup", { status: { setup: false } });
    await waitFor(() => expect(input("username")).toBeTruthy());
    const bar = document.querySelector(".sy-topbar") as HTMLElement;
    expect(within(bar).queryByText("Log in")).toBeNull();
    expect(within(bar).queryByText("Register")).toBeNull();
  });

  test("with the admin already created only the usage mode is asked", async () => {
    fm = mockFetch({ "GET /api/setup": ok({ status: false, root_init: true, database_type: "postgres" }) });
    await renderApp("/setup", { status: { setup: false } });
    expect(await screen.findByText("An administrator account already exists.")).toBeTruthy();
    expect(input("username")).toBeNull();
  });
});

describe("password reset", () => {
  test("the request needs an email, then counts down 30 seconds", async () => {
    fm = mockFetch({ "GET /api/reset_password": ok() });
    await renderApp("/reset");
    await waitFor(() => expect(input("email")).toBeTruthy());
    fireEvent.click(submitButton("Send reset email"));
    expect(await screen.findByText("Please enter your email")).toBeTruthy();
    type("email", "amy@example.com");
    fireEvent.click(submitButton("Send reset email"));
    expect(await screen.findByText("Retry (30)")).toBeTruthy();
    expect(fm.calls.find((c) => c.path === "/api/reset_password")!.query.get("email")).toBe("amy@example.com");
  });

  test("the confirmation posts email and token from the link and shows the new password", async () => {
    fm = mockFetch({ "POST /api/user/reset": ok("n3wPassw0rd") });
    await renderApp("/user/reset?email=amy%40example.com&token=tok123");
    fireEvent.click(await screen.findByText("Reset my password"));
    expect((await screen.findByTestId("new-password")).textContent).toBe("n3wPassw0rd");
    expect(fm.calls.find((c) => c.path === "/api/user/reset")!.body).toEqual({
      email: "amy@example.com",
      token: "tok123",
    });
  });
});

describe("default password warning", () => {
  test("the server's default-password message opens a warning after login", async () => {
    fm = mockFetch({
      "POST /api/user/login": ok(
        { id: 1, username: "root", role: 100 },
        "you are using the default password, change it immediately",
      ),
    });
    await renderApp("/login");
    await screen.findByPlaceholderText("Username or email");
    type("username", "root");
    type("password", "whatever1");
    fireEvent.click(submitButton("Log in"));
    expect(await screen.findByText("You are using the default password, change it immediately!")).toBeTruthy();
    await waitFor(() => expect(location()).toBe("/token"));
  });
});
