// Prompt caching, billed as the upstream reports it: Claude's cache reads at CacheRatio, its cache writes at
// CreateCacheRatio (5-minute TTL) or CreateCacheRatio × 1.6 (1-hour TTL, 2× input at the default 1.25), OpenAI's
// cached_tokens and Gemini's cachedContentTokenCount at CacheRatio; streamed or not, native or converted. The
// client's cache_control breakpoints reach the Claude upstream where it put them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { callAsNewUser, NEW_USER_QUOTA, sharedRelayFixture, userRow } from "./fixtures.ts";
import { CACHE_1H_WRITE_FACTOR, priceFor, quotaFor, type Price } from "../../server/relay/billing.ts";
import { usageFromClaude } from "../../server/relay/formats/claude/upstream.ts";
import { toClaudeRequest } from "../../server/relay/formats/claude/upstream.ts";
import { responsesToChat } from "../../server/relay/formats/responses/request.ts";
import { OptionStore } from "../../server/modules/option/store.ts";
import { CLAUDE_CACHE, CLAUDE_USAGE, startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { GEMINI_CACHED, GEMINI_USAGE, startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import { makeServiceAccount, startVertexUpstream, type VertexMock } from "../mocks/vertex-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { awsAdaptor } from "../../server/relay/providers/aws/index.ts";
import { vertexAdaptor } from "../../server/relay/providers/vertex/index.ts";
import { channel, makeCall, run } from "../providers/harness.ts";

const price = (p: Partial<Price> = {}): Price => ({
  perCall: false,
  modelPrice: -1,
  modelRatio: 1.5,
  completionRatio: 5,
  cacheRatio: 0.1,
  cacheCreationRatio: 1.25,
  groupRatio: 1,
  ...p,
});

describe("the billing rules", () => {
  const usage = {
    prompt_tokens: 12 + 3000 + 1000 + 2000,
    completion_tokens: 7,
    total_tokens: 6019,
    cached_tokens: 3000,
    cache_creation_tokens: 3000,
    cache_creation_1h_tokens: 2000,
  };

  test("reads at CacheRatio, 5-minute writes at CreateCacheRatio, 1-hour writes at CreateCacheRatio × 1.6, rounded half up", () => {
    expect(CACHE_1H_WRITE_FACTOR * 1.25).toBe(2);
    // 1.5 × (12 + 3000 × 0.1 + 1000 × 1.25 + 2000 × 2 + 7 × 5) = 1.5 × 5597 = 8395.5
    expect(quotaFor(price(), usage)).toBe(8396);
    // The same writes with no TTL reported are all 5-minute ones: 1.5 × (12 + 300 + 3000 × 1.25 + 35)
    expect(quotaFor(price(), { ...usage, cache_creation_1h_tokens: undefined })).toBe(Math.round(1.5 * 4097));
    // An operator's CreateCacheRatio prices both TTLs: 1.5 for 5 minutes, 2.4 for an hour.
    expect(quotaFor(price({ cacheCreationRatio: 1.5 }), usage)).toBe(Math.round(1.5 * (12 + 300 + 1500 + 4800 + 35)));
    // The product is a binary float, as in new-api (2.4000000000000004), whose decimals then bill it as printed.
    expect(priceFor(options({ CreateCacheRatio: { m: 1.5 } }), "m", "default", true).cacheCreation1hRatio).toBe(
      1.5 * 1.6,
    );
    expect(priceFor(options({}), "m", "default", true).cacheCreation1hRatio).toBe(2);
    // Group ratio multiplies the whole.
    expect(quotaFor(price({ groupRatio: 2 }), usage)).toBe(16791);
  });

  test("rounding is new-api's decimal rounding, not binary floating point's", () => {
    // 0.7 × 45 is 31.499999999999996 in binary floating point; new-api's decimals make it 31.5, billed 32.
    expect(0.7 * 45).toBeLessThan(31.5);
    expect(
      quotaFor(price({ modelRatio: 0.7, completionRatio: 1 }), {
        prompt_tokens: 45,
        completion_tokens: 0,
        total_tokens: 45,
      }),
    ).toBe(32);
    expect(
      quotaFor(price({ modelRatio: 0.1, groupRatio: 0.7, completionRatio: 1 }), {
        prompt_tokens: 150,
        completion_tokens: 0,
        total_tokens: 150,
      }),
    ).toBe(11);
  });

  test("Claude's usage keeps the TTL split; writes it leaves unaccounted for are 5-minute ones", () => {
    const split = usageFromClaude({
      input_tokens: 12,
      cache_read_input_tokens: 3000,
      cache_creation_input_tokens: 3000,
      output_tokens: 7,
      cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
    });
    expect(split).toMatchObject({
      prompt_tokens: 6012,
      prompt_tokens_details: { cached_tokens: 3000, cached_creation_tokens: 3000 },
      claude_cache_creation_5_m_tokens: 1000,
      claude_cache_creation_1_h_tokens: 2000,
    });
    const remainder = usageFromClaude({
      input_tokens: 1,
      cache_creation_input_tokens: 500,
      output_tokens: 1,
      cache_creation: { ephemeral_1h_input_tokens: 100 },
    });
    expect(remainder).toMatchObject({
      claude_cache_creation_5_m_tokens: 400,
      claude_cache_creation_1_h_tokens: 100,
      prompt_tokens: 501,
    });
    const splitOnly = usageFromClaude({
      input_tokens: 1,
      output_tokens: 1,
      cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 },
    });
    expect(splitOnly.prompt_tokens_details?.cached_creation_tokens).toBe(30);
    expect(
      "claude_cache_creation_1_h_tokens"
        in usageFromClaude({ input_tokens: 1, output_tokens: 1, cache_creation_input_tokens: 4 }),
    ).toBe(false);
  });
});

function options(tables: Record<string, unknown>): OptionStore {
  const o = new OptionStore(null as any);
  for (const [k, v] of Object.entries({
    ModelRatio: { m: 1 },
    ModelPrice: {},
    CacheRatio: {},
    GroupRatio: { default: 1 },
    CreateCacheRatio: {},
    ...tables,
  }))
    o.all().set(k, JSON.stringify(v));
  return o;
}

describe("cache_control in converted requests", () => {
  const settings = { defaultMaxTokens: 1024, thinkingAdapter: false, thinkingPercentage: 0.8 };
  const oneHour = { type: "ephemeral", ttl: "1h" };
  const fiveMin = { type: "ephemeral" };

  test("chat → Claude: on content parts, whole messages, tools and the request", () => {
    const out = toClaudeRequest(
      {
        model: "m",
        cache_control: fiveMin,
        messages: [
          { role: "system", content: [{ type: "text", text: "Rules.", cache_control: oneHour }] },
          { role: "user", content: "Question?", cache_control: fiveMin } as any,
          { role: "assistant", content: "Answer.", cache_control: fiveMin } as any,
          {
            role: "user",
            content: [
              { type: "text", text: "More" },
              { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" }, cache_control: fiveMin },
            ],
          },
        ],
        tools: [
          { type: "function", function: { name: "a", parameters: { type: "object" } }, cache_control: oneHour } as any,
          { type: "function", function: { name: "b", cache_control: fiveMin } as any },
        ],
      },
      settings,
    );
    expect(out.cache_control).toEqual(fiveMin);
    expect(out.system).toEqual([{ type: "text", text: "Rules.", cache_control: oneHour }]);
    expect(out.messages[0]).toEqual({
      role: "user",
      content: [{ type: "text", text: "Question?", cache_control: fiveMin }],
    });
    expect(out.messages[1]).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "Answer.", cache_control: fiveMin }],
    });
    expect((out.messages[2]!.content as any[])[1]).toMatchObject({ type: "image", cache_control: fiveMin });
    expect(out.tools!.map((t) => t.cache_control)).toEqual([oneHour, fiveMin]);
  });

  test("chat → Claude: a tool result's breakpoint, and a system without one stays a string", () => {
    const out = toClaudeRequest(
      {
        model: "m",
        messages: [
          { role: "system", content: "Plain." },
          { role: "user", content: "Hi" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "a", arguments: "{}" } }],
            cache_control: fiveMin,
          } as any,
          { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "42", cache_control: oneHour }] },
        ],
      },
      settings,
    );
    expect(out.system).toBe("Plain.");
    expect((out.messages[1]!.content as any[])[0]).toMatchObject({ type: "tool_use", cache_control: fiveMin });
    expect((out.messages[2]!.content as any[])[0]).toEqual({
      type: "tool_result",
      tool_use_id: "c1",
      content: "42",
      cache_control: oneHour,
    });
  });

  test("Responses → chat carries them on parts, items, function outputs, tools and the request", () => {
    const chat = responsesToChat({
      model: "m",
      cache_control: fiveMin,
      input: [
        { role: "developer", content: [{ type: "input_text", text: "Rules.", cache_control: oneHour }] },
        { type: "message", role: "user", content: "Hi", cache_control: fiveMin },
        { type: "function_call", call_id: "c1", name: "a", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "42", cache_control: fiveMin },
      ],
      tools: [{ type: "function", name: "a", parameters: { type: "object" }, cache_control: oneHour }],
    });
    expect((chat as any).cache_control).toEqual(fiveMin);
    expect(chat.messages[0]!.content).toEqual([{ type: "text", text: "Rules.", cache_control: oneHour }]);
    expect((chat.messages[1] as any).cache_control).toEqual(fiveMin);
    expect((chat.messages[3] as any).cache_control).toEqual(fiveMin);
    expect((chat.tools![0] as any).cache_control).toEqual(oneHour);
  });
});

