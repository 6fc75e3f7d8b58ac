// Option keys new-api's console saves that Switchyard's own defaults table did not know: their defaults (new-api's),
// how each value is checked, which ones are secrets, and which ones Switchyard stores without acting on them
// (features it does not have: Stripe, Creem, Waffo, Discord sign-in, ...). Stored values keep new-api's text
// form, so a database moves between the two servers unchanged. The features behind the other keys live in
// their modules (docs/migrating-from-new-api.md).
import { badRequest } from "../../http/errors.ts";
import { BIGINT_COLUMN, numberMessage, within } from "../../http/numbers.ts";
import { PANEL_OPTION_DEFAULTS, validatePanelOption } from "../panels/validate.ts";
import { validateStatusCodes } from "../channel/status-codes.ts";
import { AFFINITY_DEFAULTS, AFFINITY_OPTIONS, affinityRulesProblem } from "../../catalogue/channel-affinity.ts";

type Kind =
  | "bool"
  | "int"
  | "number"
  | "positive"
  | "text"
  | "url"
  | "ratios"
  | "group-ratios"
  | "group-list"
  | "json-object"
  | "json-array"
  | "status-codes"
  | "panel"
  | "display-type"
  | "affinity-rules"
  | "theme";

interface Spec {
  default: string;
  kind: Kind;
  /** never sent back by GET /api/option/ */
  secret?: boolean;
  /** accepted and saved so new-api's console works, but nothing in Switchyard reads it */
  stored?: true;
  min?: number;
}

/** The width of options.key (db/migrations/tables.ts). */
const OPTION_KEY_MAX = 128;

export const COMPLIANCE_DEFAULTS: Record<string, string> = {
  "payment_setting.compliance_confirmed": "false",
  "payment_setting.compliance_terms_version": "",
  "payment_setting.compliance_confirmed_at": "0",
  "payment_setting.compliance_confirmed_by": "0",
  "payment_setting.compliance_confirmed_ip": "",
};
export const isComplianceOption = (key: string) => key.startsWith("payment_setting.compliance_");

const s = (def: string, kind: Kind, extra: Omit<Spec, "default" | "kind"> = {}): Spec => ({
  default: def,
  kind,
  ...extra,
});
const stored = { stored: true } as const;
const secret = { secret: true, stored: true } as const;

export const QUOTA_DISPLAY_TYPES = ["USD", "CNY", "TOKENS", "CUSTOM"] as const;
export type QuotaDisplayType = (typeof QUOTA_DISPLAY_TYPES)[number];

