// Pure pieces of the relay: channel choice, pricing arithmetic, SSE framing, stream usage handling.
import { describe, expect, test } from "bun:test";
import { pickChannel, retryable, type Candidate } from "../../server/relay/select.ts";
import { preConsumeQuota, priceFor, quotaFor, type Price } from "../../server/relay/billing.ts";
import { OptionStore } from "../../server/modules/option/store.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../server/catalogue/models.ts";
import { DEFAULT_COMPLETION_RATIO, DEFAULT_MODEL_RATIO } from "../../server/catalogue/ratios.ts";
import { SseReader } from "../../server/relay/formats/sse.ts";
import { openaiAdaptor, upstreamUrl } from "../../server/relay/providers/openai/index.ts";
import { adaptorFor, baseUrlOf } from "../../server/relay/providers/index.ts";
import { usageFrom } from "../../server/relay/providers/openai/usage.ts";
import { countTokens } from "../../server/relay/tokenizer.ts";

const ratioPrice = (over: Partial<Price> = {}): Price => ({
  perCall: false,
  modelPrice: -1,
  modelRatio: 1,
  completionRatio: 1,
  cacheRatio: 1,
  cacheCreationRatio: 1.25,
  groupRatio: 1,
  ...over,
});

describe("channel choice", () => {
  const cands: Candidate[] = [
    { channelId: 1, priority: 10, weight: 1 },
    { channelId: 2, priority: 10, weight: 3 },
    { channelId: 3, priority: 0, weight: 100 },
  ];

  test("the highest priority tier is used while it has an untried channel", () => {
    for (let i = 0; i < 50; i++) expect([1, 2]).toContain(pickChannel(cands, new Set())!);
  });

  test("weights split traffic inside a tier", () => {
    // random() below 1/4 of the tier's weight lands on channel 1 (weight 1 of 4), above it on channel 2.
    expect(pickChannel(cands, new Set(), () => 0.2)).toBe(1);
    expect(pickChannel(cands, new Set(), () => 0.3)).toBe(2);
  });

  test("failed channels are never picked again; the next tier follows", () => {
    expect(pickChannel(cands, new Set([1]), () => 0)).toBe(2);
    expect(pickChannel(cands, new Set([1, 2]), () => 0.99)).toBe(3);
    expect(pickChannel(cands, new Set([1, 2, 3]))).toBeNull();
  });

  test("all-zero weights pick uniformly", () => {
    const zero = [
      { channelId: 7, priority: 0, weight: 0 },
      { channelId: 8, priority: 0, weight: 0 },
    ];
    expect(pickChannel(zero, new Set(), () => 0.1)).toBe(7);
    expect(pickChannel(zero, new Set(), () => 0.9)).toBe(8);
  });

  test("429, 5xx, timeouts and connection errors are retryable; other 4xx are not", () => {
    for (const s of [0, 408, 429, 500, 502, 503]) expect(retryable(s)).toBe(true);
    for (const s of [400, 401, 403, 404, 422]) expect(retryable(s)).toBe(false);
    // AutomaticRetryStatusCodes replaces the rule; no answer at all is always worth another channel.
    const site = (v: string) => ({ get: (k: string) => (k === "AutomaticRetryStatusCodes" ? v : "") });
    for (const s of [408, 429, 500, 599]) expect(retryable(s, site("408,429,500-599"))).toBe(true);
    for (const s of [400, 401, 404, 499]) expect(retryable(s, site("408,429,500-599"))).toBe(false);
    expect(retryable(401, site("401-407,500-503"))).toBe(true);
    expect(retryable(504, site("401-407,500-503"))).toBe(false);
    expect(retryable(0, site(""))).toBe(true);
  });
});

describe("pricing", () => {
  test("ratio 1 costs one quota unit per input token; completion ratio weights output", () => {
    expect(quotaFor(ratioPrice(), { prompt_tokens: 100, completion_tokens: 0, total_tokens: 100 })).toBe(100);
    expect(
      quotaFor(ratioPrice({ modelRatio: 2.5, completionRatio: 4, groupRatio: 0.5 }), {
        prompt_tokens: 100,
        completion_tokens: 10,
        total_tokens: 110,
      }),
    ).toBe(Math.round(0.5 * 2.5 * (100 + 40)));
  });

  test("cached prompt tokens are billed once, at the cache ratio", () => {
    const u = { prompt_tokens: 1000, completion_tokens: 0, total_tokens: 1000, cached_tokens: 800 };
    expect(quotaFor(ratioPrice({ cacheRatio: 0.25 }), u)).toBe(200 + 200);
  });

  test("a fixed price is price × 500000 × group ratio per call", () => {
    const p = ratioPrice({ perCall: true, modelPrice: 0.04, groupRatio: 1.5 });
    expect(quotaFor(p, { prompt_tokens: 999, completion_tokens: 999, total_tokens: 0 })).toBe(30000);
    expect(quotaFor(p, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, 2)).toBe(60000);
  });

  test("a used priced model never rounds down to free", () => {
    expect(
      quotaFor(ratioPrice({ modelRatio: 0.01 }), { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 }),
    ).toBe(1);
    expect(quotaFor(ratioPrice({ modelRatio: 0 }), { prompt_tokens: 50, completion_tokens: 0, total_tokens: 50 })).toBe(
      0,
    );
  });

  test("pre-consumption holds the prompt estimate plus max_tokens, or PreConsumedQuota without it", () => {
    expect(preConsumeQuota(ratioPrice(), 30, 100, 500)).toBe(130);
    expect(preConsumeQuota(ratioPrice(), 30, 0, 500)).toBe(530);
    expect(preConsumeQuota(ratioPrice({ perCall: true, modelPrice: 0.02 }), 30, 0, 500, 3)).toBe(30000);
  });
});

