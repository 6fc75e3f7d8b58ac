// new-api's option keys: every key its console saves is accepted, validated per family and stored in new-api's
// text form; secrets are never read back; the status object carries what its console reads.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, ROOT_PASSWORD, type Session, type TestContext } from "../helpers/app.ts";
import { NEW_API_OPTIONS, STORED_WITHOUT_EFFECT, isComplianceOption } from "../../server/modules/option/newapi.ts";
import { OPTION_DEFAULTS, SECRET_OPTIONS } from "../../server/modules/option/defaults.ts";
import { parseStatusCodeRanges, statusInList } from "../../server/modules/channel/status-codes.ts";

let ctx: TestContext;
let root: Session;
beforeAll(async () => {
  ctx = await testContext();
  root = await ctx.login("root", ROOT_PASSWORD);
});
afterAll(() => ctx.close());

const put = (key: string, value: unknown) => ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });
const stored = async (key: string) =>
  (await ctx.deps.db.selectFrom("options").select("value").where("key", "=", key).executeTakeFirst())?.value;
const status = async () => (await ctx.request("GET", "/api/status")).body.data;

// The keys the issue names as refused by Switchyard before (new-api's console saves them).
const ISSUE_KEYS = [
  "general_setting.quota_display_type",
  "general_setting.custom_currency_symbol",
  "general_setting.custom_currency_exchange_rate",
  "console_setting.api_info",
  "console_setting.announcements",
  "console_setting.faq",
  "console_setting.uptime_kuma_groups",
  "console_setting.api_info_enabled",
  "console_setting.announcements_enabled",
  "console_setting.faq_enabled",
  "console_setting.uptime_kuma_enabled",
  "AutomaticDisableStatusCodes",
  "AutomaticRetryStatusCodes",
  "monitor_setting.auto_test_channel_enabled",
  "monitor_setting.auto_test_channel_minutes",
  "checkin_setting.enabled",
  "checkin_setting.min_quota",
  "checkin_setting.max_quota",
  "fetch_setting.enable_ssrf_protection",
  "fetch_setting.allowed_ports",
  "ImageRatio",
  "AudioRatio",
  "AudioCompletionRatio",
  "GroupGroupRatio",
  "AutoGroups",
  "DefaultUseAutoGroup",
  "ExposeRatioEnabled",
  "HeaderNavModules",
  "SidebarModulesAdmin",
  "passkey.enabled",
  "passkey.rp_id",
  "discord.enabled",
  "discord.client_id",
  "discord.client_secret",
  "StripeApiSecret",
  "StripeWebhookSecret",
  "StripePriceId",
  "StripeUnitPrice",
  "StripeMinTopUp",
  "StripePromotionCodesEnabled",
  "CreemApiKey",
  "CreemProducts",
  "CreemTestMode",
  "CreemWebhookSecret",
  "USDExchangeRate",
  "PayMethods",
  "payment_setting.amount_options",
  "payment_setting.amount_discount",
  "CreateCacheRatio",
  "LinuxDOMinimumTrustLevel",
  "TaskEnabled",
  "legal.user_agreement",
  "legal.privacy_policy",
  "token_setting.max_user_tokens",
  "quota_setting.enable_free_model_pre_consume",
  "general_setting.log_filter_autocomplete_enabled",
  "group_ratio_setting.group_special_usable_group",
  "gemini.function_call_thought_signature_enabled",
  "gemini.remove_function_response_id_enabled",
  "global.thinking_model_blacklist",
];