export const NEW_API_OPTIONS: Record<string, Spec> = {
  // quota display (status: quota_display_type, custom currency; the console formats every amount with it)
  "general_setting.quota_display_type": s("USD", "display-type"),
  "general_setting.custom_currency_symbol": s("¤", "text"),
  "general_setting.custom_currency_exchange_rate": s("1", "positive"),
  USDExchangeRate: s("7.3", "positive"),
  "general_setting.log_filter_autocomplete_enabled": s("true", "bool", stored),
  // the dashboard's panels (server/modules/panels)
  ...Object.fromEntries(Object.entries(PANEL_OPTION_DEFAULTS).map(([k, v]) => [k, s(v, "panel")])),
  // channel affinity: a conversation stays on the channel holding its prompt cache (server/relay/affinity.ts)
  [AFFINITY_OPTIONS.enabled]: s(AFFINITY_DEFAULTS[AFFINITY_OPTIONS.enabled]!, "bool"),
  [AFFINITY_OPTIONS.switchOnSuccess]: s(AFFINITY_DEFAULTS[AFFINITY_OPTIONS.switchOnSuccess]!, "bool"),
  [AFFINITY_OPTIONS.keepOnChannelDisabled]: s(AFFINITY_DEFAULTS[AFFINITY_OPTIONS.keepOnChannelDisabled]!, "bool"),
  [AFFINITY_OPTIONS.maxEntries]: s(AFFINITY_DEFAULTS[AFFINITY_OPTIONS.maxEntries]!, "int", { min: 1 }),
  [AFFINITY_OPTIONS.defaultTtlSeconds]: s(AFFINITY_DEFAULTS[AFFINITY_OPTIONS.defaultTtlSeconds]!, "int", { min: 1 }),
  [AFFINITY_OPTIONS.rules]: s(AFFINITY_DEFAULTS[AFFINITY_OPTIONS.rules]!, "affinity-rules"),
  // channel automation: scheduled tests (server/jobs/channel-jobs.ts) and disabling by status code (channel/health.ts)
  "monitor_setting.auto_test_channel_enabled": s("false", "bool"),
  "monitor_setting.auto_test_channel_minutes": s("10", "positive"),
  AutomaticDisableStatusCodes: s("401-403", "status-codes"),
  // which upstream statuses send a call on to another channel (server/relay/select.ts); the default is the
  // gateway's rule before the key existed: timeouts, rate limits and server errors
  AutomaticRetryStatusCodes: s("408,429,500-599", "status-codes"),
  // check-in (server/modules/checkin)
  "checkin_setting.enabled": s("false", "bool"),
  "checkin_setting.min_quota": s("1000", "int"),
  "checkin_setting.max_quota": s("10000", "int"),
  // pricing (relay/billing.ts priceFor and quotaFor; groups: server/modules/group/auto.ts)
  ImageRatio: s(JSON.stringify({ "gpt-image-1": 2 }), "ratios"),
  AudioRatio: s("{}", "ratios"),
  AudioCompletionRatio: s("{}", "ratios"),
  CreateCacheRatio: s("{}", "ratios"),
  GroupGroupRatio: s("{}", "group-ratios"),
  AutoGroups: s(JSON.stringify(["default"]), "group-list"),
  DefaultUseAutoGroup: s("false", "bool"),
  ExposeRatioEnabled: s("false", "bool"),
  "group_ratio_setting.group_special_usable_group": s("{}", "json-object", stored),
  // new-api console layout (sent in /api/status for new-api's console; Switchyard's console has its own)
  HeaderNavModules: s("", "json-object"),
  SidebarModulesAdmin: s("", "json-object"),
  // tokens
  "token_setting.max_user_tokens": s("1000", "int", { min: 1 }),
  // texts
  "legal.user_agreement": s("", "text"),
  "legal.privacy_policy": s("", "text"),
  // wallet: the amounts offered (GET /api/user/topup/info)
  PayMethods: s("", "json-array"),
  "payment_setting.amount_options": s("[]", "json-array"),
  "payment_setting.amount_discount": s("{}", "json-object"),
  // off: the task relays (Midjourney, Suno, video) refuse new submits; running tasks are still followed
  TaskEnabled: s("true", "bool"),
  // stored without effect: features Switchyard does not have (yet)
  "quota_setting.enable_free_model_pre_consume": s("true", "bool", stored),
  LinuxDOMinimumTrustLevel: s("0", "int", stored),
  "discord.enabled": s("false", "bool", stored),
  "discord.client_id": s("", "text", stored),
  "discord.client_secret": s("", "text", secret),
  StripeApiSecret: s("", "text", secret),
  StripeWebhookSecret: s("", "text", secret),
  StripePriceId: s("", "text", stored),
  StripeUnitPrice: s("8", "number", stored),
  StripeMinTopUp: s("1", "int", stored),
  StripePromotionCodesEnabled: s("false", "bool", stored),
  CreemApiKey: s("", "text", secret),
  CreemWebhookSecret: s("", "text", secret),
  CreemProducts: s("[]", "json-array", stored),
  CreemTestMode: s("false", "bool", stored),
  WaffoEnabled: s("false", "bool", stored),
  WaffoApiKey: s("", "text", secret),
  WaffoPrivateKey: s("", "text", secret),
  WaffoPublicCert: s("", "text", stored),
  WaffoSandbox: s("false", "bool", stored),
  WaffoSandboxApiKey: s("", "text", secret),
  WaffoSandboxPrivateKey: s("", "text", secret),
  WaffoSandboxPublicCert: s("", "text", stored),
  WaffoMerchantId: s("", "text", stored),
  WaffoNotifyUrl: s("", "url", stored),
  WaffoReturnUrl: s("", "url", stored),
  WaffoSubscriptionReturnUrl: s("", "url", stored),
  WaffoCurrency: s("USD", "text", stored),
  WaffoUnitPrice: s("1", "number", stored),
  WaffoMinTopUp: s("1", "int", stored),
  WaffoPayMethods: s("[]", "json-array", stored),
  // provider switches of newer new-api releases that the relay does not read
  "gemini.function_call_thought_signature_enabled": s("true", "bool", stored),
  "gemini.remove_function_response_id_enabled": s("true", "bool", stored),
  "global.pass_through_model_mapping_enabled": s("false", "bool", stored),
  "global.thinking_model_blacklist": s(
    JSON.stringify(["moonshotai/kimi-k2-thinking", "kimi-k2-thinking"]),
    "json-array",
    stored,
  ),
  "global.chat_completions_to_responses_policy": s(
    JSON.stringify({ enabled: false, all_channels: true }),
    "json-object",
    stored,
  ),
  "grok.violation_deduction_enabled": s("true", "bool", stored),
  "grok.violation_deduction_amount": s("0.05", "number", stored),
  // which of new-api's two consoles it serves; Switchyard serves its own
  "theme.frontend": s("classic", "theme", stored),
  // SMTP: Switchyard's mailer picks the authentication method the server offers
  SMTPForceAuthLogin: s("false", "bool", stored),
  // the older single chat links, superseded by Chats
  ChatLink: s("", "text", stored),
  ChatLink2: s("", "text", stored),
  // the lowest role allowed to upload and download files and images (0: guests); Switchyard keeps no files
  FileUploadPermission: s("0", "int", stored),
  FileDownloadPermission: s("0", "int", stored),
  ImageUploadPermission: s("0", "int", stored),
  ImageDownloadPermission: s("0", "int", stored),
  // model deployment on io.net: no deployments in Switchyard
  "model_deployment.ionet.enabled": s("false", "bool", stored),
  "model_deployment.ionet.api_key": s("", "text", secret),
  // new-api's request-body disk cache and its load monitor; Switchyard's limits live in docs/limits.md
  "performance_setting.disk_cache_enabled": s("false", "bool", stored),
  "performance_setting.disk_cache_threshold_mb": s("10", "int", stored),
  "performance_setting.disk_cache_max_size_mb": s("1024", "int", stored),
  "performance_setting.disk_cache_path": s("", "text", stored),
  "performance_setting.monitor_enabled": s("true", "bool", stored),
  "performance_setting.monitor_cpu_threshold": s("90", "int", stored),
  "performance_setting.monitor_memory_threshold": s("90", "int", stored),
  "performance_setting.monitor_disk_threshold": s("95", "int", stored),
  // the operator's confirmation of the payment terms: written only by POST /api/option/payment_compliance
  ...Object.fromEntries(Object.entries(COMPLIANCE_DEFAULTS).map(([k, v]) => [k, s(v, "text", stored)])),
};

