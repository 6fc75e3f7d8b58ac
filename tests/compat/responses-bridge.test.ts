// The Responses API on channels whose upstream has chat completions only (DeepSeek, Moonshot, Ollama, vLLM,
// ...): the catalogue says which types have /v1/responses, a channel's `responses_api` setting overrides it,
// and a call to a channel without it is answered through chat completions. Checked with the openai SDK on the
// client side and on the body the mock upstream received (the mock 404s /v1/responses, as those upstreams do).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { relayFixture, logsOf, type RelayFixture } from "../relay/fixtures.ts";
import { COMPAT_TEXT, startCompatUpstream, type CompatReply } from "../mocks/openai-compatible-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { CHANNEL_TYPES, servesNatively } from "../../server/catalogue/channel-types.ts";

let fx: RelayFixture;
let compat: MockUpstream;
let server: ReturnType<typeof Bun.serve>;
let oai: OpenAI;
let userId: number;
/** What the compat upstream answers next (reset to its default text after each test that sets it). */
let reply: ((body: any) => CompatReply) | undefined;

const MODELS = ["rb-deepseek", "rb-openai-chat", "rb-ollama-native"];

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  compat = startCompatUpstream({
    key: "sk-deepseek",
    usage: { prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 4 } },
    reply: (body) => reply?.(body) ?? { text: COMPAT_TEXT },
  });
  const each = (v: number) => JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, v])));
  await fx.option("ModelRatio", each(1));
  await fx.option("CompletionRatio", each(2));
  await fx.option("CacheRatio", each(0.5));
  await fx.channel({ type: 43, key: "sk-deepseek", base_url: compat.url, models: ["rb-deepseek"], model_mapping: { "rb-deepseek": "deepseek-chat" } });
  // An OpenAI channel told that its upstream (a proxy, say) has chat completions only.
  await fx.channel({ type: 1, key: "sk-channel-key", base_url: fx.mock.url, models: ["rb-openai-chat"], model_mapping: { "rb-openai-chat": "gpt-4o-mini" }, setting: { responses_api: "chat" } });
  // An Ollama channel told that its upstream does serve /v1/responses.
  await fx.channel({ type: 4, key: "sk-channel-key", base_url: fx.mock.url, models: ["rb-ollama-native"], model_mapping: { "rb-ollama-native": "gpt-4o-mini" }, setting: { responses_api: "native" } });
  const user = await fx.user(500_000_000);
  userId = user.id;
  const key = (await fx.token(user.id)).key;
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
  oai = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${server.port}/v1`, maxRetries: 0, dangerouslyAllowBrowser: true });
});

afterAll(async () => {
  server.stop(true);
  compat.stop();
  await fx.close();
});

/** The SSE events of a streamed call, as the client got them (type and data). */
async function events(body: Record<string, unknown>): Promise<any[]> {
  const res = await fetch(`http://127.0.0.1:${server.port}/v1/responses`, {
    method: "POST", headers: { authorization: `Bearer ${oai.apiKey}`, "content-type": "application/json" }, body: JSON.stringify({ ...body, stream: true }),
  });
  expect(res.status).toBe(200);
  const out: any[] = [];
  for (const frame of (await res.text()).split("\n\n")) {
    const event = /^event: (.*)$/m.exec(frame)?.[1];
    const data = /^data: (.*)$/m.exec(frame)?.[1];
    if (!data) continue;
    const obj = JSON.parse(data);
    expect(obj.type).toBe(event);
    out.push(obj);
  }
  return out;
}

async function lastLog() {
  await fx.flush();
  return (await logsOf(fx, userId)).at(-1)!;
}

describe("the catalogue states which types serve /v1/responses", () => {
  test("OpenAI and Azure do, the other OpenAI-compatible types do not", () => {
    expect(servesNatively(1, "/v1/responses")).toBe(true);
    expect(servesNatively(3, "/v1/responses")).toBe(true);
    for (const t of CHANNEL_TYPES.filter((t) => t.kind === "openai" && t.id !== 1)) expect([t.name, servesNatively(t.id, "/v1/responses")]).toEqual([t.name, false]);
  });
});

