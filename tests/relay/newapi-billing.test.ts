// Billing rules new-api databases rely on: built-in completion ratios when CompletionRatio has no entry,
// group × group ratios, auto groups, cache-creation, image and audio ratios.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { relayFixture, userRow, type RelayFixture } from "./fixtures.ts";
import { priceFor, quotaFor } from "../../server/relay/billing.ts";
import { builtinCompletionRatio } from "../../server/catalogue/ratios.ts";
import { usageFrom } from "../../server/relay/providers/openai/usage.ts";
import { OptionStore } from "../../server/modules/option/store.ts";

describe("new-api's built-in completion ratios", () => {
  test("by model family, as new-api applies them", () => {
    const cases: [string, number | undefined][] = [
      ["gpt-3.5-turbo", 3],
      ["gpt-3.5-turbo-0125", 3],
      ["gpt-3.5-turbo-1106", 2],
      ["gpt-3.5-turbo-16k", 4 / 3],
      ["gpt-4o", 4],
      ["gpt-4o-mini", 4],
      ["gpt-4o-2024-05-13", 3],
      ["gpt-4o-mini-tts", 20],
      ["gpt-4-turbo", 3],
      ["gpt-4-1106-preview", 2],
      ["gpt-4", 2],
      ["gpt-4.5-preview", 2],
      ["gpt-5", 8],
      ["gpt-5-mini", 8],
      ["o1-mini", 4],
      ["o3", 4],
      ["chatgpt-4o-latest", 3],
      ["claude-3-haiku-20240307", 5],
      ["claude-3-5-sonnet-latest", 5],
      ["claude-sonnet-4-20250514", 5],
      ["claude-opus-4-1", 5],
      ["claude-2.1", 3],
      ["claude-instant-1.2", 3],
      ["mistral-large-latest", 3],
      ["gemini-1.5-pro", 4],
      ["gemini-2.0-flash", 4],
      ["gemini-2.5-pro", 8],
      ["gemini-2.5-flash-lite", 4],
      ["gemini-2.5-flash", 2.5 / 0.3],
      ["gemini-pro", 4],
      ["command-r", 3],
      ["command-r-plus", 5],
      ["command-light", 4],
      ["ERNIE-Speed-128K", 2],
      ["llama3-8b-8192", 2],
      ["gpt-4-all", 2],
      ["deepseek-chat", undefined],
      ["qwen-max", undefined],
      ["some-model", undefined],
    ];
    for (const [model, ratio] of cases)
      expect({ model, ratio: builtinCompletionRatio(model) }).toEqual({ model, ratio });
  });
});

describe("prices and ratios (unit)", () => {
  const options = new OptionStore(null as any);
  const set = (k: string, v: unknown) => options.all().set(k, JSON.stringify(v));
  beforeAll(() => {
    set("ModelRatio", { "gpt-3.5-turbo": 0.25, "img-model": 2.5, "audio-model": 1, "claude-3-opus": 7.5 });
    set("CompletionRatio", { "audio-model": 2 });
    set("ModelPrice", {});
    set("CacheRatio", {});
    set("GroupRatio", { default: 1, vip: 2 });
    set("GroupGroupRatio", { vip: { default: 0.5 } });
    set("ImageRatio", { "img-model": 2 });
    set("AudioRatio", { "audio-model": 8 });
    set("AudioCompletionRatio", { "audio-model": 3 });
    set("CreateCacheRatio", { "claude-3-opus": 2 });
  });

  test("CompletionRatio without an entry uses the built-in ratio; an entry wins", () => {
    expect(priceFor(options, "gpt-3.5-turbo", "default", false).completionRatio).toBe(3);
    set("CompletionRatio", { "audio-model": 2, "gpt-3.5-turbo": 1.5 });
    expect(priceFor(options, "gpt-3.5-turbo", "default", false).completionRatio).toBe(1.5);
    set("CompletionRatio", { "audio-model": 2 });
  });

  test("GroupGroupRatio replaces GroupRatio for the caller's own group; other pairs keep GroupRatio", () => {
    expect(priceFor(options, "gpt-3.5-turbo", "default", false, "vip").groupRatio).toBe(0.5);
    expect(priceFor(options, "gpt-3.5-turbo", "vip", false, "vip").groupRatio).toBe(2);
    expect(priceFor(options, "gpt-3.5-turbo", "default", false, "default").groupRatio).toBe(1);
    expect(priceFor(options, "gpt-3.5-turbo", "default", false).groupRatio).toBe(1);
  });

  test("image, audio and cache-creation tokens are billed at their ratios, each token once", () => {
    const img = priceFor(options, "img-model", "default", false);
    // 100 prompt tokens of which 40 are image tokens: 60 + 40 × 2 = 140; 10 completion × 1 (no built-in)
    expect(quotaFor(img, { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, image_tokens: 40 })).toBe(
      Math.round(2.5 * (60 + 80 + 10)),
    );
    const audio = priceFor(options, "audio-model", "default", false);
    // in: 50 text + 50 audio × 8; out: 20 text × 2 + 10 audio × 8 × 3
    expect(
      quotaFor(audio, {
        prompt_tokens: 100,
        completion_tokens: 30,
        total_tokens: 130,
        audio_prompt_tokens: 50,
        audio_completion_tokens: 10,
      }),
    ).toBe(50 + 400 + 40 + 240);
    const claude = priceFor(options, "claude-3-opus", "default", false);
    expect(claude.cacheCreationRatio).toBe(2);
    expect(priceFor(options, "gpt-3.5-turbo", "default", false).cacheCreationRatio).toBe(1.25);
    expect(
      quotaFor(claude, { prompt_tokens: 100, completion_tokens: 0, total_tokens: 100, cache_creation_tokens: 100 }),
    ).toBe(Math.round(7.5 * 200));
  });

  test("OpenAI usage details carry image and audio tokens", () => {
    const u = usageFrom({
      usage: {
        prompt_tokens: 100,
        completion_tokens: 30,
        total_tokens: 130,
        prompt_tokens_details: { cached_tokens: 0, image_tokens: 40, audio_tokens: 5 },
        completion_tokens_details: { audio_tokens: 10 },
      },
    });
    expect(u).toMatchObject({ image_tokens: 40, audio_prompt_tokens: 5, audio_completion_tokens: 10 });
    expect(
      usageFrom({ usage: { input_tokens: 10, output_tokens: 3, input_tokens_details: { image_tokens: 7 } } })
        ?.image_tokens,
    ).toBe(7);
    expect("image_tokens" in (usageFrom({ usage: { prompt_tokens: 1, completion_tokens: 1 } }) ?? {})).toBe(false);
  });
});