describe("default prices", () => {
  // Options as shipped: the store falls back to OPTION_DEFAULTS for every key it has not loaded.
  const shipped = new OptionStore(null as never);
  const withOptions = (over: Record<string, unknown>): OptionStore => {
    const store = new OptionStore(null as never);
    for (const [k, v] of Object.entries(over)) store.all().set(k, JSON.stringify(v));
    return store;
  };

  test("every model of the catalogue's default model lists has a price out of the box", () => {
    const unpriced: string[] = [];
    for (const models of Object.values(DEFAULT_CHANNEL_MODELS)) {
      for (const m of models) {
        try {
          priceFor(shipped, m, "default", false);
        } catch {
          unpriced.push(m);
        }
      }
    }
    expect([...new Set(unpriced)]).toEqual([]);
  });

  test("recent Claude and Gemini models carry their list prices", () => {
    // ratio = USD per 1M input tokens / 2; completion ratio = output price / input price
    const list: [string, number, number][] = [
      ["claude-3-haiku-20240307", 0.25, 1.25],
      ["claude-3-opus-20240229", 15, 75],
      ["claude-opus-4-1-20250805", 15, 75],
      ["claude-sonnet-4-5-20250929", 3, 15],
      ["claude-haiku-4-5-20251001", 1, 5],
      ["gemini-2.5-flash-lite", 0.1, 0.4],
      ["gemini-2.0-flash-lite", 0.075, 0.3],
    ];
    for (const [m, input, output] of list) {
      expect([m, DEFAULT_MODEL_RATIO[m]]).toEqual([m, input / 2]);
      expect([m, DEFAULT_COMPLETION_RATIO[m]]).toEqual([m, output / input]);
    }
    expect(DEFAULT_MODEL_RATIO["gemini-embedding-001"]).toBe(0.15 / 2);
  });

  test("thinking-adapter suffixes are priced as their base model", () => {
    const base = priceFor(shipped, "gemini-2.5-flash", "default", false);
    for (const m of ["gemini-2.5-flash-thinking", "gemini-2.5-flash-thinking-1024", "gemini-2.5-flash-nothinking"]) {
      expect(priceFor(shipped, m, "default", false)).toEqual(base);
    }
    const opus = priceFor(shipped, "claude-opus-4-20250514", "default", false);
    expect(priceFor(shipped, "claude-opus-4-20250514-thinking", "default", false)).toEqual(opus);
    expect(opus.modelRatio).toBe(7.5);
    expect(opus.completionRatio).toBe(5);
    expect(opus.cacheRatio).toBe(0.1);
  });

  test("a suffix on an unpriced model stays unpriced", () => {
    expect(() => priceFor(shipped, "no-such-model-thinking", "default", false)).toThrow("no-such-model-thinking");
  });

  test("an explicit price for the suffixed name wins over the base model's", () => {
    const store = withOptions({
      ModelRatio: { "gemini-2.5-flash": 0.15, "gemini-2.5-flash-thinking": 2 },
      CompletionRatio: { "gemini-2.5-flash": 8, "gemini-2.5-flash-thinking": 3 },
      ModelPrice: { "claude-sonnet-4-20250514-thinking": 0.5 },
    });
    const thinking = priceFor(store, "gemini-2.5-flash-thinking", "default", false);
    expect([thinking.modelRatio, thinking.completionRatio]).toEqual([2, 3]);
    // Only the plain suffix was configured; the budget variant still falls back to the base model.
    expect(priceFor(store, "gemini-2.5-flash-thinking-512", "default", false).modelRatio).toBe(0.15);
    const fixed = priceFor(store, "claude-sonnet-4-20250514-thinking", "default", false);
    expect([fixed.perCall, fixed.modelPrice]).toEqual([true, 0.5]);
  });
});