describe("a chat-only upstream serves the Responses API", () => {
  test("non-streamed: the chat request it received, the response object and the bill", async () => {
    const before = compat.requests.length;
    const r = await oai.responses.create({ model: "rb-deepseek", input: "Hi", instructions: "Be brief.", max_output_tokens: 300, temperature: 0.2 });
    expect(compat.requests.length).toBe(before + 1);
    const sent = compat.last();
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.body).toEqual({ model: "deepseek-chat", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }], max_tokens: 300, temperature: 0.2 });
    expect(r.object).toBe("response");
    expect(r.id).toMatch(/^resp_/);
    expect(r.status).toBe("completed");
    expect(r.model).toBe("rb-deepseek");
    expect(r.output_text).toBe(COMPAT_TEXT);
    expect(r.usage).toEqual({ input_tokens: 100, input_tokens_details: { cached_tokens: 40, cache_write_tokens: 0 }, output_tokens: 10, output_tokens_details: { reasoning_tokens: 4 }, total_tokens: 110 });
    const log = await lastLog();
    // 60 fresh input tokens, 40 cached at half, 10 output at twice the rate
    expect(log.quota).toBe(60 + 20 + 20);
    expect([log.prompt_tokens, log.completion_tokens]).toEqual([100, 10]);
    expect(JSON.parse(log.other)).toMatchObject({ cache_tokens: 40, cache_ratio: 0.5 });
  });

  test("streamed: the typed events in OpenAI's order, numbered, and completed with the usage", async () => {
    const evs = await events({ model: "rb-deepseek", input: "Hi" });
    expect(compat.last().body.stream).toBe(true);
    expect(compat.last().body.stream_options).toEqual({ include_usage: true });
    expect(evs.map((e) => e.type)).toEqual([
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed",
    ]);
    expect(evs.map((e) => e.sequence_number)).toEqual(evs.map((_, i) => i));
    expect(evs[0].response).toMatchObject({ object: "response", status: "in_progress", model: "rb-deepseek", output: [] });
    const item = evs[2].item;
    expect(item).toMatchObject({ type: "message", role: "assistant", status: "in_progress", content: [] });
    expect(evs.slice(4, 7).map((e) => e.delta).join("")).toBe(COMPAT_TEXT);
    for (const e of evs.slice(2, 10)) expect([e.type, e.output_index, e.item_id ?? e.item.id]).toEqual([e.type, 0, item.id]);
    const done = evs.at(-1).response;
    expect(done.status).toBe("completed");
    expect(done.output).toEqual([{ id: item.id, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: COMPAT_TEXT, annotations: [], logprobs: [] }] }]);
    expect(done.usage).toEqual({ input_tokens: 100, input_tokens_details: { cached_tokens: 40, cache_write_tokens: 0 }, output_tokens: 10, output_tokens_details: { reasoning_tokens: 4 }, total_tokens: 110 });
    const log = await lastLog();
    expect(log.quota).toBe(100);
    expect(log.is_stream).toBeTruthy();
  });

  test("the SDK's stream helper assembles the same response", async () => {
    const final = await oai.responses.stream({ model: "rb-deepseek", input: "Hi" }).finalResponse();
    expect(final.output_text).toBe(COMPAT_TEXT);
  });
});

describe("the channel's responses_api setting overrides its type", () => {
  test("an OpenAI channel set to chat answers through /v1/chat/completions", async () => {
    const r = await oai.responses.create({ model: "rb-openai-chat", input: "Hi" });
    expect(fx.mock.seen.at(-1)!.path).toBe("/v1/chat/completions");
    expect(r.object).toBe("response");
    expect(r.output_text.length).toBeGreaterThan(0);
  });

  test("an Ollama channel set to native sends the call to the upstream's /v1/responses as it is", async () => {
    await oai.responses.create({ model: "rb-ollama-native", input: "Hi" });
    const seen = fx.mock.seen.at(-1)!;
    expect(seen.path).toBe("/v1/responses");
    expect(seen.body).toEqual({ model: "gpt-4o-mini", input: "Hi" });
  });
});
