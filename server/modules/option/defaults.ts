// Every known option with its default value (all values are strings on the wire, spec 000 §3.4, 001 §3).
import {
  DEFAULT_CACHE_RATIO,
  DEFAULT_COMPLETION_RATIO,
  DEFAULT_GROUP_RATIO,
  DEFAULT_MODEL_PRICE,
  DEFAULT_MODEL_RATIO,
  DEFAULT_USER_USABLE_GROUPS,
} from "../../catalogue/ratios.ts";
import { QUOTA_PER_UNIT, QUOTA_WARNING_THRESHOLD_DEFAULT } from "../../catalogue/index.ts";
import { FETCH_SETTING_DEFAULTS } from "../../infra/outbound.ts";
import { PASSKEY_OPTION_DEFAULTS } from "../passkey/options.ts";
import { RESPONSE_CACHE_DEFAULTS } from "./response-cache.ts";
import { NEW_API_DEFAULTS, NEW_API_SECRETS } from "./newapi.ts";
import { ROUTING_OPTION_DEFAULTS } from "./routing.ts";

const json = (v: unknown) => JSON.stringify(v);

export const OPTION_DEFAULTS: Record<string, string> = {
  // access and login
  PasswordLoginEnabled: "true",
  PasswordRegisterEnabled: "true",
  EmailVerificationEnabled: "false",
  RegisterEnabled: "true",
  GitHubOAuthEnabled: "false",
  GitHubClientId: "",
  GitHubClientSecret: "",
  "oidc.enabled": "false",
  "oidc.client_id": "",
  "oidc.client_secret": "",
  "oidc.well_known": "",
  "oidc.authorization_endpoint": "",
  "oidc.token_endpoint": "",
  "oidc.user_info_endpoint": "",
  WeChatAuthEnabled: "false",
  WeChatServerAddress: "",
  WeChatServerToken: "",
  WeChatAccountQRCodeImageURL: "",
  TelegramOAuthEnabled: "false",
  TelegramBotToken: "",
  TelegramBotName: "",
  LinuxDOOAuthEnabled: "false",
  LinuxDOClientId: "",
  LinuxDOClientSecret: "",
  TurnstileCheckEnabled: "false",
  TurnstileSiteKey: "",
  TurnstileSecretKey: "",
  // two-factor sign-in (server/modules/twofa/enforce.ts) and passkeys (server/modules/passkey)
  RootTwoFARequiredEnabled: "false",
  ...PASSKEY_OPTION_DEFAULTS,
  // email
  EmailDomainRestrictionEnabled: "false",
  EmailAliasRestrictionEnabled: "false",
  EmailDomainWhitelist: "gmail.com,163.com,126.com,qq.com,outlook.com,hotmail.com,icloud.com,yahoo.com,foxmail.com",
  SMTPServer: "",
  SMTPPort: "587",
  SMTPAccount: "",
  SMTPFrom: "",
  SMTPToken: "",
  SMTPSSLEnabled: "false",
  // site
  ServerAddress: "",
  SystemName: "Switchyard",
  Logo: "",
  Notice: "",
  About: "",
  HomePageContent: "",
  Footer: "",
  TopUpLink: "",
  "general_setting.docs_link": "",
  Chats: json([{ "ChatGPT Next Web": 'https://app.nextchat.dev/#/?settings={"key":"{key}","url":"{address}"}' }]),
  DemoSiteEnabled: "false",
  SelfUseModeEnabled: "false",
  DefaultCollapseSidebar: "false",
  // proxy worker
  WorkerUrl: "",
  WorkerValidKey: "",
  WorkerAllowHttpImageRequestEnabled: "false",
  // payment
  EpayId: "",
  EpayKey: "",
  PayAddress: "",
  CustomCallbackAddress: "",
  Price: "7.3",
  MinTopUp: "1",
  TopupGroupRatio: json({ default: 1, vip: 1, svip: 1 }),
  // quota and behaviour
  QuotaPerUnit: String(QUOTA_PER_UNIT),
  QuotaForNewUser: "0",
  PreConsumedQuota: "500",
  // how far below zero a balance may be held (relay/billing.ts creditLimit); 0: never below zero
  QuotaCreditLimit: "0",
  // model → the most output tokens one answer may have, over the catalogue's (catalogue/output-limits.ts)
  ModelOutputLimit: "{}",
  QuotaForInviter: "0",
  QuotaForInvitee: "0",
  QuotaRemindThreshold: String(QUOTA_WARNING_THRESHOLD_DEFAULT),
  // one-api/new-api ship 0, so one dead channel of two fails half the calls; 2 rides over up to two
  // failed channels per call (never the same one twice) while keeping a failing call's latency bounded.
  RetryTimes: "2",
  // fallbacks across models and the channel choice inside a priority tier (./routing.ts)
  ...ROUTING_OPTION_DEFAULTS,
  DisplayInCurrencyEnabled: "true",
  DisplayTokenStatEnabled: "true",
  StreamCacheQueueLength: "0",
  // drawing (one-api/new-api's default: on; off refuses /mj submits)
  DrawingEnabled: "true",
  MjNotifyEnabled: "false",
  MjAccountFilterEnabled: "false",
  MjForwardUrlEnabled: "false",
  MjModeClearEnabled: "false",
  MjActionCheckSuccessEnabled: "true",
  // sensitive words
  CheckSensitiveEnabled: "false",
  CheckSensitiveOnPromptEnabled: "false",
  CheckSensitiveOnCompletionEnabled: "false",
  StopOnSensitiveEnabled: "false",
  SensitiveWords: "",
  // logs and dashboard
  LogConsumeEnabled: "true",
  LogErrorEnabled: "false",
  DataExportEnabled: "true",
  DataExportInterval: "5",
  DataExportDefaultTime: "hour",
  /** days consume and error logs are kept; 0 keeps them forever (server/jobs/log-retention.ts) */
  LogRetentionDays: "0",
  // channel automation
  ChannelDisableThreshold: "5",
  AutomaticDisableChannelEnabled: "false",
  AutomaticEnableChannelEnabled: "false",
  AutomaticDisableKeywords: [
    "Your credit balance is too low",
    "This organization has been disabled.",
    "You exceeded your current quota",
    "Permission denied",
    "The security token included in the request is invalid",
    "Operation not allowed",
    "Your account is not authorized",
  ].join("\n"),
  // pricing
  ModelRatio: json(DEFAULT_MODEL_RATIO),
  CompletionRatio: json(DEFAULT_COMPLETION_RATIO),
  CacheRatio: json(DEFAULT_CACHE_RATIO),
  ModelPrice: json(DEFAULT_MODEL_PRICE),
  GroupRatio: json(DEFAULT_GROUP_RATIO),
  UserUsableGroups: json(DEFAULT_USER_USABLE_GROUPS),
  // rate limits
  ModelRequestRateLimitEnabled: "false",
  ModelRequestRateLimitCount: "0",
  ModelRequestRateLimitSuccessCount: "1000",
  ModelRequestRateLimitDurationMinutes: "1",
  ModelRequestRateLimitGroup: "{}",
  // provider options
  "gemini.safety_settings": json({ default: "OFF" }),
  "gemini.version_settings": json({ default: "v1beta" }),
  "gemini.supported_imagine_models": json(["gemini-2.0-flash-exp-image-generation", "gemini-2.0-flash-exp"]),
  "gemini.thinking_adapter_enabled": "false",
  "gemini.thinking_adapter_budget_tokens_percentage": "0.6",
  "claude.model_headers_settings": "{}",
  "claude.default_max_tokens": json({ default: 8192 }),
  "claude.thinking_adapter_enabled": "true",
  "claude.thinking_adapter_budget_tokens_percentage": "0.8",
  "global.pass_through_request_enabled": "false",
  "general_setting.ping_interval_enabled": "false",
  "general_setting.ping_interval_seconds": "60",
  // the relay's response cache (server/relay/cache)
  ...RESPONSE_CACHE_DEFAULTS,
  // outbound requests to user-supplied URLs (new-api's SSRF protection, server/infra/outbound.ts)
  ...FETCH_SETTING_DEFAULTS,
  // the other keys new-api's console saves (./newapi.ts: display, panels, automation, check-in, pricing, stored-only)
  ...NEW_API_DEFAULTS,
};

