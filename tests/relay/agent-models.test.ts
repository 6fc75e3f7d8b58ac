// The models coding agents send by default are priced out of the box at their providers' list prices; a model
// nobody priced is refused as new-api refuses it (400 model_price_error, in the caller's format, naming the
// model and the setting that would let it through) unless self-use mode or the user's
// accept_unset_model_ratio_model is on.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { priceFor } from "../../server/relay/billing.ts";
import { OptionStore } from "../../server/modules/option/store.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { ROLE } from "../../server/catalogue/index.ts";

describe("the default catalogue prices what the agents send", () => {
  // Options as shipped: the store falls back to OPTION_DEFAULTS for every key it has not loaded.
  const shipped = new OptionStore(null as never);
  // [model, USD per 1M input, per 1M output, per 1M cached input] from the providers' price lists.
  const list: [string, number, number, number][] = [
    // Claude Code
    ["claude-sonnet-4-5", 3, 15, 0.3],
    ["claude-sonnet-4-5-20250929", 3, 15, 0.3],
    ["claude-sonnet-4-6", 3, 15, 0.3],
    ["claude-sonnet-4-0", 3, 15, 0.3],
    ["claude-haiku-4-5", 1, 5, 0.1],
    ["claude-haiku-4-5-20251001", 1, 5, 0.1],
    ["claude-opus-4-5", 5, 25, 0.5],
    ["claude-opus-4-5-20251101", 5, 25, 0.5],
    ["claude-opus-4-6", 5, 25, 0.5],
    ["claude-opus-4-7", 5, 25, 0.5],
    ["claude-opus-4-8", 5, 25, 0.5],
    ["claude-opus-4-1", 15, 75, 1.5],
    ["claude-opus-4-0", 15, 75, 1.5],
    ["claude-sonnet-5", 2, 10, 0.2],
    ["claude-sonnet-5-5", 2, 10, 0.1],
    ["claude-opus-5", 5, 25, 0.5],
    ["claude-opus-5-5", 4, 20, 0.2],
    ["claude-haiku-5-5", 0.1, 0.5, 0.01],
    // Codex
    ["gpt-5", 1.25, 10, 0.125],
    ["gpt-5-mini", 0.25, 2, 0.025],
    ["gpt-5-nano", 0.05, 0.4, 0.005],
    ["gpt-5-codex", 1.25, 10, 0.125],
    ["gpt-5.1", 1.25, 10, 0.125],
    ["gpt-5.1-codex", 1.25, 10, 0.125],
    ["gpt-5.1-codex-max", 1.25, 10, 0.125],
    ["gpt-5.1-codex-mini", 0.25, 2, 0.025],
    ["gpt-5.2", 1.75, 14, 0.175],
    ["gpt-5.2-codex", 1.75, 14, 0.175],
    ["gpt-5.3-codex", 1.75, 14, 0.175],
    ["gpt-5.4", 2.5, 15, 0.25],
    ["gpt-5.4-mini", 0.75, 4.5, 0.075],
    ["gpt-5.4-nano", 0.2, 1.25, 0.02],
    ["gpt-5.5", 5, 30, 0.5],
    ["gpt-6.2-sol", 2, 10, 0.1],
    // Gemini CLI
    ["gemini-2.5-pro", 1.25, 10, 0.125],
    ["gemini-2.5-flash", 0.3, 2.5, 0.03],
    ["gemini-2.5-flash-lite", 0.1, 0.4, 0.01],
    ["gemini-3-pro-preview", 2, 12, 0.2],
    ["gemini-3-flash-preview", 0.5, 3, 0.05],
    ["gemini-3.1-pro-preview", 2, 12, 0.2],
    ["gemini-3.1-pro-preview-customtools", 2, 12, 0.2],
    ["gemini-3.5-flash-lite", 0.3, 2.5, 0.03],
    ["gemini-3.8-flash", 0.75, 3.75, 0.075],
  ];
  for (const [model, input, output, cached] of list) {
    test(`${model}: $${input} / $${output} / $${cached} cached per 1M tokens`, () => {
      const p = priceFor(shipped, model, "default", false);
      // ratio = USD per 1M input tokens / 2; completion and cache ratios are relative to the input price
      expect(p.modelRatio).toBeCloseTo(input / 2, 9);
      expect(p.completionRatio).toBeCloseTo(output / input, 5);
      expect(p.cacheRatio).toBeCloseTo(cached / input, 5);
    });
  }
});

