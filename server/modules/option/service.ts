// Site options: typed validation per key, secrets never read back (spec 000 §3.4, §5; 001 §3, §5).
import type { AppDeps } from "../../deps.ts";
import { badRequest } from "../../http/errors.ts";
import { BIGINT_COLUMN, INT_COLUMN, numberMessage, within } from "../../http/numbers.ts";
import { QUOTA_PER_UNIT } from "../../catalogue/index.ts";
import {
  OPTION_DEFAULTS,
  SECRET_OPTIONS,
  NUMBER_OPTIONS,
  JSON_OPTIONS,
  URL_OPTIONS,
  isBooleanOption,
} from "./defaults.ts";
import { validateFetchSetting } from "./fetch-setting.ts";
import { validatePasskeyOption } from "../passkey/options.ts";
import { isResponseCacheOption, validateResponseCacheOption } from "./response-cache.ts";
import {
  type COMPLIANCE_DEFAULTS,
  COMPLIANCE_TERMS_VERSION,
  NEW_API_OPTIONS,
  companionWrites,
  isComplianceOption,
  looksSecret,
  validateNewApiOption,
  validateUnknownOption,
} from "./newapi.ts";
import { ROUTING_OPTION_DEFAULTS, validateRoutingOption } from "./routing.ts";

export function listOptions(deps: AppDeps): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  for (const [key, value] of deps.options.all()) {
    if (SECRET_OPTIONS.has(key) || (!(key in OPTION_DEFAULTS) && looksSecret(key))) continue;
    out.push({ key, value });
  }
  return out;
}

const DOMAIN_RE = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

type Filled = (...keys: string[]) => boolean;

/** Switches that need settings filled first: key → [whether they are, message]. */
const PREREQUISITES: Record<string, [(filled: Filled) => boolean, string]> = {
  GitHubOAuthEnabled: [
    (f) => f("GitHubClientId", "GitHubClientSecret"),
    "cannot enable GitHub OAuth: fill in the GitHub Client Id and Client Secret first",
  ],
  // The endpoints come from the well-known document when it is set (modules/oauth/oidc.ts).
  "oidc.enabled": [
    (f) =>
      f("oidc.client_id", "oidc.client_secret")
      && (f("oidc.well_known") || f("oidc.authorization_endpoint", "oidc.token_endpoint", "oidc.user_info_endpoint")),
    "cannot enable OIDC: fill in the client id, client secret, and the well-known URL or the three endpoints first",
  ],
  LinuxDOOAuthEnabled: [
    (f) => f("LinuxDOClientId", "LinuxDOClientSecret"),
    "cannot enable Linux DO OAuth: fill in the Client Id and Client Secret first",
  ],
  WeChatAuthEnabled: [
    (f) => f("WeChatServerAddress", "WeChatServerToken"),
    "cannot enable WeChat login: fill in the WeChat server address and token first",
  ],
  TelegramOAuthEnabled: [
    (f) => f("TelegramBotToken", "TelegramBotName"),
    "cannot enable Telegram login: fill in the bot token and bot name first",
  ],
  TurnstileCheckEnabled: [
    (f) => f("TurnstileSiteKey", "TurnstileSecretKey"),
    "cannot enable Turnstile: fill in the site key and secret key first",
  ],
  // A local relay needs no account or password, but every mail needs a sender (mail.ts: SMTPFrom, else SMTPAccount).
  EmailVerificationEnabled: [
    (f) => f("SMTPServer") && (f("SMTPFrom") || f("SMTPAccount")),
    "cannot enable email verification: fill in the SMTP server and a sender address (SMTPFrom or SMTPAccount) first",
  ],
  EmailDomainRestrictionEnabled: [
    (f) => f("EmailDomainWhitelist"),
    "cannot enable the email domain whitelist: fill in the whitelist first",
  ],
};

function numberMap(value: unknown, key: string, min = 0) {
  if (!value || typeof value !== "object" || Array.isArray(value)) throw badRequest(`${key} must be a JSON object`);
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "number" || !Number.isFinite(v) || v < min)
      throw badRequest(`${key}: the value of "${k}" must be a number >= ${min}`);
    if (v > BIGINT_COLUMN.max)
      throw badRequest(`${key}: the value of "${k}" must be a number from ${min} to ${BIGINT_COLUMN.max}`);
  }
}

