// The browser's local storage keys of spec 000 §3.3, read and written in one place so no screen
// spells a key differently from another.

export const KEYS = {
  user: "user",
  status: "status",
  themeMode: "theme-mode",
  defaultCollapseSidebar: "default_collapse_sidebar",
  chats: "chats",
  enableDataExport: "enable_data_export",
  enableDrawing: "enable_drawing",
  enableTask: "enable_task",
  footerHtml: "footer_html",
  mjNotifyEnabled: "mj_notify_enabled",
  language: "i18nextLng",
  pageSize: "page-size",
  affCode: "aff",
  models: "models",
} as const;

export interface StoredUser {
  id: number;
  username: string;
  display_name?: string;
  role: number;
  status?: number;
  group?: string;
  quota?: number;
  [k: string]: unknown;
}

function safeStorage(): Storage | null {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    return null;
  }
}

export function readString(key: string): string | null {
  return safeStorage()?.getItem(key) ?? null;
}

export function writeString(key: string, value: string | null): void {
  const s = safeStorage();
  if (!s) return;
  if (value === null) s.removeItem(key);
  else s.setItem(key, value);
}

export function readJson<T>(key: string, fallback: T): T {
  const raw = readString(key);
  if (raw === null || raw === "") return fallback;
  try {
    return JSON.parse(raw) as T;
  } catch {
    return fallback;
  }
}

export function writeJson(key: string, value: unknown): void {
  writeString(key, JSON.stringify(value));
}

export const readBool = (key: string, fallback = false): boolean => {
  const raw = readString(key);
  return raw === null ? fallback : raw === "true";
};

export const getStoredUser = (): StoredUser | null => {
  const u = readJson<StoredUser | null>(KEYS.user, null);
  return u && typeof u.id === "number" ? u : null;
};
export const setStoredUser = (u: StoredUser | null) => (u ? writeJson(KEYS.user, u) : writeString(KEYS.user, null));

/** Page sizes are remembered per table: "page-size" for the user list, "page-size:<table>" for others. */
export function getPageSize(table = "", fallback = 10): number {
  const n = Number(readString(table ? `${KEYS.pageSize}:${table}` : KEYS.pageSize));
  return Number.isInteger(n) && n > 0 ? n : fallback;
}
export function setPageSize(size: number, table = ""): void {
  writeString(table ? `${KEYS.pageSize}:${table}` : KEYS.pageSize, String(size));
}

export interface SiteStatus {
  system_name?: string;
  logo?: string;
  footer_html?: string;
  quota_per_unit?: number;
  display_in_currency?: boolean;
  /** new-api's quota display: USD, CNY (at usd_exchange_rate), TOKENS or CUSTOM (symbol and rate below) */
  quota_display_type?: string;
  usd_exchange_rate?: number;
  custom_currency_symbol?: string;
  custom_currency_exchange_rate?: number;
  /** the dashboard's panels (console_setting.*); each list is present only while its panel is on */
  api_info_enabled?: boolean;
  announcements_enabled?: boolean;
  faq_enabled?: boolean;
  uptime_kuma_enabled?: boolean;
  api_info?: Array<{ url?: string; route?: string; description?: string; color?: string }>;
  announcements?: Array<{ content?: string; publishDate?: string; type?: string; extra?: string }>;
  faq?: Array<{ question?: string; answer?: string }>;
  enable_drawing?: boolean;
  enable_task?: boolean;
  enable_data_export?: boolean;
  chats?: Array<Record<string, string>>;
  data_export_default_time?: string;
  default_collapse_sidebar?: boolean;
  mj_notify_enabled?: boolean;
  docs_link?: string;
  version?: string;
  start_time?: number;
  turnstile_check?: boolean;
  turnstile_site_key?: string;
  email_verification?: boolean;
  github_oauth?: boolean;
  github_client_id?: string;
  oidc_enabled?: boolean;
  oidc_client_id?: string;
  oidc_authorization_endpoint?: string;
  wechat_login?: boolean;
  wechat_qrcode?: string;
  telegram_oauth?: boolean;
  telegram_bot_name?: string;
  linuxdo_oauth?: boolean;
  linuxdo_client_id?: string;
  self_use_mode_enabled?: boolean;
  demo_site_enabled?: boolean;
  register_enabled?: boolean;
  password_login_enabled?: boolean;
  password_register_enabled?: boolean;
  top_up_link?: string;
  server_address?: string;
  /** Setup flags (from GET /api/status or GET /api/setup). */
  setup?: boolean;
  root_init?: boolean;
  database_type?: string;
  [k: string]: unknown;
}

export const getStoredStatus = (): SiteStatus => readJson<SiteStatus>(KEYS.status, {});

/** Stores the status object and the derived flags other screens read without waiting for it. */
export function storeStatus(s: SiteStatus): void {
  writeJson(KEYS.status, s);
  writeString(KEYS.defaultCollapseSidebar, String(!!s.default_collapse_sidebar));
  writeJson(KEYS.chats, Array.isArray(s.chats) ? s.chats : []);
  writeString(KEYS.enableDataExport, String(!!s.enable_data_export));
  writeString(KEYS.enableDrawing, String(!!s.enable_drawing));
  writeString(KEYS.enableTask, String(!!s.enable_task));
  writeString(KEYS.footerHtml, s.footer_html ?? "");
  writeString(KEYS.mjNotifyEnabled, String(!!s.mj_notify_enabled));
}
