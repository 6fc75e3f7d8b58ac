// The console's mail screens against the real server (no scripted answers): register with a mailed code,
// reset a password through the mailed link, bind an address from personal settings. The console's fetch
// goes to app.handle() with a cookie jar; mails land in a local SMTP receiver.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, within } from "@testing-library/react";
import { location, renderApp, resetDom } from "./helpers.tsx";
import { testContext, type TestContext } from "../helpers/app.ts";
import { smtpReceiver, useSmtp, codeIn, type SmtpReceiver } from "../mocks/smtp-server.ts";

let ctx: TestContext;
let smtp: SmtpReceiver;
let jar = "";
const original = globalThis.fetch;

beforeAll(async () => {
  ctx = await testContext();
  smtp = smtpReceiver();
  await useSmtp(ctx.deps.options, smtp);
  await ctx.deps.options.set("ServerAddress", "https://gw.example.com");
  globalThis.fetch = (async (input: any, init: any = {}) => {
    const url = new URL(typeof input === "string" ? input : input.url, "http://localhost");
    const headers = new Headers(init.headers ?? {});
    if (jar) headers.set("cookie", jar);
    const res = await ctx.app.handle(new Request(url, { method: init.method ?? "GET", headers, body: init.body }));
    const set = res.headers.get("set-cookie");
    if (set) jar = set.split(";")[0];
    return res;
  }) as typeof fetch;
});
afterAll(async () => {
  globalThis.fetch = original;
  smtp.stop();
  await ctx.close();
});
afterEach(() => {
  jar = "";
  resetDom();
});

const input = (name: string) => document.querySelector(`input[name="${name}"]`) as HTMLInputElement;
const type = (name: string, value: string) => fireEvent.change(input(name), { target: { value } });
const button = (label: string) => screen.getAllByRole("button").find((b) => b.textContent === label)!;
const submitButton = (label: string) =>
  screen.getAllByRole("button").find((b) => b.textContent === label && b.getAttribute("type") === "submit")!;

describe("mail screens end to end", () => {
  test("register: send code, read it from the mail, register", async () => {
    await ctx.deps.options.set("EmailVerificationEnabled", "true");
    try {
      await renderApp("/register", { status: { email_verification: true } });
      await waitFor(() => expect(input("email")).toBeTruthy());
      type("username", "mailuser");
      type("password", "password123");
      type("password2", "password123");
      type("email", "mailuser@example.com");
      const n = smtp.mails.length;
      fireEvent.click(screen.getByTestId("send-code"));
      const code = codeIn(await smtp.waitFor(n + 1));
      expect(await screen.findByText("Verification code sent, check your mailbox")).toBeTruthy();
      type("code", code);
      fireEvent.click(submitButton("Register"));
      await waitFor(() => expect(location()).toBe("/login"));
      const row = await ctx.deps.db
        .selectFrom("users")
        .select("email")
        .where("username", "=", "mailuser")
        .executeTakeFirstOrThrow();
      expect(row.email).toBe("mailuser@example.com");
    } finally {
      await ctx.deps.options.set("EmailVerificationEnabled", "false");
    }
  });

  test("reset: request the mail, open its link, get a new password that signs in", async () => {
    const who = await ctx.user(1, { email: "forgetful@example.com" });
    await renderApp("/reset");
    await waitFor(() => expect(input("email")).toBeTruthy());
    type("email", "forgetful@example.com");
    const n = smtp.mails.length;
    fireEvent.click(submitButton("Send reset email"));
    const mail = await smtp.waitFor(n + 1);
    expect(await screen.findByText("Reset email sent, check your mailbox")).toBeTruthy();
    const link = new URL(/https:\/\/gw\.example\.com\/user\/reset\?[^\s"<]+/.exec(mail.text)![0]);
    resetDom();

    await renderApp(link.pathname + link.search);
    fireEvent.click(await screen.findByText("Reset my password"));
    const shown = await screen.findByTestId("new-password");
    const password = shown.textContent!;
    expect(password).toMatch(/^[A-Za-z0-9]{12}$/);
    await ctx.login(who.username, password);
  });

  test("personal settings: bind an address with the mailed code", async () => {
    const who = await ctx.user(1);
    jar = who.cookie;
    await renderApp("/personal", {
      user: { id: who.id, username: who.username, role: 1, status: 1, group: "default", quota: 0 },
    });
    const bindings = (await screen.findByText("Account bindings")).closest(".arco-card") as HTMLElement;
    const row = within(bindings).getByText("Email").closest(".arco-space") as HTMLElement;
    fireEvent.click(within(row).getByText("Bind"));
    await waitFor(() => expect(input("bind-email")).toBeTruthy());
    type("bind-email", "bound@example.com");
    const n = smtp.mails.length;
    fireEvent.click(button("Send code"));
    const code = codeIn(await smtp.waitFor(n + 1));
    type("bind-code", code);
    fireEvent.click(button("OK"));
    expect(await screen.findByText("Bound successfully")).toBeTruthy();
    const row2 = await ctx.deps.db
      .selectFrom("users")
      .select("email")
      .where("id", "=", who.id)
      .executeTakeFirstOrThrow();
    expect(row2.email).toBe("bound@example.com");
  });
});

describe("the mail screens' server messages", () => {
  test("are translated", async () => {
    const { translateServerMessage } = await import("../../console/api/index.ts");
    const { changeLanguage } = await import("../../console/i18n/index.ts");
    await changeLanguage("zh");
    try {
      expect(translateServerMessage("this email address is not registered")).toBe("该邮箱地址未注册");
      expect(translateServerMessage("reset link is invalid or expired")).toBe("重置链接非法或已过期");
    } finally {
      await changeLanguage("en");
    }
  });
});