/** The terms version a confirmation records (new-api's current one). */
export const COMPLIANCE_TERMS_VERSION = "v1";

/** Keys that look like credentials by new-api's rule: a key Switchyard does not know is hidden from GET when it ends so. */
export function looksSecret(key: string): boolean {
  return /(Token|Secret|Password|Key|secret|api_key)$/.test(key) || key.toLowerCase().endsWith("_token");
}

/**
 * The stored form of a key Switchyard does not know: new-api keeps any key it is sent, so a setting of a newer
 * new-api release survives a visit to Switchyard. Values keep new-api's text form.
 */
export function validateUnknownOption(key: string, raw: unknown): string {
  if (!key.trim() || key.length > OPTION_KEY_MAX) throw badRequest(`key must be 1 to ${OPTION_KEY_MAX} characters`);
  if (typeof raw === "string") return raw;
  if (typeof raw === "number" || typeof raw === "boolean") return String(raw);
  if (raw && typeof raw === "object") return JSON.stringify(raw);
  throw badRequest(`${key}: value must be a string`);
}

export const NEW_API_DEFAULTS: Record<string, string> = Object.fromEntries(
  Object.entries(NEW_API_OPTIONS).map(([k, v]) => [k, v.default]),
);
export const NEW_API_SECRETS: string[] = Object.entries(NEW_API_OPTIONS)
  .filter(([, v]) => v.secret)
  .map(([k]) => k);
/** Keys saved for new-api's console that change nothing in Switchyard (listed in docs/migrating-from-new-api.md). */
export const STORED_WITHOUT_EFFECT: string[] = Object.entries(NEW_API_OPTIONS)
  .filter(([, v]) => v.stored)
  .map(([k]) => k);

