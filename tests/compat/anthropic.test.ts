// The official @anthropic-ai/sdk against the gateway's /v1/messages, listening on a real port with an
// sk- token: a Claude channel (pass-through), an OpenAI-format channel (converted both ways), a Gemini
// channel and a Bedrock channel (binary event stream through the pipeline). Billing and logs as for
// every relay call.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { relayFixture, logsOf, tokenRow, type RelayFixture } from "../relay/fixtures.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

let fx: RelayFixture;
let claude: MockUpstream;
let gemini: MockUpstream;
let bedrock: MockUpstream;
let server: ReturnType<typeof Bun.serve>;
let client: Anthropic;
let tokenId: number;
let userId: number;
let key: string;

const bedrockCreds = { accessKeyId: "AKIDTEST", secretAccessKey: "secret/value", region: "us-east-1" };
const weather = {
  name: "get_weather",
  description: "Weather by city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream();
  gemini = startGeminiUpstream();
  bedrock = startBedrockUpstream(bedrockCreds);
  await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claude.url,
    models: ["claude-sonnet-4-20250514", "claude-alias"],
    model_mapping: { "claude-alias": "claude-3-5-haiku-20241022" },
  });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: ["gpt-via-claude-api"] });
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: ["gemini-2.5-flash"] });
  await fx.channel({
    type: 33,
    key: `${bedrockCreds.accessKeyId}|${bedrockCreds.secretAccessKey}|us-east-1`,
    base_url: bedrock.url,
    models: ["claude-3-5-sonnet-20240620"],
  });
  const models = [
    "claude-sonnet-4-20250514",
    "claude-alias",
    "gpt-via-claude-api",
    "gemini-2.5-flash",
    "claude-3-5-sonnet-20240620",
    "claude-overloaded",
  ];
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1.5]))));
  await fx.option("CompletionRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 5]))));
  await fx.option("CacheRatio", JSON.stringify({ "claude-alias": 0.1 }));
  const user = await fx.user(50_000_000);
  userId = user.id;
  const t = await fx.token(user.id, { remain_quota: 5_000_000 });
  tokenId = t.id;
  key = t.key;
  // As the binary listens: /v1/messages is then served from the native route table (relay/plain-route.ts).
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  server = app.server!;
  // The test preload registers a DOM (for console tests), which the SDK takes for a browser.
  client = new Anthropic({
    apiKey: key,
    baseURL: `http://127.0.0.1:${server.port}`,
    maxRetries: 0,
    dangerouslyAllowBrowser: true,
  });
});

afterAll(async () => {
  server.stop(true);
  claude.stop();
  gemini.stop();
  bedrock.stop();
  await fx.close();
});