const MODEL = "claude-cache";
const GPT = "gpt-cache";
const GEMINI = "gemini-cache";

const up = sharedRelayFixture(async (fx) => {
  const claude = startClaudeUpstream();
  const gemini = startGeminiUpstream();
  await fx.option("ModelRatio", JSON.stringify({ [MODEL]: 1.5, [GPT]: 1.25, [GEMINI]: 1 }));
  await fx.option("CompletionRatio", JSON.stringify({ [MODEL]: 5, [GPT]: 4, [GEMINI]: 4 }));
  await fx.option("CacheRatio", JSON.stringify({ [MODEL]: 0.1, [GPT]: 0.5, [GEMINI]: 0.25 }));
  await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: [MODEL] });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: [GPT] });
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: [GEMINI] });
  return { claude, gemini };
});

const ONE_HOUR = { type: "ephemeral", ttl: "1h" };
const FIVE_MIN = { type: "ephemeral" };
const SYSTEM = "You are a careful assistant. ".repeat(40);

/** Every request below marks its system prompt for an hour and its last user turn for five minutes. */
const requests: Record<string, (stream: boolean) => { path: string; body: any }> = {
  "Claude native": (stream) => ({
    path: "/v1/messages",
    body: {
      model: MODEL,
      max_tokens: 64,
      stream,
      system: [{ type: "text", text: SYSTEM, cache_control: ONE_HOUR }],
      messages: [{ role: "user", content: [{ type: "text", text: "Hello", cache_control: FIVE_MIN }] }],
    },
  }),
  "chat → Claude": (stream) => ({
    path: "/v1/chat/completions",
    body: {
      model: MODEL,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      messages: [
        { role: "system", content: [{ type: "text", text: SYSTEM, cache_control: ONE_HOUR }] },
        { role: "user", content: [{ type: "text", text: "Hello", cache_control: FIVE_MIN }] },
      ],
    },
  }),
  "Responses → Claude": (stream) => ({
    path: "/v1/responses",
    body: {
      model: MODEL,
      stream,
      input: [
        {
          type: "message",
          role: "developer",
          content: [{ type: "input_text", text: SYSTEM, cache_control: ONE_HOUR }],
        },
        { type: "message", role: "user", content: [{ type: "input_text", text: "Hello", cache_control: FIVE_MIN }] },
      ],
    },
  }),
};

