import type { User } from "../../../db/schema.ts";

/** The user record as clients see it: never the password hash, the access token or the session version. */
export function publicUser(u: User) {
  const { password: _p, access_token: _a, session_version: _s, deleted_at, aff_history, ...rest } = u;
  return { ...rest, aff_history_quota: aff_history, DeletedAt: deleted_at ?? null };
}
export type PublicUser = ReturnType<typeof publicUser>;

export interface UserSetting {
  notify_type?: "email" | "webhook";
  quota_warning_threshold?: number;
  webhook_url?: string;
  webhook_secret?: string;
  notification_email?: string;
  accept_unset_model_ratio_model?: boolean;
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