/** Returns the value to store, or throws a 400 with a message naming the problem. */
export function validateOption(deps: AppDeps, key: string, raw: unknown): string {
  if (!(key in OPTION_DEFAULTS)) return validateUnknownOption(key, raw);
  if (isComplianceOption(key))
    throw badRequest(`${key} is set only by confirming the payment terms (POST /api/option/payment_compliance)`);
  let value = typeof raw === "string" ? raw : typeof raw === "number" || typeof raw === "boolean" ? String(raw) : null;
  if (value === null) throw badRequest(`${key}: value must be a string`);
  if (key.startsWith("fetch_setting.")) return validateFetchSetting(key, value);
  if (key.startsWith("passkey.")) return validatePasskeyOption(key, value);
  if (isResponseCacheOption(key)) return validateResponseCacheOption(key, value);
  if (key in NEW_API_OPTIONS) return validateNewApiOption(key, value);
  if (key in ROUTING_OPTION_DEFAULTS) return validateRoutingOption(key, value);

  if (isBooleanOption(key)) {
    if (value !== "true" && value !== "false") throw badRequest(`${key} must be "true" or "false"`);
    const pre = PREREQUISITES[key];
    const filled = filledWith(deps);
    if (value === "true" && pre && !pre[0](filled)) throw badRequest(pre[1]);
    return value;
  }
  if (NUMBER_OPTIONS.has(key)) {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n)) throw badRequest(`${key} must be a number`);
    if (n < 0) throw badRequest(`${key} must not be negative`);
    if (n > BIGINT_COLUMN.max) throw badRequest(numberMessage(key, within(BIGINT_COLUMN, 0)));
    if (key === "QuotaPerUnit" && n !== QUOTA_PER_UNIT) throw badRequest(`QuotaPerUnit is fixed at ${QUOTA_PER_UNIT}`);
    if (key.endsWith("budget_tokens_percentage") && (n < 0.1 || n > 1))
      throw badRequest(`${key} must be between 0.1 and 1`);
    if (key === "general_setting.ping_interval_seconds" && n < 1) throw badRequest(`${key} must be at least 1`);
    if (key === "ModelRequestRateLimitSuccessCount" && n < 1) throw badRequest(`${key} must be at least 1`);
    if (
      [
        "RetryTimes",
        "SMTPPort",
        "DataExportInterval",
        "LogRetentionDays",
        "QuotaForNewUser",
        "QuotaForInviter",
        "QuotaForInvitee",
        "PreConsumedQuota",
        "QuotaCreditLimit",
      ].includes(key)
      && !Number.isSafeInteger(n)
    ) {
      throw badRequest(`${key} must be an integer`);
    }
    if (key === "DataExportInterval" && n < 1) throw badRequest(`${key} must be at least 1 minute`);
    return String(n);
  }
  if (JSON_OPTIONS.has(key)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw badRequest(
        key === "TopupGroupRatio"
          ? "top-up group ratio is not a valid JSON string"
          : `${key} is not a valid JSON string`,
      );
    }
    switch (key) {
      case "ModelRatio":
      case "CompletionRatio":
      case "CacheRatio":
      case "ModelPrice":
      case "GroupRatio":
      case "TopupGroupRatio":
        numberMap(parsed, key);
        break;
      case "ModelOutputLimit":
        numberMap(parsed, key);
        for (const [m, n] of Object.entries(parsed as Record<string, number>)) {
          if (!Number.isSafeInteger(n) || n < 1)
            throw badRequest(`${key}: the output limit of "${m}" must be a positive integer`);
        }
        break;
      case "UserUsableGroups":
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
          throw badRequest(`${key} must be a JSON object`);
        // group name → description shown to users (new-api layout)
        for (const [g, desc] of Object.entries(parsed as object)) {
          if (typeof desc !== "string") throw badRequest(`${key}: the description of group "${g}" must be a string`);
        }
        break;
      case "Chats":
        if (!Array.isArray(parsed)) throw badRequest("Chats must be a JSON array");
        break;
      case "ModelRequestRateLimitGroup":
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
          throw badRequest(`${key} must be a JSON object`);
        for (const [g, v] of Object.entries(parsed as object)) {
          if (
            !Array.isArray(v)
            || v.length !== 2
            || !Number.isInteger(v[0])
            || !Number.isInteger(v[1])
            || v[0] < 0
            || v[1] < 1
            || v[0] > INT_COLUMN.max
            || v[1] > INT_COLUMN.max
          ) {
            throw badRequest(`${key}: group "${g}" needs [max requests >= 0, max successful requests >= 1]`);
          }
        }
        break;
    }
    return value;
  }
  if (key === "EmailDomainWhitelist") {
    const domains = value
      .split(",")
      .map((d) => d.trim())
      .filter(Boolean);
    const seen = new Set<string>();
    for (const d of domains) {
      if (!DOMAIN_RE.test(d)) throw badRequest(`"${d}" is not a valid domain`);
      if (seen.has(d.toLowerCase())) throw badRequest(`"${d}" is already in whitelist`);
      seen.add(d.toLowerCase());
    }
    return domains.join(",");
  }
  if (URL_OPTIONS.has(key)) {
    value = value.trim().replace(/\/+$/, "");
    if (value && !/^https?:\/\//i.test(value)) throw badRequest(`${key} must start with http:// or https://`);
    return value;
  }
  // openid-client (oauth4webapi) reaches the provider over https only; plain http is let through for loopback.
  if (
    OIDC_URLS.has(key)
    && value
    && !/^https:\/\//i.test(value)
    && !/^http:\/\/(localhost|127\.[\d.]+|\[::1\])(:\d+)?(\/|$)/i.test(value)
  ) {
    throw badRequest(`${key} must start with https:// (http:// only for a provider on this machine)`);
  }
  return value;
}