describe("new-api option keys", () => {
  test("every key new-api's console saves is known, and saving its default value succeeds and is stored", async () => {
    for (const key of ISSUE_KEYS) expect(key in OPTION_DEFAULTS).toBe(true);
    for (const [key, spec] of Object.entries(NEW_API_OPTIONS)) {
      if (isComplianceOption(key)) continue; // only their own route writes them (tested below)
      const r = await put(key, spec.default);
      expect({ key, ...r.body }).toEqual({ key, success: true, message: "saved" });
      expect(await stored(key)).toBe(spec.default);
    }
  });

  test("booleans and numbers sent as JSON values are stored as new-api's text", async () => {
    expect((await put("ExposeRatioEnabled", true)).body.success).toBe(true);
    expect(await stored("ExposeRatioEnabled")).toBe("true");
    expect((await put("StripeUnitPrice", 7.5)).body.success).toBe(true);
    expect(await stored("StripeUnitPrice")).toBe("7.5");
    await put("ExposeRatioEnabled", "false");
  });

  test("secrets are saved but never listed; the other keys are", async () => {
    await put("StripeApiSecret", "sk_live_stripe_secret");
    await put("discord.client_secret", "discord-secret-value");
    await put("CreemApiKey", "creem-key-value");
    const r = await ctx.request("GET", "/api/option/", { as: root });
    const keys = new Set(r.body.data.map((o: any) => o.key));
    for (const s of [
      "StripeApiSecret",
      "StripeWebhookSecret",
      "CreemApiKey",
      "CreemWebhookSecret",
      "discord.client_secret",
      "WaffoApiKey",
    ]) {
      expect(SECRET_OPTIONS.has(s)).toBe(true);
      expect(keys.has(s)).toBe(false);
    }
    for (const k of [
      "general_setting.quota_display_type",
      "console_setting.faq",
      "AutoGroups",
      "StripePriceId",
      "discord.client_id",
    ])
      expect(keys.has(k)).toBe(true);
    const text = JSON.stringify(r.body);
    for (const v of ["sk_live_stripe_secret", "discord-secret-value", "creem-key-value"]) expect(text).not.toContain(v);
    expect(await stored("StripeApiSecret")).toBe("sk_live_stripe_secret");
  });

  test("a key Switchyard does not know is kept as new-api keeps it: stored as text and listed, credentials hidden", async () => {
    expect((await put("general_setting.no_such_key", "x")).body).toEqual({ success: true, message: "saved" });
    expect(await stored("general_setting.no_such_key")).toBe("x");
    expect((await put("NewerReleaseFlag", true)).body.success).toBe(true);
    expect(await stored("NewerReleaseFlag")).toBe("true");
    expect((await put("newer_setting.limit", 12.5)).body.success).toBe(true);
    expect(await stored("newer_setting.limit")).toBe("12.5");
    expect((await put("newer_setting.rules", { a: [1, 2] })).body.success).toBe(true);
    expect(await stored("newer_setting.rules")).toBe('{"a":[1,2]}');
    expect((await put("newer_setting.api_key", "hidden-value")).body.success).toBe(true);
    expect((await put("NewerWebhookSecret", "hidden-too")).body.success).toBe(true);
    const listed = (await ctx.request("GET", "/api/option/", { as: root })).body.data as {
      key: string;
      value: string;
    }[];
    const byKey = new Map(listed.map((o) => [o.key, o.value]));
    expect(byKey.get("general_setting.no_such_key")).toBe("x");
    expect(byKey.get("newer_setting.rules")).toBe('{"a":[1,2]}');
    expect(byKey.has("newer_setting.api_key")).toBe(false);
    expect(byKey.has("NewerWebhookSecret")).toBe(false);
    expect(JSON.stringify(listed)).not.toContain("hidden-");
    expect(await stored("newer_setting.api_key")).toBe("hidden-value");
    // the key column is 128 characters wide
    const long = "k".repeat(129);
    expect((await put(long, "x")).body).toEqual({ success: false, message: "key must be 1 to 128 characters" });
    expect(await stored(long)).toBeUndefined();
  });

  test("the keys new-api's current consoles save that Switchyard refused are accepted in new-api's text form", async () => {
    const cases: [string, unknown, string][] = [
      ["theme.frontend", "default", "default"],
      ["SMTPForceAuthLogin", true, "true"],
      ["ChatLink", "https://chat.example", "https://chat.example"],
      ["ChatLink2", "", ""],
      ["FileUploadPermission", 1, "1"],
      ["FileDownloadPermission", "0", "0"],
      ["ImageUploadPermission", 10, "10"],
      ["ImageDownloadPermission", "100", "100"],
      [
        "global.chat_completions_to_responses_policy",
        '{"enabled":true,"all_channels":false,"channel_ids":[3]}',
        '{"enabled":true,"all_channels":false,"channel_ids":[3]}',
      ],
      ["grok.violation_deduction_enabled", false, "false"],
      ["grok.violation_deduction_amount", 0.1, "0.1"],
      ["model_deployment.ionet.enabled", "true", "true"],
      ["model_deployment.ionet.api_key", "io-secret", "io-secret"],
      ["performance_setting.disk_cache_enabled", true, "true"],
      ["performance_setting.disk_cache_threshold_mb", 20, "20"],
      ["performance_setting.disk_cache_max_size_mb", "2048", "2048"],
      ["performance_setting.disk_cache_path", "/tmp/cache", "/tmp/cache"],
      ["performance_setting.monitor_enabled", false, "false"],
      ["performance_setting.monitor_cpu_threshold", 80, "80"],
      ["performance_setting.monitor_memory_threshold", 85, "85"],
      ["performance_setting.monitor_disk_threshold", 90, "90"],
    ];
    for (const [key, value, text] of cases) {
      expect(STORED_WITHOUT_EFFECT).toContain(key);
      expect({ key, ...(await put(key, value)).body }).toEqual({ key, success: true, message: "saved" });
      expect(await stored(key)).toBe(text);
    }
    const listed = new Set(
      ((await ctx.request("GET", "/api/option/", { as: root })).body.data as { key: string }[]).map((o) => o.key),
    );
    expect(listed.has("theme.frontend")).toBe(true);
    expect(listed.has("payment_setting.compliance_confirmed")).toBe(true);
    expect(listed.has("model_deployment.ionet.api_key")).toBe(false);
    expect((await put("theme.frontend", "modern")).body).toEqual({
      success: false,
      message: 'theme.frontend must be "default" or "classic"',
    });
    expect(await stored("theme.frontend")).toBe("default");
    expect((await put("performance_setting.monitor_cpu_threshold", "high")).body.success).toBe(false);
    expect((await put("grok.violation_deduction_enabled", "yes")).body.success).toBe(false);
    await put("theme.frontend", "classic");
  });

  test("PUT /api/option/bulk {options: [{key, value}]}: every value checked before any is written", async () => {
    const bulk = (options: unknown) => ctx.request("PUT", "/api/option/bulk", { as: root, body: { options } });
    expect(
      (
        await bulk([
          { key: "LogConsumeEnabled", value: "false" },
          { key: "SidebarModulesAdmin", value: '{"chat":{"enabled":true}}' },
        ])
      ).body,
    ).toEqual({ success: true, message: "saved" });
    expect(await stored("LogConsumeEnabled")).toBe("false");
    expect(await stored("SidebarModulesAdmin")).toBe('{"chat":{"enabled":true}}');
    const bad = await bulk([
      { key: "LogConsumeEnabled", value: "true" },
      { key: "RetryTimes", value: "many" },
    ]);
    expect([bad.status, bad.body.message]).toEqual([400, "RetryTimes must be a number"]);
    expect(await stored("LogConsumeEnabled")).toBe("false");
    expect((await bulk([{ key: "LogConsumeEnabled", value: true }])).body.message).toBe(
      "LogConsumeEnabled: value must be a string",
    );
    expect((await bulk(Array.from({ length: 101 }, () => ({ key: "LogConsumeEnabled", value: "true" })))).status).toBe(
      400,
    );
    expect(
      (await ctx.request("PUT", "/api/option/bulk", { as: await ctx.user(10), body: { options: [] } })).status,
    ).toBe(403);
    await bulk([{ key: "LogConsumeEnabled", value: "true" }]);
  });

  test("the payment terms are confirmed only through their own route, which records who, when and from where", async () => {
    const r = await put("payment_setting.compliance_confirmed", "true");
    expect(r.status).toBe(400);
    expect(r.body.message).toContain("POST /api/option/payment_compliance");
    expect(await stored("payment_setting.compliance_confirmed")).toBeUndefined();
    const refused = await ctx.request("POST", "/api/option/payment_compliance", {
      as: root,
      body: { confirmed: false },
    });
    expect([refused.status, refused.body.success]).toEqual([400, false]);
    expect(await stored("payment_setting.compliance_confirmed")).toBeUndefined();
    const before = Math.floor(Date.now() / 1000);
    const ok = await ctx.request("POST", "/api/option/payment_compliance", { as: root, body: { confirmed: true } });
    expect(ok.body).toEqual({ success: true, message: "" });
    expect(await stored("payment_setting.compliance_confirmed")).toBe("true");
    expect(await stored("payment_setting.compliance_terms_version")).toBe("v1");
    expect(Number(await stored("payment_setting.compliance_confirmed_at"))).toBeGreaterThanOrEqual(before);
    expect(await stored("payment_setting.compliance_confirmed_by")).toBe(String(root.id));
    expect(await stored("payment_setting.compliance_confirmed_ip")).not.toBe("");
  });

  test("each family refuses what new-api refuses, with a message naming the key, and stores nothing", async () => {
    const cases: [string, unknown, string][] = [
      ["general_setting.quota_display_type", "EUR", "must be one of USD, CNY, TOKENS, CUSTOM"],
      ["general_setting.custom_currency_exchange_rate", "0", "must be greater than 0"],
      ["general_setting.custom_currency_symbol", "123456789", "at most 8 characters"],
      ["USDExchangeRate", "abc", "must be a number"],
      ["monitor_setting.auto_test_channel_minutes", "-5", "must be greater than 0"],
      ["monitor_setting.auto_test_channel_enabled", "yes", 'must be "true" or "false"'],
      ["checkin_setting.min_quota", "1.5", "must be an integer"],
      ["checkin_setting.max_quota", "-1", "must be at least 0"],
      ["token_setting.max_user_tokens", "0", "must be at least 1"],
      ["AutomaticDisableStatusCodes", "401,abc", "not a status code"],
      ["AutomaticDisableStatusCodes", "600", "status codes are 100 to 599"],
      ["AutomaticRetryStatusCodes", "503-500", "starts after it ends"],
      ["ImageRatio", '{"gpt-image-1":"x"}', 'the value of "gpt-image-1" must be a number >= 0'],
      ["AudioRatio", "[1]", "must be a JSON object"],
      ["GroupGroupRatio", '{"vip":2}', "must map groups to ratios"],
      ["GroupGroupRatio", '{"vip":{"default":-1}}', "must be a number >= 0"],
      ["AutoGroups", '{"a":1}', "must be a JSON array of group names"],
      ["AutoGroups", '["auto"]', 'not "auto"'],
      ["AutoGroups", '["vip","vip"]', "listed twice"],
      ["HeaderNavModules", "[1]", "must be a JSON object"],
      ["PayMethods", "{}", "must be a JSON array"],
      ["CreemProducts", "not json", "not a valid JSON string"],
      ["CreemTestMode", "1", 'must be "true" or "false"'],
      ["StripeMinTopUp", "x", "must be a number"],
      ["WaffoNotifyUrl", "ftp://x", "must start with http:// or https://"],
      ["console_setting.api_info_enabled", "on", 'must be "true" or "false"'],
      ["console_setting.api_info", "{}", "expected a JSON array of objects"],
      [
        "console_setting.api_info",
        '[{"url":"https://api.example.com","route":"main","description":"d","color":"neon"}]',
        "unknown color",
      ],
      [
        "console_setting.api_info",
        '[{"url":"javascript:alert(1)","route":"main","description":"d","color":"blue"}]',
        "http:// or https://",
      ],
      [
        "console_setting.api_info",
        '[{"url":"https://a.example","route":"<script>x","description":"d","color":"blue"}]',
        "not allowed",
      ],
      ["console_setting.announcements", '[{"content":"hi","publishDate":"yesterday"}]', "RFC 3339"],
      [
        "console_setting.announcements",
        '[{"content":"hi","publishDate":"2025-01-02T03:04:05Z","type":"party"}]',
        "unknown type",
      ],
      [
        "console_setting.announcements",
        JSON.stringify([{ content: "x".repeat(501), publishDate: "2025-01-02T03:04:05Z" }]),
        "longer than 500",
      ],
      ["console_setting.faq", '[{"question":"q"}]', "answer is required"],
      [
        "console_setting.uptime_kuma_groups",
        '[{"categoryName":"a","url":"https://up.example","slug":"bad slug"}]',
        "slug may hold only",
      ],
      [
        "console_setting.uptime_kuma_groups",
        '[{"categoryName":"a","url":"https://up.example","slug":"s"},{"categoryName":"a","url":"https://up.example","slug":"t"}]',
        "repeats",
      ],
    ];
    for (const [key, value, message] of cases) {
      const before = await stored(key);
      const r = await put(key, value);
      expect({ key, value, status: r.status, success: r.body.success }).toEqual({
        key,
        value,
        status: 400,
        success: false,
      });
      expect(r.body.message).toContain(key);
      expect(r.body.message).toContain(message);
      expect(await stored(key)).toBe(before);
    }
  });

  test("status-code lists are stored in new-api's normal form (sorted, merged, full-width commas read)", async () => {
    expect((await put("AutomaticDisableStatusCodes", " 403, 401，500-503,502 , 504")).body.success).toBe(true);
    expect(await stored("AutomaticDisableStatusCodes")).toBe("401,403,500-504");
    expect(parseStatusCodeRanges("429,400-410")).toEqual([
      { start: 400, end: 410 },
      { start: 429, end: 429 },
    ]);
    expect(statusInList("401,500-503", 502)).toBe(true);
    expect(statusInList("401,500-503", 504)).toBe(false);
    expect(statusInList("garbage", 401)).toBe(false);
    expect((await put("AutomaticDisableStatusCodes", "")).body.success).toBe(true);
    expect(await stored("AutomaticDisableStatusCodes")).toBe("");
    await put("AutomaticDisableStatusCodes", "401-403");
  });

  test("valid panel lists are stored as sent; the status object carries each enabled panel, announcements newest first", async () => {
    const apiInfo = [{ url: "https://api.example.com", route: "main line", description: "for China", color: "blue" }];
    const announcements = [
      { content: "older", publishDate: "2025-01-01T00:00:00Z", type: "default" },
      { content: "newer", publishDate: "2025-06-01T08:00:00+08:00", type: "warning", extra: "details" },
    ];
    const faq = [{ question: "How do I pay?", answer: "With a redemption code." }];
    for (const [k, v] of [
      ["console_setting.api_info", apiInfo],
      ["console_setting.announcements", announcements],
      ["console_setting.faq", faq],
    ] as const) {
      expect((await put(k, JSON.stringify(v))).body.success).toBe(true);
      expect(await stored(k)).toBe(JSON.stringify(v));
    }
    let s = await status();
    expect(s).toMatchObject({
      api_info_enabled: true,
      announcements_enabled: true,
      faq_enabled: true,
      uptime_kuma_enabled: true,
    });
    expect(s.api_info).toEqual(apiInfo);
    expect(s.announcements.map((a: any) => a.content)).toEqual(["newer", "older"]);
    expect(s.faq).toEqual(faq);
    await put("console_setting.faq_enabled", "false");
    s = await status();
    expect(s.faq_enabled).toBe(false);
    expect("faq" in s).toBe(false);
    await put("console_setting.faq_enabled", "true");
  });

  test("quota display type and DisplayInCurrencyEnabled stay in step both ways; the status object carries the currency", async () => {
    await put("general_setting.quota_display_type", "TOKENS");
    expect(await stored("DisplayInCurrencyEnabled")).toBe("false");
    expect((await status()).display_in_currency).toBe(false);
    await put("DisplayInCurrencyEnabled", "true");
    expect(await stored("general_setting.quota_display_type")).toBe("USD");
    await put("general_setting.quota_display_type", "CUSTOM");
    await put("general_setting.custom_currency_symbol", " € ");
    await put("general_setting.custom_currency_exchange_rate", "0.92");
    expect(await stored("general_setting.custom_currency_symbol")).toBe("€");
    expect(await stored("DisplayInCurrencyEnabled")).toBe("true");
    await put("DisplayInCurrencyEnabled", "false");
    expect(await stored("general_setting.quota_display_type")).toBe("TOKENS");
    await put("general_setting.quota_display_type", "CUSTOM");
    expect(await status()).toMatchObject({
      quota_display_type: "CUSTOM",
      custom_currency_symbol: "€",
      custom_currency_exchange_rate: 0.92,
      display_in_currency: true,
      usd_exchange_rate: 7.3,
    });
    await put("general_setting.quota_display_type", "USD");
  });

  test("the status object carries the other keys new-api's console reads", async () => {
    await put("HeaderNavModules", '{"home":true,"pricing":{"enabled":true,"requireAuth":false}}');
    await put("SidebarModulesAdmin", '{"admin":{"enabled":true,"channel":true}}');
    await put("checkin_setting.enabled", "true");
    await put("DefaultUseAutoGroup", "true");
    await put("legal.user_agreement", "Be nice.");
    const s = await status();
    expect(s).toMatchObject({
      HeaderNavModules: '{"home":true,"pricing":{"enabled":true,"requireAuth":false}}',
      SidebarModulesAdmin: '{"admin":{"enabled":true,"channel":true}}',
      checkin_enabled: true,
      default_use_auto_group: true,
      user_agreement_enabled: true,
      privacy_policy_enabled: false,
      discord_oauth: false,
      enable_batch_update: true,
      stripe_unit_price: expect.any(Number),
      linuxdo_minimum_trust_level: 0,
    });
    expect((await ctx.request("GET", "/api/user-agreement")).body).toEqual({
      success: true,
      message: "",
      data: "Be nice.",
    });
    expect((await ctx.request("GET", "/api/privacy-policy")).body).toEqual({ success: true, message: "", data: "" });
    await put("checkin_setting.enabled", "false");
    await put("DefaultUseAutoGroup", "false");
  });

  test("the keys stored without effect are a fixed, documented list", () => {
    const doc = readFileSync(join(import.meta.dir, "../../docs/options.md"), "utf8");
    for (const key of STORED_WITHOUT_EFFECT)
      expect({ key, documented: doc.includes("`" + key + "`") }).toEqual({ key, documented: true });
    expect(STORED_WITHOUT_EFFECT).toContain("StripeApiSecret");
    expect(STORED_WITHOUT_EFFECT).toContain("discord.enabled");
    expect(STORED_WITHOUT_EFFECT).not.toContain("checkin_setting.enabled");
    expect(STORED_WITHOUT_EFFECT).not.toContain("GroupGroupRatio");
  });
});
