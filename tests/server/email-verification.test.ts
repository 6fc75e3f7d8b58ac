// GET /api/verification: a six-digit code mailed through the site's SMTP settings (spec 000 §2.4, §5, §7.2).
import { afterEach, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { withMailContext } from "../helpers/mail.ts";
import { codeIn, type SmtpReceiver } from "../mocks/smtp-server.ts";
import { LIMITS } from "../../server/http/ratelimit.ts";

let ctx: TestContext;
let smtp: SmtpReceiver;
withMailContext({ SystemName: "Gate & Co" }, (c, s) => {
  ctx = c;
  smtp = s;
});
afterEach(async () => {
  for (const k of ["EmailDomainRestrictionEnabled", "EmailAliasRestrictionEnabled"])
    await ctx.deps.options.set(k, "false");
});

const send = (email: string) => ctx.request("GET", `/api/verification?email=${encodeURIComponent(email)}`);

describe("sending a verification code", () => {
  test("mails six digits to the address, naming the site and the 3-minute validity", async () => {
    const before = smtp.mails.length;
    const r = await send("new.person@example.com");
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const mail = await smtp.waitFor(before + 1);
    expect(mail.to).toBe("new.person@example.com");
    expect(mail.from).toBe("noreply@gateway.test");
    expect(mail.subject).toContain("Gate & Co");
    expect(mail.text).toContain("3 minutes");
    expect(mail.html).toContain("Gate &#38; Co");
    expect(codeIn(mail)).toMatch(/^\d{6}$/);
  });

  test("the address is trimmed and lower-cased", async () => {
    const before = smtp.mails.length;
    expect((await send("  Mixed.Case@Example.COM ")).body.success).toBe(true);
    expect((await smtp.waitFor(before + 1)).to).toBe("mixed.case@example.com");
  });

  test("a malformed or missing address is refused and nothing is mailed", async () => {
    const before = smtp.mails.length;
    for (const email of ["", "not-an-address", "a@b", "two@@example.com x"]) {
      const r = await send(email);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ success: false, message: "invalid email address" });
    }
    const none = await ctx.request("GET", "/api/verification");
    expect(none.body).toEqual({ success: false, message: "invalid email address" });
    expect(smtp.mails.length).toBe(before);
  });

  test("with the domain whitelist on, other domains are refused", async () => {
    await ctx.deps.options.set("EmailDomainWhitelist", "example.com,corp.example.org");
    await ctx.deps.options.set("EmailDomainRestrictionEnabled", "true");
    const before = smtp.mails.length;
    const r = await send("someone@elsewhere.net");
    expect(r.body).toEqual({
      success: false,
      message:
        "the administrator only allows email addresses of whitelisted domains, and this domain is not on the list",
    });
    // A sub-domain of a listed domain is a different domain.
    expect((await send("someone@sub.example.com")).body.success).toBe(false);
    expect(smtp.mails.length).toBe(before);
    expect((await send("listed@corp.example.org")).body.success).toBe(true);
    expect((await smtp.waitFor(before + 1)).to).toBe("listed@corp.example.org");
  });

  test("with the alias restriction on, '+' addresses and dotted Gmail addresses are refused", async () => {
    await ctx.deps.options.set("EmailAliasRestrictionEnabled", "true");
    const before = smtp.mails.length;
    const message = "the administrator does not allow email aliases (a '+' in the address, or dots in a Gmail address)";
    expect((await send("jo+shop@example.com")).body).toEqual({ success: false, message });
    expect((await send("j.o.e@gmail.com")).body).toEqual({ success: false, message });
    expect(smtp.mails.length).toBe(before);
    expect((await send("first.last@example.com")).body.success).toBe(true);
    await ctx.deps.options.set("EmailAliasRestrictionEnabled", "false");
    expect((await send("jo+shop@example.com")).body.success).toBe(true);
  });

  test("an address a live account already has is refused, in any letter case; a deleted account's is free", async () => {
    await ctx.user(1, { email: "Taken@Example.com" });
    const before = smtp.mails.length;
    const r = await send("taken@example.com");
    expect(r.body).toEqual({ success: false, message: "the email address is already taken" });
    expect(smtp.mails.length).toBe(before);
    await ctx.deps.db
      .insertInto("users")
      .values({
        username: "gone",
        password: "",
        display_name: "gone",
        role: 1,
        status: 1,
        group: "default",
        aff_code: "affgone",
        created_time: 0,
        setting: "",
        email: "gone@example.com",
        deleted_at: "2026-01-01 00:00:00",
      } as any)
      .execute();
    expect((await send("gone@example.com")).body.success).toBe(true);
  });

  test("a second mail to the same address within 30 seconds is refused", async () => {
    expect((await send("twice@example.com")).body.success).toBe(true);
    const before = smtp.mails.length;
    const again = await send("twice@example.com");
    expect(again.status).toBe(429);
    expect(again.body).toEqual({
      success: false,
      message: "an email was just sent to this address; please wait 30 seconds before asking for another",
    });
    expect(smtp.mails.length).toBe(before);
  });

  test("without SMTP settings the answer says so, and nothing is stored", async () => {
    const server = ctx.deps.options.get("SMTPServer");
    await ctx.deps.options.set("SMTPServer", "");
    try {
      const r = await send("nosmtp@example.com");
      expect(r.status).toBe(503);
      expect(r.body).toEqual({
        success: false,
        message: "email is not available: the administrator has not configured an SMTP server",
      });
    } finally {
      await ctx.deps.options.set("SMTPServer", server);
    }
    // The refused call started no 30-second wait.
    expect((await send("nosmtp@example.com")).body.success).toBe(true);
  });

  test("a mail the SMTP server refuses is reported without its details, and the address may ask again at once", async () => {
    smtp.refuseNextRecipient();
    const errors: unknown[] = [];
    const log = console.error;
    console.error = (...a: unknown[]) => void errors.push(a);
    let r;
    try {
      r = await send("bounce@example.com");
    } finally {
      console.error = log;
    }
    expect(r.status).toBe(502);
    expect(r.body).toEqual({
      success: false,
      message: "the email could not be sent, please try again later or contact the administrator",
    });
    expect(JSON.stringify(errors)).toContain("550");
    const before = smtp.mails.length;
    expect((await send("bounce@example.com")).body.success).toBe(true);
    expect((await smtp.waitFor(before + 1)).to).toBe("bounce@example.com");
  });
});

describe("rate limit", () => {
  test("verification mails share the per-IP 'critical' bucket of login and register", async () => {
    const limited = await testContext({ config: { rateLimitEnabled: true } });
    try {
      for (let i = 0; i < LIMITS.critical.count; i++) {
        const r = await limited.request("GET", "/api/verification?email=bad");
        expect(r.status).toBe(400);
      }
      const r = await limited.request("GET", "/api/verification?email=bad");
      expect(r.status).toBe(429);
      expect(r.body.success).toBe(false);
    } finally {
      await limited.close();
    }
  });
});
