// The official openai package against the gateway's /v1/chat/completions, served by Claude, Gemini,
// Azure, Bedrock and Vertex channels (local mocks), stream and non-stream, with tools.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { relayFixture, logsOf, type RelayFixture } from "../relay/fixtures.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startAzureUpstream } from "../mocks/azure-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import { makeServiceAccount, startVertexUpstream, type VertexMock } from "../mocks/vertex-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

let fx: RelayFixture;
let mocks: MockUpstream[] = [];
let claude: MockUpstream;
let gemini: MockUpstream;
let vertex: VertexMock;
let server: ReturnType<typeof Bun.serve>;
let client: OpenAI;
let userId: number;

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather by city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
];
const MODELS = [
  "claude-sonnet-4-20250514",
  "claude-sonnet-4-20250514-thinking",
  "gemini-2.5-flash",
  "gpt-4o-azure",
  "claude-3-5-sonnet-20240620",
  "claude-3-7-sonnet-20250219",
  "gemini-2.5-pro",
];

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream();
  gemini = startGeminiUpstream();
  const azure = startAzureUpstream();
  const creds = { accessKeyId: "AKIDSDK", secretAccessKey: "sdk-secret", region: "eu-west-1" };
  const bedrock = startBedrockUpstream(creds);
  vertex = startVertexUpstream();
  const sa = await makeServiceAccount(vertex.url + "/token", "proj-1");
  vertex.trust(sa);
  mocks = [claude, gemini, azure, bedrock, vertex];
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, 1]))));
  await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claude.url,
    models: ["claude-sonnet-4-20250514", "claude-sonnet-4-20250514-thinking"],
  });
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: ["gemini-2.5-flash"] });
  await fx.channel({
    type: 3,
    key: "azure-key",
    base_url: azure.url,
    models: ["gpt-4o-azure"],
    model_mapping: { "gpt-4o-azure": "gpt-4o" },
  });
  await fx.channel({
    type: 33,
    key: `${creds.accessKeyId}|${creds.secretAccessKey}|${creds.region}`,
    base_url: bedrock.url,
    models: ["claude-3-5-sonnet-20240620"],
  });
  await fx.channel({
    type: 41,
    key: JSON.stringify(sa.json),
    base_url: vertex.url,
    models: ["claude-3-7-sonnet-20250219", "gemini-2.5-pro"],
  });
  // Azure's API version lives in the channel's `other` field.
  await fx.ctx.deps.db.updateTable("channels").set({ other: "2024-06-01" }).where("type", "=", 3).execute();
  const { invalidateRelayCaches } = await import("../../server/relay/state.ts");
  invalidateRelayCaches(fx.ctx.deps);
  const user = await fx.user(100_000_000);
  userId = user.id;
  const t = await fx.token(user.id);
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
  client = new OpenAI({
    apiKey: t.key,
    baseURL: `http://127.0.0.1:${server.port}/v1`,
    maxRetries: 0,
    dangerouslyAllowBrowser: true,
  });
});

afterAll(async () => {
  server.stop(true);
  for (const m of mocks) m.stop();
  await fx.close();
});

async function streamed(
  model: string,
  extra: Partial<OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming> = {},
) {
  const stream = await client.chat.completions.create({
    model,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "Hi" }],
    ...extra,
  });
  let text = "";
  let args = "";
  let name = "";
  let finish: string | null = null;
  let usage: OpenAI.Completions.CompletionUsage | undefined;
  let reasoning = "";
  for await (const c of stream) {
    const d: any = c.choices[0]?.delta ?? {};
    text += d.content ?? "";
    reasoning += d.reasoning_content ?? "";
    for (const t of d.tool_calls ?? []) {
      name ||= t.function?.name ?? "";
      args += t.function?.arguments ?? "";
    }
    finish = c.choices[0]?.finish_reason ?? finish;
    if (c.usage) usage = c.usage;
  }
  return { text, args, name, finish, usage, reasoning };
}

describe("Claude channel", () => {
  test("non-stream with tools", async () => {
    const r = await client.chat.completions.create({
      model: "claude-sonnet-4-20250514",
      tools,
      tool_choice: "required",
      messages: [{ role: "user", content: "Weather?" }],
    });
    expect(claude.last().body.tool_choice).toEqual({ type: "any" });
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    expect(r.choices[0]!.message.tool_calls![0]).toMatchObject({
      id: "toolu_01A",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    });
    expect(r.usage).toMatchObject({ prompt_tokens: 17, completion_tokens: 7, total_tokens: 24 });
    expect(r.model).toBe("claude-sonnet-4-20250514");
  });

  test("stream with tools and usage", async () => {
    const s = await streamed("claude-sonnet-4-20250514", { tools });
    expect(s.text).toBe("Hello from Claude.");
    expect([s.name, JSON.parse(s.args)]).toEqual(["get_weather", { city: "Paris" }]);
    expect(s.finish).toBe("tool_calls");
    expect(s.usage).toMatchObject({ prompt_tokens: 17, completion_tokens: 7 });
  });

  test("the -thinking model streams reasoning_content", async () => {
    const s = await streamed("claude-sonnet-4-20250514-thinking", { max_tokens: 2000 });
    expect(claude.last().body.thinking).toEqual({ type: "enabled", budget_tokens: 1600 });
    expect(s.reasoning).toBe("Considering.");
    expect(s.text).toBe("Hello from Claude.");
  });

  test("claude.default_max_tokens applies when the client sends none", async () => {
    await fx.option("claude.default_max_tokens", JSON.stringify({ default: 1234 }));
    await client.chat.completions.create({
      model: "claude-sonnet-4-20250514",
      messages: [{ role: "user", content: "x" }],
    });
    expect(claude.last().body.max_tokens).toBe(1234);
    await fx.option("claude.default_max_tokens", JSON.stringify({ default: 8192 }));
  });
});

