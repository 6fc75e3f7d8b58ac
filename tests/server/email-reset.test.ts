// Password reset by mail (spec 000 §2.1, §7.2; 001 §2): GET /api/reset_password mails a link to
// /user/reset?email=&token=; POST /api/user/reset {email, token} sets and returns a new password.
import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { withMailContext } from "../helpers/mail.ts";
import type { ReceivedMail, SmtpReceiver } from "../mocks/smtp-server.ts";
import { LIMITS } from "../../server/http/ratelimit.ts";

let ctx: TestContext;
let smtp: SmtpReceiver;
withMailContext({ ServerAddress: "https://gw.example.com", SystemName: "Gateway" }, (c, s) => {
  ctx = c;
  smtp = s;
});
afterEach(() => void setSystemTime());

const INVALID = "reset link is invalid or expired";

const ask = (email: string) => ctx.request("GET", `/api/reset_password?email=${encodeURIComponent(email)}`);
const confirm = (body: unknown) => ctx.request("POST", "/api/user/reset", { body });

function linkIn(mail: ReceivedMail): URL {
  const m = /https:\/\/gw\.example\.com\/user\/reset\?[^\s"<]+/.exec(mail.text);
  if (!m) throw new Error(`no reset link in: ${mail.text}`);
  return new URL(m[0]);
}

/** A user with an address, the mail with their link, and the link's parameters. */
async function requested(email: string): Promise<{ who: Session; mail: ReceivedMail; email: string; token: string }> {
  const who = await ctx.user(1, { email });
  const n = smtp.mails.length;
  const r = await ask(email);
  expect(r.body).toEqual({ success: true, message: "a password reset link has been sent to the address" });
  const mail = await smtp.waitFor(n + 1);
  const link = linkIn(mail);
  return { who, mail, email: link.searchParams.get("email")!, token: link.searchParams.get("token")! };
}

describe("asking for a reset link", () => {
  test("mails the account's address a link to the console's /user/reset page, with the username", async () => {
    const { who, mail, email, token } = await requested("ivan@example.com");
    expect(mail.to).toBe("ivan@example.com");
    expect(mail.subject).toContain("Gateway");
    expect(mail.text).toContain(who.username);
    expect(mail.text).toContain("10 minutes");
    expect(email).toBe("ivan@example.com");
    expect(token).toMatch(/^[A-Za-z0-9]{32}$/);
  });

  test("the address in the link is URL-encoded", async () => {
    const { mail, email } = await requested("a+b@example.com");
    expect(mail.text).toContain("email=a%2Bb%40example.com");
    expect(email).toBe("a+b@example.com");
  });

  test("an address no live account has is told so, as one-api does; nothing is mailed", async () => {
    await ctx.deps.db
      .insertInto("users")
      .values({
        username: "deleted1",
        password: "",
        display_name: "d",
        role: 1,
        status: 1,
        group: "default",
        aff_code: "affdel1",
        created_time: 0,
        setting: "",
        email: "deleted@example.com",
        deleted_at: "2026-01-01 00:00:00",
      } as any)
      .execute();
    const n = smtp.mails.length;
    for (const email of ["nobody@example.com", "deleted@example.com"]) {
      expect((await ask(email)).body).toEqual({ success: false, message: "this email address is not registered" });
    }
    expect((await ask("not-an-address")).body).toEqual({ success: false, message: "invalid email address" });
    expect(smtp.mails.length).toBe(n);
  });

  test("without a server address no link can be made, and the answer says so", async () => {
    await ctx.user(1, { email: "noaddr@example.com" });
    await ctx.deps.options.set("ServerAddress", "");
    try {
      const r = await ask("noaddr@example.com");
      expect(r.status).toBe(503);
      expect(r.body).toEqual({
        success: false,
        message: "password reset is not available: the administrator has not set the server address",
      });
    } finally {
      await ctx.deps.options.set("ServerAddress", "https://gw.example.com");
    }
  });

  test("one reset mail per address per 30 seconds", async () => {
    await requested("judy@example.com");
    const n = smtp.mails.length;
    expect((await ask("judy@example.com")).status).toBe(429);
    expect(smtp.mails.length).toBe(n);
  });
});

describe("confirming a reset", () => {
  test("sets a random 12-character password, returns it, and ends the account's sessions", async () => {
    const { who, email, token } = await requested("kate@example.com");
    const r = await confirm({ email, token });
    expect(r.body.success).toBe(true);
    const password: string = r.body.data;
    expect(password).toMatch(/^[A-Za-z0-9]{12}$/);
    const old = await ctx.request("GET", "/api/user/self", { as: who });
    expect(old.status).toBe(401);
    await expect(ctx.login(who.username, who.password)).rejects.toThrow();
    const fresh = await ctx.login(who.username, password);
    expect((await ctx.request("GET", "/api/user/self", { as: fresh })).body.data.email).toBe("kate@example.com");
  });

  test("a link works once", async () => {
    const { email, token } = await requested("leo@example.com");
    expect((await confirm({ email, token })).body.success).toBe(true);
    expect((await confirm({ email, token })).body).toEqual({ success: false, message: INVALID });
  });

  test("a wrong token, another address or a missing field is refused and changes nothing", async () => {
    const { who, email, token } = await requested("mia@example.com");
    const wrong = token.slice(0, -1) + (token.endsWith("a") ? "b" : "a");
    expect((await confirm({ email, token: wrong })).body).toEqual({ success: false, message: INVALID });
    expect((await confirm({ email: "other@example.com", token })).body).toEqual({ success: false, message: INVALID });
    for (const body of [{ email }, { token }, {}]) {
      expect((await confirm(body)).body).toEqual({
        success: false,
        message: "invalid parameter: email and token are required",
      });
    }
    await ctx.login(who.username, who.password);
    expect((await confirm({ email: " MIA@example.com ", token })).body.success).toBe(true);
  });

  test("a link expires after 10 minutes", async () => {
    const { email, token } = await requested("ned@example.com");
    setSystemTime(new Date(Date.now() + 601_000));
    expect((await confirm({ email, token })).body).toEqual({ success: false, message: INVALID });
  });

  test("a registration code for the address is no reset token", async () => {
    const n = smtp.mails.length;
    expect((await ctx.request("GET", "/api/verification?email=olga@example.com")).body.success).toBe(true);
    const code = /\b(\d{6})\b/.exec((await smtp.waitFor(n + 1)).text)![1];
    await ctx.user(1, { email: "olga@example.com" });
    expect((await confirm({ email: "olga@example.com", token: code })).body).toEqual({
      success: false,
      message: INVALID,
    });
  });
});

describe("rate limit", () => {
  test("reset requests and confirmations share the per-IP 'critical' bucket", async () => {
    const limited = await testContext({ config: { rateLimitEnabled: true } });
    try {
      for (let i = 0; i < LIMITS.critical.count / 2; i++) {
        expect((await limited.request("GET", "/api/reset_password?email=bad")).status).toBe(400);
        expect(
          (await limited.request("POST", "/api/user/reset", { body: { email: "a@b.co", token: "x" } })).status,
        ).toBe(400);
      }
      expect((await limited.request("POST", "/api/user/reset", { body: { email: "a@b.co", token: "x" } })).status).toBe(
        429,
      );
    } finally {
      await limited.close();
    }
  });
});