// 1.5 × (12 input + 3000 read × 0.1 + 1000 five-minute writes × 1.25 + 2000 one-hour writes × 2 + 7 output × 5) = 8395.5
const CLAUDE_QUOTA = 8396;

describe("Claude cache reads and writes, by the TTL the upstream reports", () => {
  expect(CLAUDE_CACHE).toEqual({ read: 3000, write5m: 1000, write1h: 2000 });
  expect(CLAUDE_USAGE.input_tokens).toBe(12);
  for (const [name, make] of Object.entries(requests)) {
    for (const stream of [false, true]) {
      test(`${name}${stream ? ", streamed" : ""}: the breakpoints reach the upstream and each part is billed at its ratio`, async () => {
        const { path, body } = make(stream);
        const r = await callAsNewUser(up.fx, path, body);
        expect(r.status).toBe(200);
        const sent = up.claude.last().body;
        expect(sent.system).toEqual([{ type: "text", text: SYSTEM, cache_control: ONE_HOUR }]);
        expect(sent.messages.at(-1).content.at(-1)).toEqual({ type: "text", text: "Hello", cache_control: FIVE_MIN });
        const [log] = r.logs;
        expect(log!.quota).toBe(CLAUDE_QUOTA);
        expect((await userRow(up.fx, r.user.id)).quota).toBe(NEW_USER_QUOTA - CLAUDE_QUOTA);
        expect([log!.prompt_tokens, log!.completion_tokens]).toEqual([6012, 7]);
        expect(JSON.parse(log!.other)).toMatchObject({
          cache_tokens: 3000,
          cache_ratio: 0.1,
          cache_creation_tokens: 3000,
          cache_creation_ratio: 1.25,
          cache_creation_tokens_5m: 1000,
          cache_creation_ratio_5m: 1.25,
          cache_creation_tokens_1h: 2000,
          cache_creation_ratio_1h: 2,
        });
      });
    }
  }

  test("an OpenAI client is shown the split under new-api's usage names", async () => {
    const r = await callAsNewUser(up.fx, "/v1/chat/completions", requests["chat → Claude"]!(false).body);
    expect(JSON.parse(r.text).usage).toMatchObject({
      prompt_tokens: 6012,
      prompt_tokens_details: { cached_tokens: 3000, cached_creation_tokens: 3000 },
      claude_cache_creation_5_m_tokens: 1000,
      claude_cache_creation_1_h_tokens: 2000,
    });
  });

  test("a Claude client sees the upstream's usage, cache_creation included", async () => {
    const r = await callAsNewUser(up.fx, "/v1/messages", requests["Claude native"]!(false).body);
    expect(JSON.parse(r.text).usage).toEqual({
      input_tokens: 12,
      cache_read_input_tokens: 3000,
      cache_creation_input_tokens: 3000,
      cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
      output_tokens: 7,
    });
  });

  test("only 1-hour breakpoints: every write at the 1-hour rate", async () => {
    const body = {
      model: MODEL,
      max_tokens: 64,
      system: [{ type: "text", text: SYSTEM, cache_control: ONE_HOUR }],
      messages: [{ role: "user", content: "Hello" }],
    };
    const r = await callAsNewUser(up.fx, "/v1/messages", body);
    // 1.5 × (12 + 300 + 2000 × 2 + 35) = 6520.5
    expect(r.logs[0]!.quota).toBe(6521);
    const other = JSON.parse(r.logs[0]!.other);
    expect(other.cache_creation_tokens_1h).toBe(2000);
    expect("cache_creation_tokens_5m" in other).toBe(false);
  });
});

