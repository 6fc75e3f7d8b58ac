// /v1/messages and /v1beta generateContent billing on every configured database: the exact quota from
// the usage each format reports, charged to the token and the user, and the consume log written.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { relayFixture, logsOf, tokenRow, userRow, type RelayFixture } from "../relay/fixtures.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

for (const kind of storageKinds()) {
  describe(`native entry points on ${kind}`, () => {
    let fx: RelayFixture;
    let claude: MockUpstream;
    let gemini: MockUpstream;
    beforeAll(async () => {
      fx = await relayFixture(kind);
      claude = startClaudeUpstream();
      gemini = startGeminiUpstream();
      await fx.option(
        "ModelRatio",
        JSON.stringify({ "claude-sonnet-4-20250514": 2, "gemini-2.5-flash": 1, "gpt-native": 1 }),
      );
      await fx.option(
        "CompletionRatio",
        JSON.stringify({ "claude-sonnet-4-20250514": 5, "gemini-2.5-flash": 4, "gpt-native": 2 }),
      );
      await fx.option("CacheRatio", JSON.stringify({ "claude-sonnet-4-20250514": 0.1 }));
      await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: ["claude-sonnet-4-20250514"] });
      await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: ["gemini-2.5-flash"] });
      await fx.channel({ type: 1, base_url: fx.mock.url, models: ["gpt-native"] });
    });
    afterAll(async () => {
      claude.stop();
      gemini.stop();
      await fx.close();
    });

    async function send(path: string, headers: Record<string, string>, body: unknown) {
      const res = await fx.ctx.app.handle(
        new Request("http://localhost" + path, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        }),
      );
      const text = await res.text();
      await fx.flush();
      return { status: res.status, text };
    }

    test("Claude stream on a Claude channel: cache reads and writes billed at their ratios", async () => {
      const user = await fx.user(1_000_000);
      const t = await fx.token(user.id, { remain_quota: 500_000 });
      const r = await send(
        "/v1/messages",
        { "x-api-key": t.key },
        {
          model: "claude-sonnet-4-20250514",
          max_tokens: 100,
          stream: true,
          messages: [{ role: "user", content: "hi" }],
        },
      );
      expect(r.status).toBe(200);
      expect(r.text).toContain("event: message_stop");
      // 2 × (12 + 3 × 0.1 + 2 × 1.25 + 7 × 5) = 99.6
      const cost = 100;
      expect((await tokenRow(fx, t.id)).remain_quota).toBe(500_000 - cost);
      expect((await userRow(fx, user.id)).quota).toBe(1_000_000 - cost);
      const [log] = await logsOf(fx, user.id);
      expect([log!.quota, log!.prompt_tokens, log!.completion_tokens, Boolean(log!.is_stream)]).toEqual([
        cost,
        17,
        7,
        true,
      ]);
    });

    test("Gemini generateContent on an OpenAI channel: billed from the OpenAI usage", async () => {
      const user = await fx.user(1_000_000);
      const t = await fx.token(user.id);
      const r = await send(
        "/v1beta/models/gpt-native:generateContent",
        { "x-goog-api-key": t.key },
        { contents: [{ role: "user", parts: [{ text: "hi" }] }] },
      );
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text).usageMetadata).toMatchObject({ promptTokenCount: 10, candidatesTokenCount: 20 });
      const [log] = await logsOf(fx, user.id);
      expect(log!.quota).toBe(10 + 20 * 2);
      expect((await userRow(fx, user.id)).quota).toBe(1_000_000 - 50);
    });

    test("a Claude call refused upstream costs nothing", async () => {
      const user = await fx.user(1_000_000);
      const t = await fx.token(user.id, { remain_quota: 500_000 });
      await fx.channel({ type: 14, key: "wrong", base_url: claude.url, models: ["claude-refused"] });
      await fx.option(
        "ModelRatio",
        JSON.stringify({ ...fx.ctx.deps.options.json("ModelRatio", {}), "claude-refused": 1 }),
      );
      const r = await send(
        "/v1/messages",
        { authorization: `Bearer ${t.key}` },
        { model: "claude-refused", max_tokens: 100, messages: [{ role: "user", content: "hi" }] },
      );
      expect(r.status).toBe(401);
      expect(JSON.parse(r.text)).toEqual({
        type: "error",
        error: { type: "authentication_error", message: "invalid x-api-key" },
      });
      expect((await tokenRow(fx, t.id)).remain_quota).toBe(500_000);
      expect((await userRow(fx, user.id)).quota).toBe(1_000_000);
    });
  });
}

describe("global.pass_through_request_enabled", () => {
  let fx: RelayFixture;
  let claude: MockUpstream;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    claude = startClaudeUpstream();
    await fx.option("ModelRatio", JSON.stringify({ "gpt-pass": 1, "claude-pass": 1 }));
    await fx.channel({
      type: 1,
      base_url: fx.mock.url,
      models: ["gpt-pass"],
      model_mapping: { "gpt-pass": "gpt-mapped" },
      param_override: { temperature: 0 },
    });
    await fx.channel({
      type: 14,
      key: "claude-key",
      base_url: claude.url,
      models: ["claude-pass"],
      model_mapping: { "claude-pass": "claude-mapped" },
    });
  });
  afterAll(async () => {
    claude.stop();
    await fx.close();
  });

  test("off: model mapping and overrides apply; on: the body goes upstream exactly as the client sent it", async () => {
    const user = await fx.user(1_000_000);
    const t = await fx.token(user.id);
    const body = {
      model: "gpt-pass",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      vendor_extension: { a: 1 },
    };
    await (await fx.call("/v1/chat/completions", t.key, body)).text();
    expect(fx.mock.seen.at(-1)!.body).toMatchObject({
      model: "gpt-mapped",
      temperature: 0,
      stream_options: { include_usage: true },
    });
    await fx.option("global.pass_through_request_enabled", "true");
    await (await fx.call("/v1/chat/completions", t.key, body)).text();
    expect(fx.mock.seen.at(-1)!.body).toEqual(body);
    const claudeBody = {
      model: "claude-pass",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
      metadata: { user_id: "u" },
    };
    const res = await fx.call("/v1/messages", t.key, claudeBody);
    expect(res.status).toBe(200);
    expect(JSON.parse(claude.last().raw)).toEqual(claudeBody);
    await fx.option("global.pass_through_request_enabled", "false");
  });
});
