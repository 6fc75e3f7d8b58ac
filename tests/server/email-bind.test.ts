// GET /api/oauth/email/bind?email=&code= (spec 000 §2.7, §5, §7.2): a logged-in user attaches an address
// after proving it with a code mailed to them by GET /api/verification.
import { describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { withMailContext } from "../helpers/mail.ts";
import { codeIn, type SmtpReceiver } from "../mocks/smtp-server.ts";
import { LIMITS } from "../../server/http/ratelimit.ts";

let ctx: TestContext;
let smtp: SmtpReceiver;
withMailContext({}, (c, s) => {
  ctx = c;
  smtp = s;
});

const WRONG = "verification code is wrong or expired";

async function mailedCode(email: string, as: Session | null): Promise<string> {
  const n = smtp.mails.length;
  const r = await ctx.request("GET", `/api/verification?email=${encodeURIComponent(email)}`, { as });
  expect(r.body.success).toBe(true);
  return codeIn(await smtp.waitFor(n + 1));
}

const bind = (as: Session | null, email: string, code: string) =>
  ctx.request("GET", `/api/oauth/email/bind?email=${encodeURIComponent(email)}&code=${encodeURIComponent(code)}`, {
    as,
  });

const emailOf = async (s: Session) =>
  (await ctx.deps.db.selectFrom("users").select("email").where("id", "=", s.id).executeTakeFirstOrThrow()).email;

describe("binding an email address", () => {
  test("the code mailed to a logged-in user binds the address to their account", async () => {
    const u = await ctx.user(1, { email: "old@example.com" });
    const code = await mailedCode("New.Addr@Example.com", u);
    const r = await bind(u, "new.addr@example.com", code);
    expect(r.body).toEqual({ success: true, message: "email bound" });
    expect(await emailOf(u)).toBe("new.addr@example.com");
    // The address now signs in and receives reset links.
    await ctx.login("new.addr@example.com", u.password);
  });

  test("a code is good once", async () => {
    const u = await ctx.user(1);
    const code = await mailedCode("once-bind@example.com", u);
    expect((await bind(u, "once-bind@example.com", code)).body.success).toBe(true);
    await ctx.deps.db.updateTable("users").set({ email: "" }).where("id", "=", u.id).execute();
    expect((await bind(u, "once-bind@example.com", code)).body).toEqual({ success: false, message: WRONG });
  });

  test("a registration code (asked as a guest) does not bind", async () => {
    const u = await ctx.user(1);
    const code = await mailedCode("guestcode@example.com", null);
    expect((await bind(u, "guestcode@example.com", code)).body).toEqual({ success: false, message: WRONG });
    expect(await emailOf(u)).toBe("");
  });

  test("another user's code does not bind", async () => {
    const a = await ctx.user(1);
    const b = await ctx.user(1);
    const code = await mailedCode("shared-bind@example.com", a);
    expect((await bind(b, "shared-bind@example.com", code)).body).toEqual({ success: false, message: WRONG });
    expect((await bind(a, "shared-bind@example.com", code)).body.success).toBe(true);
  });

  test("a wrong code or another address is refused", async () => {
    const u = await ctx.user(1);
    const code = await mailedCode("right@example.com", u);
    const wrong = code === "123456" ? "654321" : "123456";
    expect((await bind(u, "right@example.com", wrong)).body).toEqual({ success: false, message: WRONG });
    expect((await bind(u, "other@example.com", code)).body).toEqual({ success: false, message: WRONG });
    expect(await emailOf(u)).toBe("");
  });

  test("email and code are both required", async () => {
    const u = await ctx.user(1);
    const message = "invalid parameter: email and code are required";
    expect((await ctx.request("GET", "/api/oauth/email/bind?code=123456", { as: u })).body).toEqual({
      success: false,
      message,
    });
    expect((await ctx.request("GET", "/api/oauth/email/bind?email=a@example.com", { as: u })).body).toEqual({
      success: false,
      message,
    });
  });

  test("an address taken by someone else after the code was sent is refused", async () => {
    const u = await ctx.user(1);
    const code = await mailedCode("contested@example.com", u);
    await ctx.user(1, { email: "contested@example.com" });
    expect((await bind(u, "contested@example.com", code)).body).toEqual({
      success: false,
      message: "the email address is already taken",
    });
  });

  test("the site's email rules apply", async () => {
    const u = await ctx.user(1);
    const code = await mailedCode("ruled@example.com", u);
    await ctx.deps.options.set("EmailDomainWhitelist", "example.org");
    await ctx.deps.options.set("EmailDomainRestrictionEnabled", "true");
    try {
      const r = await bind(u, "ruled@example.com", code);
      expect(r.body.success).toBe(false);
      expect(r.body.message).toContain("whitelisted domains");
    } finally {
      await ctx.deps.options.set("EmailDomainRestrictionEnabled", "false");
    }
  });

  test("guests cannot bind", async () => {
    const r = await bind(null, "guest@example.com", "123456");
    expect(r.status).toBe(401);
  });

  test("binding shares the per-IP 'critical' rate limit", async () => {
    const limited = await testContext({ config: { rateLimitEnabled: true } });
    try {
      const u = await limited.user(1);
      for (let i = 0; i < LIMITS.critical.count - 1; i++) {
        expect(
          (await limited.request("GET", "/api/oauth/email/bind?email=a@example.com&code=1", { as: u })).status,
        ).toBe(400);
      }
      expect((await limited.request("GET", "/api/oauth/email/bind?email=a@example.com&code=1", { as: u })).status).toBe(
        429,
      );
    } finally {
      await limited.close();
    }
  });
});