describe("server-sent events", () => {
  test("events split across chunks and CRLF line ends are reassembled", () => {
    const r = new SseReader();
    const enc = new TextEncoder();
    const got = [
      ...r.push(enc.encode('data: {"a"')),
      ...r.push(enc.encode(":1}\r\n\r\nevent: x\r\ndata: 2\r\n")),
      ...r.push(enc.encode("\r\ndata: [DONE]\n\n")),
    ];
    expect(got.map((e) => e.data)).toEqual(['{"a":1}', "2", "[DONE]"]);
    expect(got[1].event).toBe("x");
  });

  test("a multi-byte character split between chunks survives", () => {
    const r = new SseReader();
    const bytes = new TextEncoder().encode("data: héllo\n\n");
    const events = [...r.push(bytes.slice(0, 8)), ...r.push(bytes.slice(8))];
    expect(events[0].data).toBe("héllo");
  });

  test("an unterminated last event is still delivered at the end", () => {
    const r = new SseReader();
    expect(r.push(new TextEncoder().encode("data: tail"))).toEqual([]);
    expect(r.finish().map((e) => e.data)).toEqual(["tail"]);
  });
});

describe("OpenAI-compatible adaptor", () => {
  const call: any = {
    clientWantsUsage: false,
    channel: { type: 1, openai_organization: "org-1" },
    key: "k",
    baseUrl: "http://u",
    mode: "chat",
  };

  test("usage chunks the gateway requested are kept from clients that did not ask", () => {
    const m = openaiAdaptor.streamMapper(call);
    const usageChunk = JSON.stringify({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
    });
    expect(m.event({ data: usageChunk, raw: `data: ${usageChunk}\n\n` })).toBe("");
    expect(m.usage()).toEqual({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8, cached_tokens: 0 });
    const asked = openaiAdaptor.streamMapper({ ...call, clientWantsUsage: true });
    expect(asked.event({ data: usageChunk, raw: `data: ${usageChunk}\n\n` })).toBe(`data: ${usageChunk}\n\n`);
  });

  test("generated text is collected for counting when no usage comes", () => {
    const m = openaiAdaptor.streamMapper(call);
    for (const t of ["Hel", "lo"]) {
      const d = JSON.stringify({ choices: [{ delta: { content: t } }] });
      m.event({ data: d, raw: `data: ${d}\n\n` });
    }
    expect(m.generatedText()).toBe("Hello");
    expect(m.usage()).toBeNull();
  });

  test("URLs: /v1 is added unless the base URL already ends in a version", () => {
    expect(upstreamUrl("https://api.openai.com", "chat")).toBe("https://api.openai.com/v1/chat/completions");
    expect(upstreamUrl("https://open.bigmodel.cn/api/paas/v4", "embeddings")).toBe(
      "https://open.bigmodel.cn/api/paas/v4/embeddings",
    );
    expect(baseUrlOf({ type: 43, base_url: "" })).toBe("https://api.deepseek.com");
    expect(baseUrlOf({ type: 8, base_url: "http://h:1/" })).toBe("http://h:1");
  });

  test("auth header carries the key and the OpenAI organization", async () => {
    const req = await openaiAdaptor.buildRequest(call, { model: "m" });
    expect(req.headers.authorization).toBe("Bearer k");
    expect(req.headers["openai-organization"]).toBe("org-1");
  });

  test("OpenAI-speaking channel types share the adaptor", () => {
    for (const t of [1, 4, 8, 20, 25, 42, 43, 48]) expect(adaptorFor(t)?.kind).toBe("openai");
    expect(adaptorFor(2)).toBeUndefined();
  });

  test("Responses API usage (input/output tokens) is understood", () => {
    expect(
      usageFrom({ usage: { input_tokens: 4, output_tokens: 6, input_tokens_details: { cached_tokens: 2 } } }),
    ).toEqual({ prompt_tokens: 4, completion_tokens: 6, total_tokens: 10, cached_tokens: 2 });
    // DeepSeek's own spelling of cache hits
    expect(
      usageFrom({
        usage: {
          prompt_tokens: 140,
          completion_tokens: 8,
          total_tokens: 148,
          prompt_cache_hit_tokens: 100,
          prompt_cache_miss_tokens: 40,
        },
      }),
    ).toEqual({ prompt_tokens: 140, completion_tokens: 8, total_tokens: 148, cached_tokens: 100 });
  });

  test("the tokenizer counts real tokens", async () => {
    expect(await countTokens("Hello world")).toBe(2);
  });
});

describe("price memo", () => {
  test("a price is recomputed after any option changes, and never shared between option stores", async () => {
    const rows = new Map<string, string>([["ModelRatio", JSON.stringify({ "memo-model": 2 })]]);
    const db = {
      selectFrom: () => ({
        select: () => ({ execute: async () => [...rows].map(([key, value]) => ({ key, value })) }),
      }),
    };
    const store = new OptionStore(db as never);
    await store.load();
    const first = priceFor(store, "memo-model", "default", false);
    expect(first.modelRatio).toBe(2);
    expect(priceFor(store, "memo-model", "default", false)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    rows.set("GroupRatio", JSON.stringify({ default: 3 }));
    rows.set("ModelRatio", JSON.stringify({ "memo-model": 5 }));
    await store.load();
    const second = priceFor(store, "memo-model", "default", false);
    expect([second.modelRatio, second.groupRatio]).toEqual([5, 3]);
    const other = new OptionStore(db as never);
    expect(() => priceFor(other, "memo-model", "default", false)).toThrow("memo-model");
  });
});
