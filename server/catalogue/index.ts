// The spec's constants, in one place. Imported by the server and by the console, so nothing here may
// touch Node/Bun APIs.

/** One dollar of balance, in quota units (spec 000 §1). Never changes. */
export const QUOTA_PER_UNIT = 500_000;

export const ROLE = { guest: 0, common: 1, admin: 10, root: 100 } as const;
export type Role = (typeof ROLE)[keyof typeof ROLE];

export const USER_STATUS = { enabled: 1, disabled: 2, unenablable: 3 } as const;
export const TOKEN_STATUS = { enabled: 1, disabled: 2, expired: 3, exhausted: 4 } as const;
export const CHANNEL_STATUS = { enabled: 1, manuallyDisabled: 2, autoDisabled: 3 } as const;
export const REDEMPTION_STATUS = { unused: 1, disabled: 2, used: 3 } as const;
export const LOG_TYPE = { unknown: 0, topup: 1, consume: 2, manage: 3, system: 4, error: 5 } as const;
export const TOPUP_STATUS = { pending: "pending", success: "success", expired: "expired" } as const;

/** Redemption codes (spec 001 §5): name 1–20 characters, 1–100 codes per batch, 32-character keys. */
export const REDEMPTION_NAME_MAX_LENGTH = 20;
export const REDEMPTION_MAX_BATCH = 100;
export const REDEMPTION_KEY_LENGTH = 32;
/** Tokens one create call may make (count). */
export const TOKEN_BATCH_MAX = 100;
/** Online payment methods offered by the wallet (Epay names: zfb = Alipay, wx = WeChat Pay). */
export const PAYMENT_METHODS = ["zfb", "wx"] as const;
/** Request and token rates on the log page count the last 60 seconds (one-api's rpm/tpm). */
export const LOG_RATE_WINDOW_SECONDS = 60;
/** Dashboard buckets (DataExportDefaultTime) and the longest range a user may ask for about themself. */
export const DASHBOARD_GRANULARITIES = ["hour", "day", "week"] as const;
export type DashboardGranularity = (typeof DASHBOARD_GRANULARITIES)[number];
export const DASHBOARD_SELF_MAX_SPAN_SECONDS = 31 * 24 * 3600;

export const DEFAULT_GROUP = "default";
export const DEFAULT_PAGE_SIZE = 10;
export const PAGE_SIZE_OPTIONS = [10, 20, 50, 100] as const;
export const MAX_PAGE_SIZE = 100;

/** Token keys: "sk-" + 48 characters; stored without the prefix (one-api/new-api layout). */
export const TOKEN_KEY_LENGTH = 48;
export const TOKEN_KEY_PREFIX = "sk-";

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 20;
export const USERNAME_MAX_LENGTH = 12;
export const DEFAULT_ROOT_USERNAME = "root";
export const DEFAULT_ROOT_PASSWORD = "123456";
/** Mailed verification codes (spec 000 §5) and the wait before another mail to the same address (§4, §9). */
export const VERIFICATION_CODE_TTL_SECONDS = 3 * 60;
export const EMAIL_RESEND_SECONDS = 30;

export const QUOTA_PRESETS = [500_000, 5_000_000, 25_000_000, 50_000_000, 250_000_000, 500_000_000] as const;
export const QUOTA_WARNING_THRESHOLD_DEFAULT = 500_000;
export const QUOTA_WARNING_INTERVAL_SECONDS = 2 * 60 * 60;

export const MOBILE_WIDTH = 600;
export const SIDEBAR_WIDTH = { collapsed: 60, expanded: 200 } as const;

export {
  CHANNEL_TYPES,
  RESPONSES_API_SETTINGS,
  RESPONSES_CAPABLE_KINDS,
  channelType,
  servesNatively,
  type ChannelForm,
  type ChannelFormField,
  type ChannelKind,
  type ChannelTypeInfo,
} from "./channel-types.ts";
export {
  FORWARDED_HEADERS,
  KIND_WIRE_FORMATS,
  NEVER_FORWARDED,
  forwardHeaderNames,
  type WireFormat,
} from "./forwarded-headers.ts";

/** Formats quota for people: dollars when display_in_currency is on, raw units otherwise. */
export function formatQuota(quota: number, inCurrency = true, digits = 2): string {
  if (!inCurrency) return String(quota);
  return "$" + (quota / QUOTA_PER_UNIT).toFixed(digits);
}
