// A sign-in provider cannot be switched on before what it needs is filled in (spec 000 §8: "cannot enable
// an OAuth ... option before its settings are filled in"); switching off is always allowed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";

let ctx: TestContext;
let root: Session;
beforeAll(async () => {
  ctx = await testContext();
  root = await ctx.login("root", "rootpass123");
});
afterAll(() => ctx.close());

const put = (key: string, value: string) => ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });

/** Each switch, its settings, and the refusal while one of them is empty. */
const SWITCHES: [string, Record<string, string>, string][] = [
  [
    "GitHubOAuthEnabled",
    { GitHubClientId: "gh-id", GitHubClientSecret: "gh-secret" },
    "cannot enable GitHub OAuth: fill in the GitHub Client Id and Client Secret first",
  ],
  [
    "LinuxDOOAuthEnabled",
    { LinuxDOClientId: "ld-id", LinuxDOClientSecret: "ld-secret" },
    "cannot enable Linux DO OAuth: fill in the Client Id and Client Secret first",
  ],
  [
    "WeChatAuthEnabled",
    { WeChatServerAddress: "https://wechat.example.com", WeChatServerToken: "wx-token" },
    "cannot enable WeChat login: fill in the WeChat server address and token first",
  ],
  [
    "TelegramOAuthEnabled",
    { TelegramBotToken: "123:abc", TelegramBotName: "yard_bot" },
    "cannot enable Telegram login: fill in the bot token and bot name first",
  ],
];

describe("enabling a sign-in provider", () => {
  for (const [key, settings, message] of SWITCHES) {
    test(`${key} needs ${Object.keys(settings).join(" and ")}`, async () => {
      for (const missing of Object.keys(settings)) {
        for (const [k, v] of Object.entries(settings)) await ctx.deps.options.set(k, k === missing ? "" : v);
        const r = await put(key, "true");
        expect(r.body).toEqual({ success: false, message });
        expect(ctx.deps.options.get(key)).toBe("false");
      }
      for (const [k, v] of Object.entries(settings)) await ctx.deps.options.set(k, v);
      expect((await put(key, "true")).body.success).toBe(true);
      expect((await put(key, "false")).body.success).toBe(true);
    });
  }

  test("OIDC needs the client id and secret, plus the well-known URL or all three endpoints", async () => {
    const message =
      "cannot enable OIDC: fill in the client id, client secret, and the well-known URL or the three endpoints first";
    const clear = async () => {
      for (const k of [
        "oidc.client_id",
        "oidc.client_secret",
        "oidc.well_known",
        "oidc.authorization_endpoint",
        "oidc.token_endpoint",
        "oidc.user_info_endpoint",
      ]) {
        await ctx.deps.options.set(k, "");
      }
      await ctx.deps.options.set("oidc.enabled", "false");
    };
    await clear();
    await ctx.deps.options.set("oidc.well_known", "https://idp.example/.well-known/openid-configuration");
    expect((await put("oidc.enabled", "true")).body).toEqual({ success: false, message });
    await ctx.deps.options.set("oidc.client_id", "cid");
    expect((await put("oidc.enabled", "true")).body).toEqual({ success: false, message });
    await ctx.deps.options.set("oidc.client_secret", "csecret");
    expect((await put("oidc.enabled", "true")).body.success).toBe(true);

    // Without a well-known URL, every endpoint must be set.
    await clear();
    await ctx.deps.options.set("oidc.client_id", "cid");
    await ctx.deps.options.set("oidc.client_secret", "csecret");
    await ctx.deps.options.set("oidc.authorization_endpoint", "https://idp.example/authorize");
    await ctx.deps.options.set("oidc.token_endpoint", "https://idp.example/token");
    expect((await put("oidc.enabled", "true")).body).toEqual({ success: false, message });
    await ctx.deps.options.set("oidc.user_info_endpoint", "https://idp.example/userinfo");
    expect((await put("oidc.enabled", "true")).body.success).toBe(true);
    expect((await put("oidc.enabled", "false")).body.success).toBe(true);
  });

  test("OIDC URLs use https; plain http only for a provider on this machine", async () => {
    for (const key of [
      "oidc.well_known",
      "oidc.authorization_endpoint",
      "oidc.token_endpoint",
      "oidc.user_info_endpoint",
    ]) {
      for (const bad of [
        "http://idp.example/x",
        "http://10.0.0.5/x",
        "http://127.0.0.1.evil.example/x",
        "ftp://idp.example/x",
      ]) {
        expect((await put(key, bad)).body).toEqual({
          success: false,
          message: `${key} must start with https:// (http:// only for a provider on this machine)`,
        });
      }
      for (const good of [
        "https://idp.example/x",
        "http://127.0.0.1:8080/x",
        "http://localhost/x",
        "http://[::1]:9000/x",
        "",
      ]) {
        expect((await put(key, good)).body.success).toBe(true);
      }
    }
  });
});