function json(key: string, value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw badRequest(`${key} is not a valid JSON string`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);
const isRatio = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= BIGINT_COLUMN.max;

/** The value to store for one of NEW_API_OPTIONS, or a 400 naming the problem. */
export function validateNewApiOption(key: string, value: string): string {
  const spec = NEW_API_OPTIONS[key]!;
  switch (spec.kind) {
    case "bool":
      if (value !== "true" && value !== "false") throw badRequest(`${key} must be "true" or "false"`);
      return value;
    case "int":
    case "number":
    case "positive": {
      const n = Number(value);
      if (value.trim() === "" || !Number.isFinite(n)) throw badRequest(`${key} must be a number`);
      if (spec.kind === "int" && !Number.isInteger(n)) throw badRequest(`${key} must be an integer`);
      if (Math.abs(n) > BIGINT_COLUMN.max)
        throw badRequest(numberMessage(key, within(BIGINT_COLUMN, spec.kind === "positive" ? 0 : (spec.min ?? 0))));
      if (spec.kind === "positive" ? n <= 0 : n < (spec.min ?? 0)) {
        throw badRequest(
          spec.kind === "positive" ? `${key} must be greater than 0` : `${key} must be at least ${spec.min ?? 0}`,
        );
      }
      return String(n);
    }
    case "theme":
      if (value !== "default" && value !== "classic") throw badRequest(`${key} must be "default" or "classic"`);
      return value;
    case "display-type":
      if (!(QUOTA_DISPLAY_TYPES as readonly string[]).includes(value))
        throw badRequest(`${key} must be one of ${QUOTA_DISPLAY_TYPES.join(", ")}`);
      return value;
    case "text":
      if (value.length > 100_000) throw badRequest(`${key} is too long`);
      if (key === "general_setting.custom_currency_symbol" && [...value.trim()].length > 8)
        throw badRequest(`${key} must be at most 8 characters`);
      return key === "general_setting.custom_currency_symbol" ? value.trim() : value;
    case "url":
      if (value && !/^https?:\/\//i.test(value)) throw badRequest(`${key} must start with http:// or https://`);
      return value.trim();
    case "status-codes":
      return validateStatusCodes(key, value);
    case "panel":
      return validatePanelOption(key, value);
    case "ratios": {
      const v = json(key, value || "{}");
      if (!isObject(v)) throw badRequest(`${key} must be a JSON object`);
      for (const [model, r] of Object.entries(v))
        if (!isRatio(r)) throw badRequest(`${key}: the value of "${model}" must be a number >= 0`);
      return value || "{}";
    }
    case "group-ratios": {
      // {"<user group>": {"<group used>": ratio}}: what a user of one group pays for calls in another
      const v = json(key, value || "{}");
      if (!isObject(v)) throw badRequest(`${key} must be a JSON object of user group → {group: ratio}`);
      for (const [userGroup, inner] of Object.entries(v)) {
        if (!isObject(inner)) throw badRequest(`${key}: "${userGroup}" must map groups to ratios`);
        for (const [g, r] of Object.entries(inner))
          if (!isRatio(r)) throw badRequest(`${key}: "${userGroup}" → "${g}" must be a number >= 0`);
      }
      return value || "{}";
    }
    case "group-list": {
      const v = json(key, value || "[]");
      if (!Array.isArray(v) || v.some((g) => typeof g !== "string" || !g.trim() || g === "auto")) {
        throw badRequest(`${key} must be a JSON array of group names (not "auto")`);
      }
      if (new Set(v).size !== v.length) throw badRequest(`${key}: a group is listed twice`);
      return value || "[]";
    }
    case "json-object": {
      if (value.trim() === "") return "";
      if (!isObject(json(key, value))) throw badRequest(`${key} must be a JSON object`);
      return value;
    }
    case "affinity-rules": {
      const problem = affinityRulesProblem(value);
      if (problem) throw badRequest(`${key}: ${problem}`);
      return value.trim() === "" ? "[]" : value;
    }
    case "json-array": {
      if (value.trim() === "") return "";
      if (!Array.isArray(json(key, value))) throw badRequest(`${key} must be a JSON array`);
      return value;
    }
  }
}

/**
 * Keys new-api keeps in step: DisplayInCurrencyEnabled is the older switch of quota_display_type (off =
 * TOKENS). Returns the companion writes that keep both true after `key` was set to `value`.
 */
export function companionWrites(key: string, value: string, current: (k: string) => string): [string, string][] {
  if (key === "general_setting.quota_display_type") {
    const inCurrency = value === "TOKENS" ? "false" : "true";
    return current("DisplayInCurrencyEnabled") === inCurrency ? [] : [["DisplayInCurrencyEnabled", inCurrency]];
  }
  if (key === "DisplayInCurrencyEnabled") {
    const type = current("general_setting.quota_display_type");
    if (value === "false" && type !== "TOKENS") return [["general_setting.quota_display_type", "TOKENS"]];
    if (value === "true" && type === "TOKENS") return [["general_setting.quota_display_type", "USD"]];
  }
  return [];
}
