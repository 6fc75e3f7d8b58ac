// User notifications: quota warnings after a charge, and messages to the super admin (channel automation).
// Delivery is by the user's setting: email (SMTP) or an https webhook with a JSON body
// {type, title, content, values, timestamp} and the user's secret as a Bearer token. Content carries
// {{value}} placeholders filled from values, in order, so a receiver can format numbers itself.
import type { AppDeps } from "../deps.ts";
import { QUOTA_WARNING_INTERVAL_SECONDS, ROLE, formatQuota } from "../catalogue/index.ts";
import { parseSetting, type UserSetting } from "../modules/user/view.ts";
import { sendSiteMail } from "./mail.ts";
import { fetchOutbound, fetchPolicy } from "./outbound.ts";

export interface Notification {
  type: string;
  title: string;
  content: string;
  values: (string | number)[];
}

export type NotifyResult = "sent" | "above-threshold" | "throttled" | "no-recipient" | "no-user";

/** Only https targets, except loopback http when the (test-only) config flag allows it. */
export function webhookAllowed(deps: AppDeps, raw: string): URL | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol === "https:") return url;
  if (
    url.protocol === "http:"
    && deps.config.allowLoopbackWebhooks
    && (url.hostname === "127.0.0.1" || url.hostname === "localhost")
  )
    return url;
  return null;
}

const fill = (content: string, values: (string | number)[]) => {
  let i = 0;
  return content.replace(/\{\{value\}\}/g, () => String(values[i++] ?? ""));
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Delivers one notification to one user by their setting; throws when delivery fails. */
export async function deliver(
  deps: AppDeps,
  user: { email: string; setting: string },
  n: Notification,
): Promise<"sent" | "no-recipient"> {
  const s: UserSetting = parseSetting(user.setting);
  if (s.notify_type === "webhook") {
    const url = s.webhook_url ? webhookAllowed(deps, s.webhook_url) : null;
    if (!url) return "no-recipient";
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (s.webhook_secret) {
      // Settings saved before the rule (or written straight into the database) must not add header lines.
      if (/[\x00-\x1f\x7f]/.test(s.webhook_secret)) throw new Error("the webhook secret holds control characters");
      headers.authorization = `Bearer ${s.webhook_secret}`;
    }
    // The address is the user's: the outbound guard checks it (fetch_setting.*); a redirect is not followed.
    const res = await fetchOutbound(url.href, {
      method: "POST",
      headers,
      maxRedirects: 0,
      timeoutMs: 10_000,
      maxBytes: 64 * 1024,
      policy: fetchPolicy(deps.options),
      body: JSON.stringify({
        type: n.type,
        title: n.title,
        content: n.content,
        values: n.values,
        timestamp: Math.floor(Date.now() / 1000),
      }),
    });
    if (res.status < 200 || res.status > 299) throw new Error(`webhook answered ${res.status}`);
    return "sent";
  }
  const to = (s.notification_email || user.email || "").trim();
  if (!to) return "no-recipient";
  const body = escapeHtml(fill(n.content, n.values)).replace(/\n/g, "<br>");
  await sendSiteMail(deps, { to, subject: `${deps.options.get("SystemName")}: ${n.title}`, html: `<p>${body}</p>` });
  return "sent";
}

/** The quota below which a user is warned: their own quota_warning_threshold, else QuotaRemindThreshold. */
export function quotaThreshold(deps: AppDeps, setting: string | null | undefined): number {
  const s = parseSetting(setting);
  return typeof s.quota_warning_threshold === "number" && s.quota_warning_threshold > 0
    ? s.quota_warning_threshold
    : deps.options.number("QuotaRemindThreshold", 0);
}

/** The awaited form of maybeNotifyQuota, for callers and tests that need the outcome. */
export async function checkQuota(deps: AppDeps, userId: number, remainingQuota: number): Promise<NotifyResult> {
  const user = await deps.db
    .selectFrom("users")
    .select(["id", "email", "setting"])
    .where("id", "=", userId)
    .executeTakeFirst();
  if (!user) return "no-user";
  const threshold = quotaThreshold(deps, user.setting);
  if (remainingQuota >= threshold) return "above-threshold";
  // At most one warning per user per interval, across instances when the cache is Redis.
  const first = await deps.cache.setNx(`notify:quota:${userId}`, "1", QUOTA_WARNING_INTERVAL_SECONDS);
  if (!first) return "throttled";
  const inCurrency = deps.options.bool("DisplayInCurrencyEnabled");
  const n: Notification = {
    type: "quota_exceed",
    title: "Your quota is running low",
    content:
      "Your remaining quota is {{value}}, below your warning threshold of {{value}}. Please top up in time to keep your service running.",
    values: [formatQuota(remainingQuota, inCurrency), formatQuota(threshold, inCurrency)],
  };
  return deliver(deps, user, n);
}

/**
 * For the relay after a charge settles: warns the user when the remaining quota fell below their
 * threshold. Fire-and-forget: it never blocks or fails the caller; delivery errors are logged. A caller
 * that has the user's setting at hand passes it, so a call above the threshold (nearly all) costs no I/O.
 */
export function maybeNotifyQuota(deps: AppDeps, userId: number, remainingQuota: number, setting?: string | null): void {
  if (setting !== undefined && remainingQuota >= quotaThreshold(deps, setting)) return;
  queueMicrotask(() => {
    checkQuota(deps, userId, remainingQuota).catch((e) =>
      console.error(`quota notification for user ${userId} failed:`, e?.message ?? e),
    );
  });
}

/** Awaited form of notifyRoot: delivers to the super admin by the super admin's own notify setting. */
export async function sendToRoot(
  deps: AppDeps,
  msg: { title: string; content: string; values?: (string | number)[] },
): Promise<"sent" | "no-recipient" | "no-user"> {
  const root = await deps.db
    .selectFrom("users")
    .select(["email", "setting"])
    .where("role", ">=", ROLE.root)
    .where("deleted_at", "is", null)
    .orderBy("id")
    .limit(1)
    .executeTakeFirst();
  if (!root) return "no-user";
  return deliver(deps, root, { type: "system", title: msg.title, content: msg.content, values: msg.values ?? [] });
}

/** For channel automation (auto-disable/enable): tells the super admin. Fire-and-forget. */
export function notifyRoot(deps: AppDeps, msg: { title: string; content: string; values?: (string | number)[] }): void {
  queueMicrotask(() => {
    sendToRoot(deps, msg).catch((e) => console.error("notification to the super admin failed:", e?.message ?? e));
  });
}
