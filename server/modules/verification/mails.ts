// The texts of the verification and password-reset mails, and sending them with a caller-safe error.
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { escapeHtml, sendMail, smtpSettings, type MailMessage } from "../../infra/mail.ts";

export const MAIL_MSG = {
  noSmtp: "email is not available: the administrator has not configured an SMTP server",
  sendFailed: "the email could not be sent, please try again later or contact the administrator",
} as const;

const siteName = (deps: AppDeps) => escapeHtml(deps.options.get("SystemName") || "Switchyard");
const minutes = (seconds: number) => `${Math.round(seconds / 60)} minutes`;

/** Throws a 503 that says why, before any code is made, when the site has no SMTP server. */
export function assertMailConfigured(deps: AppDeps): void {
  if (!smtpSettings(deps)) throw new AppError(503, MAIL_MSG.noSmtp);
}

export function codeMail(deps: AppDeps, to: string, code: string, ttlSeconds: number): MailMessage {
  const name = siteName(deps);
  return {
    to,
    subject: `${deps.options.get("SystemName") || "Switchyard"} email verification`,
    html:
      `<p>Hello,</p><p>You are verifying this email address for ${name}. Your verification code is:</p>`
      + `<p style="font-size:24px;font-weight:bold;letter-spacing:4px">${code}</p>`
      + `<p>The code is valid for ${minutes(ttlSeconds)}. If you did not ask for it, ignore this email.</p>`,
  };
}

export function resetMail(deps: AppDeps, to: string, userName: string, link: string, ttlSeconds: number): MailMessage {
  const name = siteName(deps);
  const href = escapeHtml(link);
  return {
    to,
    subject: `${deps.options.get("SystemName") || "Switchyard"} password reset`,
    html:
      `<p>Hello ${escapeHtml(userName)},</p><p>Someone asked to reset the password of your ${name} account.</p>`
      + `<p><a href="${href}">Reset the password</a></p>`
      + `<p>If the link does not open, copy this address into your browser: ${href}</p>`
      + `<p>The link is valid for ${minutes(ttlSeconds)} and works once. If you did not ask for a reset, ignore this email; `
      + `your password stays as it is.</p>`,
  };
}

/** Sends; an SMTP failure is logged in full for the operator and reported to the caller without details. */
export async function deliver(deps: AppDeps, msg: MailMessage): Promise<void> {
  const settings = smtpSettings(deps);
  if (!settings) throw new AppError(503, MAIL_MSG.noSmtp);
  try {
    await sendMail(settings, msg);
  } catch (e) {
    console.error(`mail to ${msg.to} failed:`, (e as Error)?.message ?? e);
    throw new AppError(502, MAIL_MSG.sendFailed);
  }
}