const OIDC_URLS = new Set([
  "oidc.well_known",
  "oidc.authorization_endpoint",
  "oidc.token_endpoint",
  "oidc.user_info_endpoint",
]);

/** `filled` over the stored options, or over them as they would be with `key` set to `value`. */
const filledWith =
  (deps: AppDeps, key?: string, value?: string): Filled =>
  (...keys) =>
    keys.every((k) => (k === key ? value : deps.options.get(k)) !== "");

/** A switch that is on keeps its prerequisites: clearing one (leaving, say, Turnstile on without a site key) is refused. */
function assertPrerequisitesKept(deps: AppDeps, key: string, value: string): void {
  if (value !== "") return;
  for (const [flag, [met]] of Object.entries(PREREQUISITES)) {
    if (deps.options.bool(flag) && met(filledWith(deps)) && !met(filledWith(deps, key, value))) {
      throw badRequest(`cannot clear ${key} while ${flag} is on: turn it off first`);
    }
  }
}

/** PUT /api/option/bulk (new-api's default console): every value is checked before any is written. */
export async function updateOptions(deps: AppDeps, options: { key: string; value: unknown }[]): Promise<void> {
  if (options.length > OPTIONS_BULK_MAX) throw badRequest(`options: at most ${OPTIONS_BULK_MAX} at a time`);
  const values = options.map(({ key, value }) => {
    if (typeof value !== "string") throw badRequest(`${key}: value must be a string`);
    const v = validateOption(deps, key, value);
    assertPrerequisitesKept(deps, key, v);
    return [key, v] as const;
  });
  for (const [key, value] of values) await write(deps, key, value);
}

/** Stores a checked value and the companion keys new-api keeps in step with it. */
async function write(deps: AppDeps, key: string, value: string): Promise<void> {
  await deps.options.set(key, value);
  for (const [k, v] of companionWrites(key, value, (k) => deps.options.get(k))) await deps.options.set(k, v);
}

/** The most options one bulk save may carry (new-api's limit). */
export const OPTIONS_BULK_MAX = 100;

export async function updateOption(deps: AppDeps, key: string, raw: unknown): Promise<void> {
  const value = validateOption(deps, key, raw);
  assertPrerequisitesKept(deps, key, value);
  await write(deps, key, value);
}

/** POST /api/option/payment_compliance: records who confirmed the payment terms, when and from where. */
export async function confirmPaymentCompliance(deps: AppDeps, userId: number, ip: string): Promise<void> {
  const values: Record<keyof typeof COMPLIANCE_DEFAULTS & string, string> = {
    "payment_setting.compliance_confirmed": "true",
    "payment_setting.compliance_terms_version": COMPLIANCE_TERMS_VERSION,
    "payment_setting.compliance_confirmed_at": String(Math.floor(Date.now() / 1000)),
    "payment_setting.compliance_confirmed_by": String(userId),
    "payment_setting.compliance_confirmed_ip": ip,
  };
  for (const [k, v] of Object.entries(values)) await deps.options.set(k, v);
}

/** POST /api/option/rest_model_ratio: restores the default pricing tables. */
export async function resetModelRatios(deps: AppDeps): Promise<void> {
  for (const key of ["ModelRatio", "CompletionRatio", "CacheRatio", "ModelPrice"])
    await deps.options.set(key, OPTION_DEFAULTS[key]);
}