/** Values never sent back by GET /api/option/. */
export const SECRET_OPTIONS = new Set([
  "GitHubClientSecret",
  "oidc.client_secret",
  "WeChatServerToken",
  "TelegramBotToken",
  "LinuxDOClientSecret",
  "TurnstileSecretKey",
  "SMTPToken",
  "EpayKey",
  "WorkerValidKey",
  ...NEW_API_SECRETS,
]);

export const NUMBER_OPTIONS = new Set([
  "SMTPPort",
  "Price",
  "MinTopUp",
  "QuotaPerUnit",
  "QuotaForNewUser",
  "PreConsumedQuota",
  "QuotaForInviter",
  "QuotaForInvitee",
  "QuotaCreditLimit",
  "QuotaRemindThreshold",
  "RetryTimes",
  "StreamCacheQueueLength",
  "DataExportInterval",
  "ChannelDisableThreshold",
  "ModelRequestRateLimitCount",
  "ModelRequestRateLimitSuccessCount",
  "ModelRequestRateLimitDurationMinutes",
  "gemini.thinking_adapter_budget_tokens_percentage",
  "claude.thinking_adapter_budget_tokens_percentage",
  "general_setting.ping_interval_seconds",
  "LogRetentionDays",
]);

export const JSON_OPTIONS = new Set([
  "Chats",
  "TopupGroupRatio",
  "ModelRatio",
  "CompletionRatio",
  "CacheRatio",
  "ModelPrice",
  "GroupRatio",
  "UserUsableGroups",
  "ModelRequestRateLimitGroup",
  "gemini.safety_settings",
  "gemini.version_settings",
  "gemini.supported_imagine_models",
  "claude.model_headers_settings",
  "claude.default_max_tokens",
  "ModelOutputLimit",
]);

/** Addresses whose trailing slash is stripped on save (spec 000 §5 normalisation). */
export const URL_OPTIONS = new Set([
  "ServerAddress",
  "WorkerUrl",
  "PayAddress",
  "WeChatServerAddress",
  "CustomCallbackAddress",
]);

export const isBooleanOption = (key: string) => key.endsWith("Enabled") || key.endsWith("enabled");