describe("OpenAI and Gemini cached tokens at the cache ratio", () => {
  for (const stream of [false, true]) {
    test(`OpenAI cached_tokens${stream ? ", streamed" : ""}`, async () => {
      up.fx.mock.options.usage = { prompt_tokens: 1000, completion_tokens: 20, cached_tokens: 800 };
      try {
        const r = await callAsNewUser(up.fx, "/v1/chat/completions", {
          model: GPT,
          stream,
          messages: [{ role: "user", content: "Hi" }],
        });
        expect(r.status).toBe(200);
        // 1.25 × (200 + 800 × 0.5 + 20 × 4)
        expect(r.logs[0]!.quota).toBe(850);
        expect(JSON.parse(r.logs[0]!.other)).toMatchObject({
          cache_tokens: 800,
          cache_ratio: 0.5,
          cache_creation_tokens: 0,
        });
      } finally {
        up.fx.mock.options.usage = undefined;
      }
    });

    test(`Gemini cachedContentTokenCount${stream ? ", streamed" : ""}`, async () => {
      const method = stream ? "streamGenerateContent?alt=sse" : "generateContent";
      const r = await callAsNewUser(up.fx, `/v1beta/models/${GEMINI}:${method}`, {
        cachedContent: "cachedContents/abc",
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      });
      expect(r.status).toBe(200);
      const prompt = GEMINI_USAGE.promptTokenCount + GEMINI_CACHED;
      const completion = GEMINI_USAGE.candidatesTokenCount + GEMINI_USAGE.thoughtsTokenCount;
      expect([r.logs[0]!.prompt_tokens, r.logs[0]!.completion_tokens]).toEqual([prompt, completion]);
      // 1 × (9 + 4000 × 0.25 + 7 × 4)
      expect(r.logs[0]!.quota).toBe(1037);
      expect(JSON.parse(r.logs[0]!.other)).toMatchObject({ cache_tokens: GEMINI_CACHED, cache_ratio: 0.25 });
      expect(up.gemini.last().body.cachedContent).toBe("cachedContents/abc");
    });
  }
});

