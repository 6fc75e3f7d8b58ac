// Mail in the site's languages: subjects and the sender's name (the site name, as one-api sends it) in
// Chinese and Russian reach the reader intact. The test receiver decodes the RFC 2047 words and the body
// as a mail client would (tests/mocks/mime.ts), independently of how nodemailer chose to encode them.
import { describe, expect, test } from "bun:test";
import { withMailContext } from "../helpers/mail.ts";
import { codeIn, type SmtpReceiver } from "../mocks/smtp-server.ts";
import { sendSiteMail } from "../../server/infra/mail.ts";
import type { TestContext } from "../helpers/app.ts";

let ctx: TestContext;
let smtp: SmtpReceiver;
withMailContext({}, (c, s) => {
  ctx = c;
  smtp = s;
});

/** Sends through the site's settings and returns the mail as received. */
async function roundTrip(subject: string, html = "<p>hi</p>") {
  const before = smtp.mails.length;
  await sendSiteMail(ctx.deps, { to: "reader@example.com", subject, html });
  return smtp.waitFor(before + 1);
}

describe("non-ASCII subjects and sender names", () => {
  test("Chinese: the verification mail's subject and sender name", async () => {
    await ctx.deps.options.set("SystemName", "交换站");
    const before = smtp.mails.length;
    const r = await ctx.request("GET", `/api/verification?email=${encodeURIComponent("zh@example.com")}`);
    expect(r.body.success).toBe(true);
    const mail = await smtp.waitFor(before + 1);
    expect(mail.subject).toBe("交换站 email verification");
    expect(mail.fromName).toBe("交换站");
    expect(mail.from).toBe("noreply@gateway.test");
    expect(mail.text).toContain("交换站");
    expect(codeIn(mail)).toMatch(/^\d{6}$/);
  });

  test("Russian: subject, sender name and body", async () => {
    await ctx.deps.options.set("SystemName", "Стрелочник");
    const mail = await roundTrip("Ваша квота заканчивается", "<p>Осталось $0.50</p>");
    expect(mail.subject).toBe("Ваша квота заканчивается");
    expect(mail.fromName).toBe("Стрелочник");
    expect(mail.html).toBe("<p>Осталось $0.50</p>");
  });

  test("a long mixed subject, folded over several encoded words, arrives whole", async () => {
    await ctx.deps.options.set("SystemName", "交换站 · Стрелочник");
    const subject =
      "额度提醒：您的余额即将用尽 — Напоминание: ваша квота почти исчерпана, пополните баланс — Quota reminder";
    const mail = await roundTrip(subject);
    expect(mail.subject).toBe(subject);
    expect(mail.fromName).toBe("交换站 · Стрелочник");
  });

  test("a site name with quotes, brackets or line breaks stays the display name of one From field", async () => {
    await ctx.deps.options.set("SystemName", 'Gate "X" <evil@example.com>\r\nBcc: victim@example.com');
    const mail = await roundTrip("hello");
    expect(mail.from).toBe("noreply@gateway.test");
    expect(mail.fromName).toBe('Gate "X" <evil@example.com> Bcc: victim@example.com');
    expect(mail.to).toBe("reader@example.com");
    await ctx.deps.options.set("SystemName", "Switchyard");
  });
});
