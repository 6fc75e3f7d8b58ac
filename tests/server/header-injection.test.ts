// No header lines of a user's choosing: line breaks (and other control characters) in addresses, subjects
// and names never reach a mail's header block or an SMTP command, and no route builds a Location or other
// response header from the request. (Webhook secrets: tests/server/webhook-guard.test.ts.)
import { describe, expect, test } from "bun:test";
import { buildMessage, sendMail, MailError } from "../../server/infra/mail.ts";
import { codeMail, resetMail } from "../../server/modules/verification/mails.ts";
import { withMailContext } from "../helpers/mail.ts";
import type { TestContext } from "../helpers/app.ts";
import type { SmtpReceiver } from "../mocks/smtp-server.ts";
import { unfold } from "../mocks/mime.ts";

let ctx: TestContext;
let smtp: SmtpReceiver;
withMailContext({}, (c, s) => {
  ctx = c;
  smtp = s;
});

/** The header block of a built message, one entry per header field (folded lines joined, RFC 5322 §2.2.3). */
const headerLines = (raw: string) => unfold(raw.slice(0, raw.indexOf("\r\n\r\n")));

describe("mail headers", () => {
  test("a subject with CR/LF stays one Subject line; no header is added", async () => {
    for (const subject of [
      "Hi\r\nBcc: victim@example.com",
      "Hi\nBcc: victim@example.com",
      "Hi\rBcc: victim@example.com",
      "Hi\u0000\u000bthere",
    ]) {
      const lines = headerLines(await buildMessage("noreply@example.com", { to: "a@example.com", subject, html: "x" }));
      expect(lines.filter((l) => /^bcc:/i.test(l))).toEqual([]);
      expect(lines.filter((l) => l.startsWith("Subject: "))).toHaveLength(1);
      expect(lines.every((l) => /^[A-Za-z-]+: /.test(l))).toBe(true);
    }
  });

  test("a recipient or sender with a line break or angle brackets is refused before anything is sent", async () => {
    for (const to of [
      "a@example.com\r\nBcc: victim@example.com",
      "a@example.com\nRCPT TO:<victim@example.com>",
      "x>\r\nDATA",
      "a@b.com\u0000",
      "a@example.com, victim@example.com",
      "a@example.com;victim@example.com",
      "Name <a@example.com>",
    ]) {
      await expect(buildMessage("noreply@example.com", { to, subject: "s", html: "x" })).rejects.toThrow(MailError);
    }
    await expect(
      buildMessage("noreply@example.com\r\nBcc: v@example.com", { to: "a@example.com", subject: "s", html: "x" }),
    ).rejects.toThrow(MailError);
    const before = smtp.mails.length;
    const settings = {
      host: smtp.host,
      port: smtp.port,
      secure: false,
      account: "",
      token: "",
      from: "noreply@example.com",
    };
    await expect(
      sendMail(settings, { to: "a@example.com\r\nBcc: v@example.com", subject: "s", html: "x" }),
    ).rejects.toThrow("invalid mail address");
    await expect(
      sendMail(
        { ...settings, from: "n@example.com>\r\nRCPT TO:<v@example.com" },
        { to: "a@example.com", subject: "s", html: "x" },
      ),
    ).rejects.toThrow("invalid mail address");
    await Bun.sleep(20);
    expect(smtp.mails.length).toBe(before);
  });

  test("a site name with line breaks (verification and reset mails) stays inside the one Subject line", async () => {
    await ctx.deps.options.set("SystemName", "Gate\r\nBcc: victim@example.com");
    for (const msg of [
      codeMail(ctx.deps, "a@example.com", "123456", 180),
      resetMail(ctx.deps, "a@example.com", "bob\r\nX: y", "https://gw.example.com/r?x=1", 600),
    ]) {
      const lines = headerLines(
        await buildMessage("noreply@example.com", msg, { fromName: ctx.deps.options.get("SystemName") }),
      );
      expect(lines.filter((l) => /^bcc:/i.test(l))).toEqual([]);
      expect(lines.find((l) => l.startsWith("Subject: "))).toContain("Gate Bcc: victim@example.com");
      // The site name is the sender's display name too: one From field, the address unchanged.
      expect(lines.filter((l) => l.startsWith("From: "))).toEqual([
        'From: "Gate Bcc: victim@example.com" <noreply@example.com>',
      ]);
    }
    await ctx.deps.options.set("SystemName", "Switchyard");
  });

  test("the verification route refuses an address with a line break (it never reaches SMTP)", async () => {
    const before = smtp.mails.length;
    for (const email of ["a@example.com\r\nBcc: victim@example.com", "a@example.com\nBcc: victim@example.com"]) {
      const r = await ctx.request("GET", `/api/verification?email=${encodeURIComponent(email)}`);
      expect(r.body.success).toBe(false);
      expect(r.body.message).toBe("invalid email address");
    }
    expect(smtp.mails.length).toBe(before);
  });

  test("notification addresses with line breaks are refused on save", async () => {
    const u = await ctx.user(1);
    const r = await ctx.request("PUT", "/api/user/setting", {
      as: u,
      body: { notify_type: "email", notification_email: "a@example.com\r\nBcc: v@example.com" },
    });
    expect(r.body.success).toBe(false);
  });
});

describe("response headers", () => {
  test("no path or query turns into a Location or an extra header", async () => {
    const paths = [
      "//evil.example/",
      "/\\evil.example/",
      "/%0d%0aSet-Cookie:%20pwned=1",
      "/login?redirect=https://evil.example/%0d%0aX-Injected:1",
      "/api/status?callback=%0d%0aX-Injected:1",
      "/oauth/github?code=x&redirect_uri=https://evil.example/",
    ];
    for (const path of paths) {
      const res = await ctx.app.handle(new Request("http://localhost" + path));
      expect(res.headers.get("location")).toBeNull();
      expect(res.headers.get("x-injected")).toBeNull();
      expect(res.headers.getSetCookie().some((c) => c.includes("pwned"))).toBe(false);
      expect(res.status < 300 || res.status >= 400).toBe(true);
    }
  });
});