for (const kind of storageKinds()) {
  describe(`relay billing of new-api's pricing options [${kind}]`, () => {
    let fx: RelayFixture;
    beforeAll(async () => {
      fx = await relayFixture(kind, { usage: { prompt_tokens: 9, completion_tokens: 5 } });
      await fx.option("ModelRatio", JSON.stringify({ "gpt-3.5-turbo": 0.25, "gpt-4o": 1.25 }));
      await fx.option("CompletionRatio", "{}");
      await fx.option("GroupRatio", JSON.stringify({ default: 1, vip: 2, svip: 3 }));
      await fx.option(
        "UserUsableGroups",
        JSON.stringify({ default: "default", vip: "vip", svip: "svip", auto: "auto" }),
      );
      await fx.channel({ base_url: fx.mock.url, models: ["gpt-3.5-turbo"], groups: ["default"] });
      await fx.channel({ base_url: fx.mock.url, models: ["gpt-4o"], groups: ["vip"] });
    });
    afterAll(() => fx.close());

    const chat = (key: string, model: string) =>
      fx.call("/v1/chat/completions", key, { model, messages: [{ role: "user", content: "hi" }] });
    const lastLog = async (userId: number) =>
      fx.ctx.deps.db
        .selectFrom("logs")
        .selectAll()
        .where("user_id", "=", userId)
        .where("type", "=", 2)
        .orderBy("id", "desc")
        .executeTakeFirstOrThrow();

    test("a gpt-3.5-turbo call of 9+5 tokens costs 0.25 × (9 + 5 × 3) = 6 with no CompletionRatio entry (new-api's built-in 3)", async () => {
      const u = await fx.user(1_000_000);
      const t = await fx.token(u.id);
      expect((await chat(t.key, "gpt-3.5-turbo")).status).toBe(200);
      await fx.flush();
      const log = await lastLog(u.id);
      expect(Number(log.quota)).toBe(6);
      expect(JSON.parse(log.other).completion_ratio).toBe(3);
      expect(Number((await userRow(fx, u.id)).used_quota)).toBe(6);
    });

    test("GroupGroupRatio: a vip user's call in the default group costs the pair's ratio", async () => {
      await fx.option("GroupGroupRatio", JSON.stringify({ vip: { default: 0.5 } }));
      const vip = await fx.user(1_000_000, { group: "vip" });
      const t = await fx.token(vip.id, { group: "default" });
      expect((await chat(t.key, "gpt-3.5-turbo")).status).toBe(200);
      await fx.flush();
      expect(Number((await lastLog(vip.id)).quota)).toBe(3);
      await fx.option("GroupGroupRatio", "{}");
    });

    test("auto groups: the first group of AutoGroups the user may use that serves the model, priced and logged there", async () => {
      await fx.option("AutoGroups", JSON.stringify(["svip", "vip", "default"]));
      const u = await fx.user(10_000_000);
      const t = await fx.token(u.id, { group: "auto" });
      // gpt-4o is served only in vip: 1.25 × (9 + 5 × 4) × 2 = 72.5 → 73 (svip has no channel for it)
      expect((await chat(t.key, "gpt-4o")).status).toBe(200);
      await fx.flush();
      let log = await lastLog(u.id);
      expect(log.group).toBe("vip");
      expect(Number(log.quota)).toBe(73);
      // gpt-3.5-turbo only in default: 6 × 1
      expect((await chat(t.key, "gpt-3.5-turbo")).status).toBe(200);
      await fx.flush();
      log = await lastLog(u.id);
      expect(log.group).toBe("default");
      expect(Number(log.quota)).toBe(6);
      // Groups outside AutoGroups are never used: without vip in the list gpt-4o has no channel.
      await fx.option("AutoGroups", JSON.stringify(["default"]));
      const r = await chat(t.key, "gpt-4o");
      expect(r.status).toBe(404);
      expect((await r.json()).error.message).toContain("group auto");
      await fx.option("AutoGroups", JSON.stringify(["default"]));
    });
  });
}
