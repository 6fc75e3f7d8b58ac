import type { User } from "../../../db/schema.ts";
import { timeMillis } from "../../../db/datetime.ts";

/** Text columns new-api (and its console) treat as strings: a database where they are NULL (columns added by a
 * later migration) still answers "" for them, never null. Number columns answer 0. */
const TEXT_FIELDS = [
  "username",
  "display_name",
  "email",
  "github_id",
  "oidc_id",
  "wechat_id",
  "telegram_id",
  "linux_do_id",
  "discord_id",
  "group",
  "aff_code",
  "setting",
  "remark",
  "stripe_customer",
] as const;
const NUMBER_FIELDS = [
  "id",
  "role",
  "status",
  "quota",
  "used_quota",
  "request_count",
  "aff_count",
  "aff_quota",
  "inviter_id",
  "created_time",
  "created_at",
  "last_login_at",
] as const;

/** The user record as clients see it: never the password hash, the access token or the session version. */
export function publicUser(u: User) {
  const { password: _p, access_token: _a, session_version: _s, deleted_at, aff_history, ...rest } = u;
  const out: Record<string, unknown> = { ...rest };
  for (const k of TEXT_FIELDS)
    if (k in out || k === "aff_code") out[k] = out[k] === null || out[k] === undefined ? "" : String(out[k]);
  for (const k of NUMBER_FIELDS) if (k in out) out[k] = Number(out[k] ?? 0) || 0;
  // gorm.DeletedAt: null, or an RFC 3339 time (a Date from PostgreSQL and MySQL, text from SQLite)
  const deletedMs = timeMillis(deleted_at);
  return {
    ...(out as typeof rest),
    aff_history_quota: Number(aff_history ?? 0) || 0,
    DeletedAt: deletedMs === null ? null : new Date(deletedMs).toISOString(),
  };
}
export type PublicUser = ReturnType<typeof publicUser>;

export interface UserSetting {
  notify_type?: "email" | "webhook";
  quota_warning_threshold?: number;
  webhook_url?: string;
  webhook_secret?: string;
  notification_email?: string;
  accept_unset_model_ratio_model?: boolean;
  /** new-api's: the client's address goes into this user's consume and error logs */
  record_ip_log?: boolean;
}

export function parseSetting(raw: string | null | undefined): UserSetting {
  if (!raw) return {};
  try {
    const v = JSON.parse(raw);
    return v && typeof v === "object" ? v : {};
  } catch {
    return {};
  }
}