describe("Gemini channel", () => {
  test("non-stream with tools", async () => {
    const r = await client.chat.completions.create({
      model: "gemini-2.5-flash",
      tools,
      messages: [{ role: "user", content: "Weather?" }],
    });
    expect((r.choices[0]!.message.tool_calls![0] as any).function).toEqual({
      name: "get_weather",
      arguments: '{"city":"Paris"}',
    });
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    expect(r.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 7 });
  });

  test("stream with tools and usage", async () => {
    const s = await streamed("gemini-2.5-flash", { tools });
    expect([s.name, JSON.parse(s.args)]).toEqual(["get_weather", { city: "Paris" }]);
    expect(s.finish).toBe("tool_calls");
    expect(s.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 7 });
  });

  test("gemini.safety_settings reach the upstream", async () => {
    await fx.option(
      "gemini.safety_settings",
      JSON.stringify({ default: "BLOCK_NONE", HARM_CATEGORY_HARASSMENT: "BLOCK_ONLY_HIGH" }),
    );
    await client.chat.completions.create({ model: "gemini-2.5-flash", messages: [{ role: "user", content: "x" }] });
    const s = gemini.last().body.safetySettings;
    expect(s.find((x: any) => x.category === "HARM_CATEGORY_HARASSMENT").threshold).toBe("BLOCK_ONLY_HIGH");
    expect(s.find((x: any) => x.category === "HARM_CATEGORY_DANGEROUS_CONTENT").threshold).toBe("BLOCK_NONE");
  });
});

describe("Azure, Bedrock and Vertex channels", () => {
  test("Azure: deployment URL with the channel's API version", async () => {
    const r = await client.chat.completions.create({
      model: "gpt-4o-azure",
      messages: [{ role: "user", content: "x" }],
    });
    expect(r.choices[0]!.message.content).toBe("Hello from Azure.");
    const s = await streamed("gpt-4o-azure");
    expect(s.text).toBe("Hello from Azure.");
    expect(s.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 4 });
  });

  test("Bedrock: signed invoke and event-stream", async () => {
    const r = await client.chat.completions.create({
      model: "claude-3-5-sonnet-20240620",
      messages: [{ role: "user", content: "x" }],
    });
    expect(r.choices[0]!.message.content).toBe("Hello from Claude.");
    const s = await streamed("claude-3-5-sonnet-20240620", { tools });
    expect(s.text).toBe("Hello from Claude.");
    expect(JSON.parse(s.args)).toEqual({ city: "Paris" });
    expect(s.usage).toMatchObject({ prompt_tokens: 17, completion_tokens: 7 });
  });

  test("Vertex: Claude and Gemini models under one service account; one token exchange", async () => {
    const before = vertex.issued.length;
    const c = await client.chat.completions.create({
      model: "claude-3-7-sonnet-20250219",
      messages: [{ role: "user", content: "x" }],
    });
    expect(vertex.last().path).toBe(
      "/v1/projects/proj-1/locations/us-central1/publishers/anthropic/models/claude-3-7-sonnet@20250219:rawPredict",
    );
    expect(c.choices[0]!.message.content).toBe("Hello from Claude.");
    const g = await streamed("gemini-2.5-pro");
    expect(vertex.last().path).toBe(
      "/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent",
    );
    expect(g.text).toBe("Hello from Gemini.");
    expect(vertex.issued.length - before).toBeLessThanOrEqual(1);
  });

  test("every call was billed and logged", async () => {
    await fx.flush();
    const logs = await logsOf(fx, userId);
    for (const m of [
      "claude-sonnet-4-20250514",
      "gemini-2.5-flash",
      "gpt-4o-azure",
      "claude-3-5-sonnet-20240620",
      "claude-3-7-sonnet-20250219",
      "gemini-2.5-pro",
    ]) {
      const mine = logs.filter((l) => l.model_name === m);
      expect(mine.length).toBeGreaterThan(0);
      expect(mine.every((l) => l.quota > 0)).toBe(true);
    }
  });
});
