// Validation of the personal settings forms (spec 000 §5), as i18n keys per field.
import { EMAIL_RE } from "../register/index.tsx";

export interface PasswordForm {
  original: string;
  password: string;
  confirm: string;
}

export function validatePasswordChange(f: PasswordForm): Partial<Record<keyof PasswordForm, string>> {
  const e: Partial<Record<keyof PasswordForm, string>> = {};
  if (!f.original) e.original = "personal.originalRequired";
  if (!f.password) e.password = "personal.newRequired";
  else if (f.password === f.original) e.password = "personal.newSameAsOld";
  if (f.confirm !== f.password) e.confirm = "personal.confirmMismatch";
  return e;
}

export const deletionConfirmed = (typed: string, username: string) => typed === username && username !== "";

/** Transfers must be at least one quota unit (quota_per_unit). */
export function validateTransfer(amount: number | undefined, quotaPerUnit: number): string | null {
  if (amount === undefined || !Number.isInteger(amount) || amount < quotaPerUnit) return "personal.transferMinimum";
  return null;
}

export interface NotifyForm {
  notify_type: "email" | "webhook";
  webhook_url: string;
  webhook_secret: string;
  notification_email: string;
  quota_warning_threshold: number;
}

export function validateNotify(f: NotifyForm): Partial<Record<keyof NotifyForm, string>> {
  const e: Partial<Record<keyof NotifyForm, string>> = {};
  if (f.notify_type === "webhook" && !/^https:\/\/\S+$/.test(f.webhook_url.trim()))
    e.webhook_url = "personal.webhookHttps";
  if (f.notify_type === "email" && f.notification_email.trim() && !EMAIL_RE.test(f.notification_email.trim()))
    e.notification_email = "register.emailInvalid";
  if (!Number.isFinite(f.quota_warning_threshold) || f.quota_warning_threshold < 0)
    e.quota_warning_threshold = "common.enterNumber";
  return e;
}

export function validateEmailBind(email: string, code: string): Partial<Record<"email" | "code", string>> {
  const e: Partial<Record<"email" | "code", string>> = {};
  if (!email.trim()) e.email = "personal.emailRequired";
  else if (!EMAIL_RE.test(email.trim())) e.email = "register.emailInvalid";
  if (!code.trim()) e.code = "personal.codeRequired";
  return e;
}