describe("Claude channel (same format)", () => {
  test("non-stream: the body passes through with the mapped model; the reply is Claude's", async () => {
    const msg = await client.messages.create({
      model: "claude-alias",
      max_tokens: 100,
      system: "Be brief.",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(claude.last().body).toEqual({
      model: "claude-3-5-haiku-20241022",
      max_tokens: 100,
      system: "Be brief.",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(claude.last().headers["x-api-key"]).toBe("claude-key");
    expect(msg.content as unknown[]).toEqual([{ type: "text", text: "Hello from Claude." }]);
    expect(msg.usage.cache_read_input_tokens).toBe(3);
  });

  test("the client's anthropic-beta flags reach the channel, merged with claude.model_headers_settings", async () => {
    await fx.option(
      "claude.model_headers_settings",
      JSON.stringify({ "claude-sonnet-4-20250514": { "anthropic-beta": ["output-128k-2025-02-19"] } }),
    );
    await client.messages.create(
      { model: "claude-sonnet-4-20250514", max_tokens: 10, messages: [{ role: "user", content: "Hi" }] },
      { headers: { "anthropic-beta": "context-1m-2025-08-07" } },
    );
    expect(claude.last().headers["anthropic-beta"]).toBe("output-128k-2025-02-19,context-1m-2025-08-07");
    await fx.option("claude.model_headers_settings", "{}");
  });

  test("stream: events arrive as Claude events and the SDK assembles the message", async () => {
    const stream = client.messages.stream({
      model: "claude-sonnet-4-20250514",
      max_tokens: 100,
      messages: [{ role: "user", content: "Hi" }],
      tools: [weather],
    });
    const types: string[] = [];
    stream.on("streamEvent", (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(types[0]).toBe("message_start");
    expect(types.at(-1)).toBe("message_stop");
    expect(final.content.find((b) => b.type === "tool_use")).toMatchObject({
      type: "tool_use",
      name: "get_weather",
      input: { city: "Paris" },
    });
    expect(final.stop_reason).toBe("tool_use");
  });

  test("the call is billed with cache read and cache creation tokens at their ratios, and logged", async () => {
    await fx.flush();
    const logs = await logsOf(fx, userId);
    const log = logs.find((l) => l.model_name === "claude-alias")!;
    expect(log.prompt_tokens).toBe(17);
    expect(log.completion_tokens).toBe(7);
    // ratio 1.5 × (12 plain + 3 cache reads × 0.1 + 2 cache writes × 1.25 + 7 completion × 5) = 74.7
    expect(log.quota).toBe(75);
    expect(JSON.parse(log.other ?? "{}")).toMatchObject({
      cache_tokens: 3,
      cache_creation_tokens: 2,
      upstream_model_name: "claude-3-5-haiku-20241022",
    });
    expect((await tokenRow(fx, tokenId)).used_quota).toBeGreaterThan(0);
  });
});

describe("OpenAI-format channel (converted)", () => {
  test("non-stream text", async () => {
    const msg = await client.messages.create({
      model: "gpt-via-claude-api",
      max_tokens: 50,
      system: "sys",
      messages: [{ role: "user", content: "Hi" }],
    });
    const sent = fx.mock.seen.at(-1)!;
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.body.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "Hi" },
    ]);
    expect(sent.body.max_tokens).toBe(50);
    expect(msg.type).toBe("message");
    expect(msg.content as unknown[]).toEqual([{ type: "text", text: "Hello world!" }]);
    expect(msg.stop_reason).toBe("end_turn");
    expect(msg.usage).toMatchObject({ input_tokens: 10, output_tokens: 20 });
  });

  test("non-stream tool use, then the tool result goes back as a tool message", async () => {
    const msg = await client.messages.create({
      model: "gpt-via-claude-api",
      max_tokens: 50,
      tools: [weather],
      messages: [{ role: "user", content: "Weather?" }],
    });
    const use = msg.content.find((b) => b.type === "tool_use")!;
    expect(use).toMatchObject({ type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } });
    expect(msg.stop_reason).toBe("tool_use");
    expect(fx.mock.seen.at(-1)!.body.tools[0]).toEqual({
      type: "function",
      function: { name: "get_weather", description: "Weather by city", parameters: weather.input_schema },
    });
    await client.messages.create({
      model: "gpt-via-claude-api",
      max_tokens: 50,
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: msg.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "18C" }] },
      ],
    });
    const msgs = fx.mock.seen.at(-1)!.body.messages;
    expect(msgs[1].tool_calls[0]).toEqual({
      id: "call_1",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    });
    expect(msgs[2]).toEqual({ role: "tool", tool_call_id: "call_1", content: "18C" });
  });

  test("stream text: well-formed Claude event sequence with usage", async () => {
    const stream = client.messages.stream({
      model: "gpt-via-claude-api",
      max_tokens: 50,
      messages: [{ role: "user", content: "Hi" }],
    });
    const types: string[] = [];
    stream.on("streamEvent", (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(types).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(final.content.length).toBe(1);
    expect(final.content[0]).toMatchObject({ type: "text", text: "Hello world!" });
    expect(final.usage.output_tokens).toBe(20);
    expect(fx.mock.seen.at(-1)!.body.stream_options).toEqual({ include_usage: true });
  });

  test("stream tool use", async () => {
    const final = await client.messages
      .stream({
        model: "gpt-via-claude-api",
        max_tokens: 50,
        tools: [weather],
        messages: [{ role: "user", content: "Weather?" }],
      })
      .finalMessage();
    expect(final.content as unknown[]).toEqual([
      { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } },
    ]);
    expect(final.stop_reason).toBe("tool_use");
  });
});