describe("a model without a price", () => {
  let fx: RelayFixture;
  let claude: MockUpstream;
  let gemini: MockUpstream;
  let userKey = "";
  let adminKey = "";
  let acceptingKey = "";
  const NEW = "claude-sonnet-9-9";

  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    claude = startClaudeUpstream();
    gemini = startGeminiUpstream();
    await fx.option("ModelRatio", JSON.stringify({}));
    await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: [NEW] });
    await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: ["gemini-9-pro"] });
    await fx.channel({ type: 1, base_url: fx.mock.url, models: ["gpt-9"] });
    const user = await fx.user(500_000_000);
    userKey = (await fx.token(user.id, { remain_quota: 400_000_000 })).key;
    const admin = await fx.user(500_000_000, { role: ROLE.admin });
    adminKey = (await fx.token(admin.id, { remain_quota: 400_000_000 })).key;
    const accepting = await fx.user(500_000_000, { setting: JSON.stringify({ accept_unset_model_ratio_model: true }) });
    acceptingKey = (await fx.token(accepting.id, { remain_quota: 400_000_000 })).key;
  });

  afterAll(async () => {
    claude.stop();
    gemini.stop();
    await fx.close();
  });

  const upstreamCalls = () => claude.requests.length + gemini.requests.length + fx.mock.seen.length;

  test("a Claude client gets a Claude error naming the model and the personal setting; no upstream is called", async () => {
    const before = upstreamCalls();
    const res = await fx.call(
      "/v1/messages",
      userKey,
      { model: NEW, max_tokens: 20, messages: [{ role: "user", content: "hi" }] },
      { "anthropic-version": "2023-06-01" },
    );
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain(NEW);
    expect(body.error.message).toContain("accept_unset_model_ratio_model");
    expect(upstreamCalls()).toBe(before);
  });

  test("an OpenAI client gets an OpenAI error with code model_price_error", async () => {
    const res = await fx.call("/v1/chat/completions", userKey, {
      model: "gpt-9",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe("model_price_error");
    expect(body.error.message).toContain("gpt-9");
  });

  test("a Gemini client gets a Gemini error naming the model", async () => {
    const res = await fx.call("/v1beta/models/gemini-9-pro:generateContent", userKey, {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.status).toBe("INVALID_ARGUMENT");
    expect(body.error.message).toContain("gemini-9-pro");
  });

  test("an administrator is told where to price it and about self-use mode", async () => {
    const res = await fx.call("/v1/chat/completions", adminKey, {
      model: "gpt-9",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(400);
    const message = (await res.json()).error.message;
    expect(message).toContain("gpt-9");
    expect(message).toContain("ModelRatio");
    expect(message).toContain("SelfUseModeEnabled");
  });

  test("a user who accepts models without a price is served (at the unset ratio)", async () => {
    const res = await fx.call(
      "/v1/messages",
      acceptingKey,
      { model: NEW, max_tokens: 20, messages: [{ role: "user", content: "hi" }] },
      { "anthropic-version": "2023-06-01" },
    );
    expect(res.status).toBe(200);
    expect(claude.last().body.model).toBe(NEW);
  });

  test("in self-use mode everyone is served", async () => {
    await fx.option("SelfUseModeEnabled", "true");
    try {
      const res = await fx.call("/v1/chat/completions", userKey, {
        model: "gpt-9",
        messages: [{ role: "user", content: "hi" }],
      });
      expect(res.status).toBe(200);
    } finally {
      await fx.option("SelfUseModeEnabled", "false");
    }
  });
});