describe("Bedrock and Vertex Claude: breakpoints pass, writes are split by TTL", () => {
  const creds = {
    accessKeyId: "AKIDEXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    region: "us-east-1",
  };
  let bedrock: MockUpstream;
  let vertex: VertexMock;
  let vertexKey = "";
  beforeAll(async () => {
    bedrock = startBedrockUpstream(creds);
    vertex = startVertexUpstream();
    const sa = await makeServiceAccount(vertex.url + "/token");
    vertex.trust(sa);
    vertexKey = JSON.stringify(sa.json);
  });
  afterAll(() => {
    bedrock.stop();
    vertex.stop();
  });
  const hosts = {
    bedrock: () => ({
      adaptor: awsAdaptor,
      up: bedrock,
      call: { baseUrl: bedrock.url, key: `${creds.accessKeyId}|${creds.secretAccessKey}|${creds.region}` },
    }),
    vertex: () => ({
      adaptor: vertexAdaptor,
      up: vertex,
      call: { baseUrl: vertex.url, key: vertexKey, channel: channel({ type: 41, other: "us-east5" }) },
    }),
  };
  for (const [host, of] of Object.entries(hosts)) {
    for (const stream of [false, true]) {
      test(`${host}${stream ? ", streamed" : ""}: a Claude client's breakpoints unchanged, an OpenAI client's in place`, async () => {
        const { adaptor, up: upstream, call } = of();
        const native = requests["Claude native"]!(stream).body;
        const a = await run(
          adaptor,
          makeCall({
            ...call,
            format: "claude",
            stream,
            upstreamModel: "claude-sonnet-4-20250514",
            path: "/v1/messages",
          }),
          native,
        );
        expect(a.status).toBe(200);
        expect(upstream.last().body.system).toEqual(native.system);
        expect(upstream.last().body.messages).toEqual(native.messages);
        expect(a.usage).toMatchObject({
          prompt_tokens: 6012,
          cached_tokens: 3000,
          cache_creation_tokens: 3000,
          cache_creation_1h_tokens: 2000,
        });
        const chat = requests["chat → Claude"]!(stream).body;
        const b = await run(
          adaptor,
          makeCall({ ...call, stream, clientWantsUsage: stream, upstreamModel: "claude-sonnet-4-20250514" }),
          chat,
        );
        expect(b.status).toBe(200);
        expect(upstream.last().body.system).toEqual([{ type: "text", text: SYSTEM, cache_control: ONE_HOUR }]);
        expect(b.usage).toMatchObject({
          cached_tokens: 3000,
          cache_creation_tokens: 3000,
          cache_creation_1h_tokens: 2000,
        });
      });
    }
  }
});
