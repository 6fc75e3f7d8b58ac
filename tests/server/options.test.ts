import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { openDatabase } from "../../db/index.ts";
import { OptionStore } from "../../server/modules/option/store.ts";
import { SECRET_OPTIONS } from "../../server/modules/option/defaults.ts";

let ctx: TestContext;
let root: Session;
beforeAll(async () => {
  ctx = await testContext();
  root = await ctx.login("root", "rootpass123");
});
afterAll(() => ctx.close());

const put = (key: string, value: unknown) => ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });

describe("options", () => {
  test("GET lists options but never secrets", async () => {
    await put("SMTPToken", "supersecret");
    await put("GitHubClientSecret", "ghsecret");
    const r = await ctx.request("GET", "/api/option/", { as: root });
    const keys = new Set(r.body.data.map((o: any) => o.key));
    expect(keys.has("SystemName")).toBe(true);
    expect(keys.has("ModelRatio")).toBe(true);
    for (const s of SECRET_OPTIONS) expect(keys.has(s)).toBe(false);
    expect(JSON.stringify(r.body)).not.toContain("supersecret");
  });

  test("typed validation per key; failures change nothing", async () => {
    const cases: [string, unknown, string][] = [
      ["RegisterEnabled", "yes", 'RegisterEnabled must be "true" or "false"'],
      ["RetryTimes", "abc", "RetryTimes must be a number"],
      ["RetryTimes", "-1", "RetryTimes must not be negative"],
      ["ModelRatio", "{not json", "ModelRatio is not a valid JSON string"],
      ["ModelRatio", '{"gpt-4":"x"}', 'ModelRatio: the value of "gpt-4" must be a number >= 0'],
      ["TopupGroupRatio", "[", "top-up group ratio is not a valid JSON string"],
      ["GroupRatio", "[1,2]", "GroupRatio must be a JSON object"],
      ["Chats", "{}", "Chats must be a JSON array"],
      [
        "ModelRequestRateLimitGroup",
        '{"vip":[10,0]}',
        'ModelRequestRateLimitGroup: group "vip" needs [max requests >= 0, max successful requests >= 1]',
      ],
      ["EmailDomainWhitelist", "gmail.com,not a domain", '"not a domain" is not a valid domain'],
      ["EmailDomainWhitelist", "gmail.com,GMAIL.com", '"GMAIL.com" is already in whitelist'],
      ["QuotaPerUnit", "1000", "QuotaPerUnit is fixed at 500000"],
      [
        "claude.thinking_adapter_budget_tokens_percentage",
        "1.5",
        "claude.thinking_adapter_budget_tokens_percentage must be between 0.1 and 1",
      ],
      ["general_setting.ping_interval_seconds", "0", "general_setting.ping_interval_seconds must be at least 1"],
      ["ServerAddress", "ftp://x", "ServerAddress must start with http:// or https://"],
    ];
    for (const [key, value, message] of cases) {
      const before = ctx.deps.options.get(key);
      const r = await put(key, value);
      expect({ key, body: r.body }).toEqual({ key, body: { success: false, message } });
      expect(ctx.deps.options.get(key)).toBe(before);
    }
  });

  test("OAuth, Turnstile and SMTP switches need their settings first", async () => {
    expect((await put("GitHubOAuthEnabled", "true")).body.success).toBe(false);
    expect((await put("TurnstileCheckEnabled", "true")).body.message).toMatch(/Turnstile/);
    expect((await put("EmailVerificationEnabled", "true")).body.message).toMatch(/SMTP/);
    await put("GitHubClientId", "id");
    expect((await put("GitHubOAuthEnabled", "true")).body.success).toBe(true);
    const status = (await ctx.request("GET", "/api/status")).body.data;
    expect(status.github_oauth).toBe(true);
    expect(status.github_client_id).toBe("id");
  });

  test("trailing slashes are stripped from addresses; values persist in the database", async () => {
    expect((await put("ServerAddress", "https://gw.example.com/")).body.success).toBe(true);
    expect(ctx.deps.options.get("ServerAddress")).toBe("https://gw.example.com");
    const row = await ctx.deps.db
      .selectFrom("options")
      .selectAll()
      .where("key", "=", "ServerAddress")
      .executeTakeFirstOrThrow();
    expect(row.value).toBe("https://gw.example.com");
    expect((await put("WorkerUrl", "https://w.example.com///")).body.success).toBe(true);
    expect(ctx.deps.options.get("WorkerUrl")).toBe("https://w.example.com");
  });

  test("status object, notice, about and home page content", async () => {
    await put("Notice", "maintenance tonight");
    await put("About", "about us");
    await put("HomePageContent", "# Welcome");
    await put("SystemName", "My Gateway");
    expect((await ctx.request("GET", "/api/notice")).body.data).toBe("maintenance tonight");
    expect((await ctx.request("GET", "/api/about")).body.data).toBe("about us");
    expect((await ctx.request("GET", "/api/home_page_content")).body.data).toBe("# Welcome");
    const s = (await ctx.request("GET", "/api/status")).body.data;
    for (const k of [
      "system_name",
      "logo",
      "footer_html",
      "quota_per_unit",
      "display_in_currency",
      "enable_drawing",
      "enable_task",
      "enable_data_export",
      "chats",
      "data_export_default_time",
      "default_collapse_sidebar",
      "mj_notify_enabled",
      "chat_link",
      "chat_link2",
      "docs_link",
      "version",
      "start_time",
      "turnstile_check",
      "turnstile_site_key",
      "email_verification",
      "github_oauth",
      "github_client_id",
      "oidc_enabled",
      "oidc_client_id",
      "oidc_authorization_endpoint",
      "wechat_login",
      "wechat_qrcode",
      "telegram_oauth",
      "telegram_bot_name",
      "linuxdo_oauth",
      "linuxdo_client_id",
      "setup",
      "root_init",
      "database_type",
    ]) {
      expect(s).toHaveProperty(k);
    }
    expect(s.system_name).toBe("My Gateway");
    expect(s.quota_per_unit).toBe(500000);
    expect(s.setup).toBe(true);
  });

  test("rest_model_ratio restores the default tables", async () => {
    await put("ModelRatio", '{"only":1}');
    expect(ctx.deps.options.json<Record<string, number>>("ModelRatio", {})).toEqual({ only: 1 });
    await ctx.request("POST", "/api/option/rest_model_ratio", { as: root });
    expect(ctx.deps.options.json<Record<string, number>>("ModelRatio", {})["gpt-4o"]).toBeGreaterThan(0);
  });
});

describe("options across instances", () => {
  test("a second instance sees a change after its periodic re-read", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "sy-opt-")), "db.sqlite");
    const dbA = await openDatabase({ kind: "sqlite", url: "", sqlitePath: file });
    const dbB = await openDatabase({ kind: "sqlite", url: "", sqlitePath: file });
    const a = new OptionStore(dbA);
    const b = new OptionStore(dbB);
    await a.load();
    await b.load();
    await a.set("Notice", "from A");
    expect(b.get("Notice")).toBe("");
    b.startSync(1);
    await Bun.sleep(1300);
    expect(b.get("Notice")).toBe("from A");
    b.stopSync();
    await dbA.destroy();
    await dbB.destroy();
  });
});