describe("other channel kinds", () => {
  test("a Gemini channel answers a Claude client (Claude → OpenAI → Gemini and back)", async () => {
    const msg = await client.messages.create({
      model: "gemini-2.5-flash",
      max_tokens: 64,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(gemini.last().body.contents).toEqual([{ role: "user", parts: [{ text: "Hi" }] }]);
    expect(gemini.last().body.generationConfig.maxOutputTokens).toBe(64);
    expect(msg.content as unknown[]).toEqual([{ type: "text", text: "Hello from Gemini." }]);
    const streamed = await client.messages
      .stream({ model: "gemini-2.5-flash", max_tokens: 64, messages: [{ role: "user", content: "Hi" }] })
      .finalMessage();
    expect((streamed.content[0] as any).text).toBe("Hello from Gemini.");
    expect(streamed.usage.output_tokens).toBe(7);
  });

  test("a Bedrock channel streams through the binary event stream", async () => {
    const final = await client.messages
      .stream({ model: "claude-3-5-sonnet-20240620", max_tokens: 64, messages: [{ role: "user", content: "Hi" }] })
      .finalMessage();
    expect(bedrock.last().path).toEndWith("/invoke-with-response-stream");
    expect(bedrock.last().body.anthropic_beta).toBeUndefined();
    expect((final.content[0] as any).text).toBe("Hello from Claude.");
    expect(final.usage.output_tokens).toBe(7);
  });
});

describe("count_tokens", () => {
  test("the SDK's countTokens is answered locally, unbilled", async () => {
    const calls = claude.requests.length;
    await fx.flush();
    const before = (await tokenRow(fx, tokenId)).remain_quota;
    const r = await client.messages.countTokens({
      model: "claude-sonnet-4-20250514",
      system: "Be brief.",
      messages: [{ role: "user", content: "Hello there, how are you?" }],
    });
    expect(r.input_tokens).toBeGreaterThan(8);
    expect(r.input_tokens).toBeLessThan(30);
    expect(claude.requests.length).toBe(calls);
    expect((await tokenRow(fx, tokenId)).remain_quota).toBe(before);
  });
});

describe("errors in Claude's format", () => {
  test("a bad key is a Claude authentication error", async () => {
    const bad = new Anthropic({
      apiKey: "sk-wrong",
      baseURL: `http://127.0.0.1:${server.port}`,
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
    });
    const err: any = await bad.messages
      .create({ model: "claude-sonnet-4-20250514", max_tokens: 10, messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(err.error).toEqual({ type: "error", error: { type: "authentication_error", message: "invalid API key" } });
  });

  test("invalid bodies are refused before any upstream call and nothing is charged", async () => {
    await fx.flush();
    const before = (await tokenRow(fx, tokenId)).remain_quota;
    const calls = claude.requests.length;
    const res = await fetch(`http://127.0.0.1:${server.port}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-sonnet-4-20250514", max_tokens: 10 }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "messages: Field required" },
    });
    const broken = await fetch(`http://127.0.0.1:${server.port}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key },
      body: "{not json",
    });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as any).type).toBe("error");
    expect(claude.requests.length).toBe(calls);
    expect((await tokenRow(fx, tokenId)).remain_quota).toBe(before);
  });

  test("an unknown model is a Claude-format 404 not_found_error with the reason", async () => {
    const err: any = await client.messages
      .create({ model: "no-such-model", max_tokens: 10, messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(err.status).toBe(404);
    expect(err.error).toMatchObject({ type: "error", error: { type: "not_found_error" } });
    expect(err.error.error.message).toContain("the model 'no-such-model' does not exist");
  });

  test("an upstream error comes back in Claude's format without the channel's key", async () => {
    await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: ["claude-overloaded"] });
    const err: any = await client.messages
      .create({ model: "claude-overloaded", max_tokens: 10, messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(err.status).toBe(529);
    expect(err.error).toEqual({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
  });
});
