// The client-fidelity matrix: the official openai, @anthropic-ai/sdk and @google/genai clients, unchanged,
// against a listening gateway with one channel of every kind (OpenAI, Claude, Gemini, Azure, Bedrock,
// Vertex Claude, Vertex Gemini), each backed by its mock upstream. Every cell (feature × client × kind)
// either works — the feature carried across in both directions, checked on what the upstream received as
// well as on what the client got back — or is refused with the documented 400/501 before any upstream call.
// The client table of docs/relay-api.md is this file's table.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI, { toFile } from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI, Type } from "@google/genai";
import { relayFixture, logsOf, type RelayFixture } from "../relay/fixtures.ts";
import { invalidateRelayCaches } from "../../server/relay/state.ts";
import { CLAUDE_TEXT, CLAUDE_THINKING, startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { GEMINI_TEXT, GEMINI_THOUGHT, startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { AZURE_TEXT, startAzureUpstream } from "../mocks/azure-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import { makeServiceAccount, startVertexUpstream, type VertexMock } from "../mocks/vertex-upstream.ts";
import { REASONING } from "../mocks/openai-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

const KINDS = ["openai", "claude", "gemini", "azure", "bedrock", "vertex-claude", "vertex-gemini"] as const;
type Kind = (typeof KINDS)[number];
const CLAUDE_KINDS: Kind[] = ["claude", "bedrock", "vertex-claude"];
const GEMINI_KINDS: Kind[] = ["gemini", "vertex-gemini"];
const OPENAI_KINDS: Kind[] = ["openai", "azure"];

/** The model each kind's channel serves, and the upstream name it maps to. */
const UPSTREAM: Record<Kind, string> = {
  openai: "gpt-4o-mini",
  claude: "claude-sonnet-4-20250514",
  gemini: "gemini-2.5-flash",
  azure: "gpt-4o",
  bedrock: "claude-3-5-sonnet-20240620",
  "vertex-claude": "claude-sonnet-4-20250514",
  "vertex-gemini": "gemini-2.5-flash",
};
const TEXT: Record<Kind, string> = {
  openai: "Hello world!",
  claude: CLAUDE_TEXT,
  gemini: GEMINI_TEXT,
  azure: AZURE_TEXT,
  bedrock: CLAUDE_TEXT,
  "vertex-claude": CLAUDE_TEXT,
  "vertex-gemini": GEMINI_TEXT,
};
/** The reasoning text each kind's mock answers with when asked to think. */
const THOUGHT: Record<Kind, string> = {
  openai: REASONING,
  azure: REASONING,
  claude: CLAUDE_THINKING,
  bedrock: CLAUDE_THINKING,
  "vertex-claude": CLAUDE_THINKING,
  gemini: GEMINI_THOUGHT,
  "vertex-gemini": GEMINI_THOUGHT,
};
const model = (kind: Kind) => `mx-${kind}`;
const embModel = (kind: Kind) => `emb-${kind}`;
const imgModel = (kind: Kind) => `img-${kind}`;

let fx: RelayFixture;
let claude: MockUpstream;
let gemini: MockUpstream;
let azure: MockUpstream;
let bedrock: MockUpstream;
let vertex: VertexMock;
let server: ReturnType<typeof Bun.serve>;
let base: string;
let key: string;
let userId: number;
let oai: OpenAI;
let ant: Anthropic;
let gen: GoogleGenAI;

/** The body the kind's upstream received last (Bedrock and Vertex without their envelope differences). */
function lastBody(kind: Kind): any {
  if (kind === "openai") return fx.mock.seen.at(-1)!.body;
  const up = { claude, gemini, azure, bedrock, "vertex-claude": vertex, "vertex-gemini": vertex }[kind];
  return up.last().body;
}
function lastPath(kind: Kind): string {
  if (kind === "openai") return fx.mock.seen.at(-1)!.path;
  return { claude, gemini, azure, bedrock, "vertex-claude": vertex, "vertex-gemini": vertex }[kind].last().path;
}
function upstreamCalls(kind: Kind): number {
  if (kind === "openai") return fx.mock.seen.length;
  return { claude, gemini, azure, bedrock, "vertex-claude": vertex, "vertex-gemini": vertex }[kind].requests.length;
}

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream();
  gemini = startGeminiUpstream();
  azure = startAzureUpstream({ deployments: ["gpt-4o", "text-embedding-3-small", "gpt-image-1"] });
  const creds = { accessKeyId: "AKIDMATRIX", secretAccessKey: "matrix/secret", region: "us-east-1" };
  bedrock = startBedrockUpstream(creds);
  vertex = startVertexUpstream();
  const sa = await makeServiceAccount(vertex.url + "/token");
  vertex.trust(sa);
  const all = KINDS.flatMap((k) => [model(k), embModel(k)]);
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(all.map((m) => [m, 1]))));
  await fx.option("CompletionRatio", JSON.stringify(Object.fromEntries(all.map((m) => [m, 2]))));
  await fx.option("ModelPrice", JSON.stringify(Object.fromEntries(KINDS.map((k) => [imgModel(k), 0.02]))));
  const channel = (kind: Kind, spec: { type: number; key: string; base_url: string }, embedding?: string) =>
    fx.channel({
      ...spec,
      models: [model(kind), embModel(kind), imgModel(kind)],
      model_mapping: {
        [model(kind)]: UPSTREAM[kind],
        [imgModel(kind)]: "gpt-image-1",
        ...(embedding ? { [embModel(kind)]: embedding } : {}),
      },
    });
  await channel("openai", { type: 1, key: "sk-channel-key", base_url: fx.mock.url }, "text-embedding-3-small");
  await channel("claude", { type: 14, key: "claude-key", base_url: claude.url });
  await channel("gemini", { type: 24, key: "gemini-key", base_url: gemini.url }, "text-embedding-004");
  await channel("azure", { type: 3, key: "azure-key", base_url: azure.url }, "text-embedding-3-small");
  await channel("bedrock", {
    type: 33,
    key: `${creds.accessKeyId}|${creds.secretAccessKey}|us-east-1`,
    base_url: bedrock.url,
  });
  await channel("vertex-claude", { type: 41, key: JSON.stringify(sa.json), base_url: vertex.url });
  await channel(
    "vertex-gemini",
    { type: 41, key: JSON.stringify(sa.json), base_url: vertex.url },
    "text-embedding-004",
  );
  const user = await fx.user(500_000_000);
  userId = user.id;
  key = (await fx.token(user.id, { remain_quota: 400_000_000 })).key;
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
  base = `http://127.0.0.1:${server.port}`;
  // The test preload registers a DOM, which the SDKs would take for a browser.
  oai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0, dangerouslyAllowBrowser: true });
  ant = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0, dangerouslyAllowBrowser: true });
  gen = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: base } });
});

afterAll(async () => {
  server.stop(true);
  for (const up of [claude, gemini, azure, bedrock, vertex]) up.stop();
  await fx.close();
});

type Refusal = { status: number; says: string };
type Expect = "ok" | Refusal;
const refused = (status: number, says: string): Refusal => ({ status, says });

/**
 * One row of the matrix: `expect(kind)` says what the kind answers; `run` performs the call and checks a
 * working cell. A refused cell must fail with that status and message, and must not reach the upstream.
 */
function row(name: string, expectOf: (kind: Kind) => Expect, run: (kind: Kind) => Promise<void>) {
  describe(name, () => {
    for (const kind of KINDS) {
      const want = expectOf(kind);
      test(`${kind}: ${want === "ok" ? "works" : `${want.status} refused`}`, async () => {
        if (want === "ok") return run(kind);
        const calls = upstreamCalls(kind);
        const err: any = await run(kind).then(
          () => null,
          (e) => e,
        );
        expect(err).not.toBeNull();
        expect(err.status).toBe(want.status);
        expect(String(err.message)).toContain(want.says);
        expect(upstreamCalls(kind)).toBe(calls);
      });
    }
  });
}

const everywhere = (): Expect => "ok";
const weather: OpenAI.ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather by city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const shape = {
  type: "object",
  properties: { name: { type: "string" }, count: { type: "integer" } },
  required: ["name", "count"],
  additionalProperties: false,
};
const user = (content: string): OpenAI.ChatCompletionMessageParam[] => [{ role: "user", content }];

async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>) {
  const text = new Map<number, string>();
  let reasoning = "";
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const c of stream) {
    for (const ch of c.choices) {
      text.set(ch.index, (text.get(ch.index) ?? "") + (ch.delta?.content ?? ""));
      reasoning += (ch.delta as any)?.reasoning_content ?? "";
    }
    if (c.usage) usage = c.usage;
  }
  return { text, reasoning, usage };
}

describe("openai SDK", () => {
  row("chat", everywhere, async (kind) => {
    const r = await oai.chat.completions.create({ model: model(kind), messages: user("Hi") });
    expect(r.choices[0]!.message.content).toBe(TEXT[kind]);
    expect(r.usage!.total_tokens).toBeGreaterThan(0);
  });

  row("chat, streamed with usage", everywhere, async (kind) => {
    const s = await collect(
      await oai.chat.completions.create({
        model: model(kind),
        messages: user("Hi"),
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(s.text.get(0)).toBe(TEXT[kind]);
    expect(s.usage!.total_tokens).toBeGreaterThan(0);
  });

  row("tools", everywhere, async (kind) => {
    const r = await oai.chat.completions.create({
      model: model(kind),
      messages: user("Weather in Paris?"),
      tools: [weather],
    });
    const call = r.choices[0]!.message.tool_calls![0] as any;
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
  });

  row("tools, streamed", everywhere, async (kind) => {
    const final = await oai.chat.completions
      .stream({ model: model(kind), messages: user("Weather in Paris?"), tools: [weather] })
      .finalChatCompletion();
    const call = final.choices[0]!.message.tool_calls![0] as any;
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
  });

  const jsonSchema = { type: "json_schema" as const, json_schema: { name: "thing", schema: shape, strict: true } };
  row("response_format json_schema", everywhere, async (kind) => {
    const r = await oai.chat.completions.create({
      model: model(kind),
      messages: user("A thing"),
      response_format: jsonSchema,
    });
    expect(JSON.parse(r.choices[0]!.message.content!)).toEqual({ name: "Paris", count: 7 });
    expect(r.choices[0]!.finish_reason).toBe("stop");
    const sent = lastBody(kind);
    if (CLAUDE_KINDS.includes(kind)) {
      expect(sent.tool_choice).toEqual({ type: "tool", name: "structured_output" });
      expect(sent.tools[0].input_schema).toEqual(shape);
    } else if (GEMINI_KINDS.includes(kind)) {
      expect(sent.generationConfig.responseMimeType).toBe("application/json");
      expect(sent.generationConfig.responseSchema.properties.count).toEqual({ type: "integer" });
    } else expect(sent.response_format).toEqual(jsonSchema);
  });

  row("response_format json_schema, streamed", everywhere, async (kind) => {
    const s = await collect(
      await oai.chat.completions.create({
        model: model(kind),
        messages: user("A thing"),
        response_format: jsonSchema,
        stream: true,
      }),
    );
    expect(JSON.parse(s.text.get(0)!)).toEqual({ name: "Paris", count: 7 });
  });

  row("response_format json_object", everywhere, async (kind) => {
    const r = await oai.chat.completions.create({
      model: model(kind),
      messages: user("Some JSON"),
      response_format: { type: "json_object" },
    });
    const parsed = JSON.parse(r.choices[0]!.message.content!);
    expect(typeof parsed).toBe("object");
    expect(Array.isArray(parsed)).toBe(false);
  });

  row("reasoning_effort, reasoning back as reasoning_content", everywhere, async (kind) => {
    const r = await oai.chat.completions.create({
      model: model(kind),
      messages: user("Think"),
      reasoning_effort: "high",
      max_completion_tokens: 10000,
    } as any);
    expect((r.choices[0]!.message as any).reasoning_content).toBe(THOUGHT[kind]);
    const sent = lastBody(kind);
    if (CLAUDE_KINDS.includes(kind)) expect(sent.thinking).toEqual({ type: "enabled", budget_tokens: 8000 });
    else if (GEMINI_KINDS.includes(kind))
      expect(sent.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 6000, includeThoughts: true });
    else expect(sent.reasoning_effort).toBe("high");
  });

  row("reasoning_effort, streamed", everywhere, async (kind) => {
    const s = await collect(
      await oai.chat.completions.create({
        model: model(kind),
        messages: user("Think"),
        reasoning_effort: "low",
        stream: true,
      }),
    );
    expect(s.reasoning).toBe(THOUGHT[kind]);
    expect(s.text.get(0)).toBe(TEXT[kind]);
  });

  row("n = 2", everywhere, async (kind) => {
    const before = upstreamCalls(kind);
    const r = await oai.chat.completions.create({ model: model(kind), messages: user("Twice"), n: 2 });
    expect(r.choices.map((c) => [c.index, c.message.content])).toEqual([
      [0, TEXT[kind]],
      [1, TEXT[kind]],
    ]);
    // Claude has no n: the gateway sends the request twice.
    expect(upstreamCalls(kind) - before).toBe(CLAUDE_KINDS.includes(kind) ? 2 : 1);
  });

  row(
    "n = 2, streamed",
    (kind) => (CLAUDE_KINDS.includes(kind) ? refused(400, "n > 1 cannot be streamed from a Claude channel") : "ok"),
    async (kind) => {
      const s = await collect(
        await oai.chat.completions.create({ model: model(kind), messages: user("Twice"), n: 2, stream: true }),
      );
      expect([s.text.get(0), s.text.get(1)]).toEqual([TEXT[kind], TEXT[kind]]);
    },
  );

  row(
    "embeddings",
    (kind) =>
      ["openai", "gemini", "azure"].includes(kind)
        ? "ok"
        : refused(501, "/v1/embeddings is not supported by the channels serving model"),
    async (kind) => {
      const e = await oai.embeddings.create({ model: embModel(kind), input: "vector me", encoding_format: "float" });
      expect(e.data[0]!.embedding.length).toBeGreaterThan(1);
    },
  );

  row(
    "image edits (multipart)",
    (kind) =>
      OPENAI_KINDS.includes(kind)
        ? "ok"
        : refused(501, "/v1/images/edits is not supported by the channels serving model"),
    async (kind) => {
      const image = await toFile(new Uint8Array([137, 80, 78, 71]), "in.png", { type: "image/png" });
      const r = await oai.images.edit({ model: imgModel(kind), image, prompt: "a hat" });
      expect(Buffer.from(r.data![0]!.b64_json!, "base64").toString()).toBe(
        kind === "openai" ? "edited 4 bytes: a hat" : "azure edited for gpt-image-1",
      );
    },
  );

  test("an unknown model is a NotFoundError (404 model_not_found), not a retried 503", async () => {
    const err: any = await oai.chat.completions.create({ model: "mx-nobody", messages: user("x") }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe("model_not_found");
  });

  test("models.list and retrieve", async () => {
    const ids: string[] = [];
    for await (const m of oai.models.list()) ids.push(m.id);
    expect(ids).toContain("mx-claude");
    expect((await oai.models.retrieve("mx-gemini")).owned_by).toBe("gemini");
  });
});

describe("openai SDK, Responses API", () => {
  row("create", everywhere, async (kind) => {
    const r = await oai.responses.create({
      model: model(kind),
      input: "Hi",
      instructions: "Be brief.",
      max_output_tokens: 200,
    });
    expect(r.output_text).toBe(TEXT[kind]);
    expect(r.status).toBe("completed");
    expect(r.usage!.total_tokens).toBeGreaterThan(0);
    if (kind === "openai") expect(lastPath(kind)).toBe("/v1/responses");
    else if (OPENAI_KINDS.includes(kind))
      expect(lastBody(kind).messages).toEqual([
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ]);
  });

  row("stream: typed events the SDK assembles", everywhere, async (kind) => {
    const stream = oai.responses.stream({ model: model(kind), input: "Hi" });
    const types: string[] = [];
    let deltas = "";
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === "response.output_text.delta") deltas += ev.delta;
    }
    const final = await stream.finalResponse();
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe("response.completed");
    expect(types).toContain("response.output_item.done");
    expect(deltas).toBe(TEXT[kind]);
    expect(final.output_text).toBe(TEXT[kind]);
  });

  const fnTool = {
    type: "function" as const,
    name: "get_weather",
    description: "Weather by city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    strict: false,
  };
  row("function tools: call, then the output sent back", everywhere, async (kind) => {
    const r = await oai.responses.create({ model: model(kind), input: "Weather in Paris?", tools: [fnTool] });
    const call = r.output.find((o) => o.type === "function_call") as any;
    expect(call).toMatchObject({ type: "function_call", name: "get_weather" });
    expect(JSON.parse(call.arguments)).toEqual({ city: "Paris" });
    const again = await oai.responses.create({
      model: model(kind),
      tools: [fnTool],
      input: [
        { role: "user", content: "Weather in Paris?" },
        { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: "function_call_output", call_id: call.call_id, output: "18 degrees" },
      ],
    });
    if (kind === "openai") expect(again.output_text).toBe("Hello world!");
    else {
      const flat = JSON.stringify(lastBody(kind));
      expect(flat).toContain("18 degrees");
      // Gemini pairs a function's response with its call by name; the others by the call's id.
      expect(flat).toContain(GEMINI_KINDS.includes(kind) ? '"functionResponse":{"name":"get_weather"' : call.call_id);
    }
  });

  row("function tools, streamed", everywhere, async (kind) => {
    const final = await oai.responses
      .stream({ model: model(kind), input: "Weather in Paris?", tools: [fnTool] })
      .finalResponse();
    const call = final.output.find((o) => o.type === "function_call") as any;
    expect(JSON.parse(call.arguments)).toEqual({ city: "Paris" });
  });

  row("reasoning comes back as a reasoning item", everywhere, async (kind) => {
    const r = await oai.responses.create({
      model: model(kind),
      input: "Think",
      reasoning: { effort: "medium", summary: "auto" },
    });
    if (kind === "openai") {
      expect(lastBody(kind).reasoning).toEqual({ effort: "medium", summary: "auto" });
      return;
    }
    const item = r.output.find((o) => o.type === "reasoning") as any;
    expect(item.summary[0].text).toBe(THOUGHT[kind]);
    expect(r.output_text).toBe(TEXT[kind]);
  });

  row("previous_response_id", everywhere, async (kind) => {
    const first = await oai.responses.create({ model: model(kind), input: "My name is Ada." });
    await oai.responses.create({ model: model(kind), input: "What is my name?", previous_response_id: first.id });
    const sent = lastBody(kind);
    // OpenAI keeps its own conversations; the others get the earlier turns from the gateway.
    if (kind === "openai") expect(sent.previous_response_id).toBe(first.id);
    else expect(JSON.stringify(sent)).toContain("My name is Ada.");
    if (OPENAI_KINDS.includes(kind) && kind !== "openai") {
      expect(sent.messages).toEqual([
        { role: "user", content: "My name is Ada." },
        { role: "assistant", content: TEXT[kind] },
        { role: "user", content: "What is my name?" },
      ]);
    }
  });

  row("text.format json_schema", everywhere, async (kind) => {
    const r = await oai.responses.create({
      model: model(kind),
      input: "A thing",
      text: { format: { type: "json_schema", name: "thing", schema: shape, strict: true } },
    });
    if (kind === "openai") expect(lastBody(kind).text.format.name).toBe("thing");
    else expect(JSON.parse(r.output_text)).toEqual({ name: "Paris", count: 7 });
  });

  // Codex offers web_search by default: a converted channel answers without it rather than refusing the call.
  row("a built-in tool", everywhere, async (kind) => {
    const r = await oai.responses.create({
      model: model(kind),
      input: "News?",
      tools: [{ type: "web_search" } as any],
    });
    if (kind === "openai") expect(lastBody(kind).tools).toEqual([{ type: "web_search" }]);
    else {
      expect(lastBody(kind).tools ?? []).toEqual([]);
      expect(r.output_text).toBe(TEXT[kind]);
    }
  });

  row(
    "a forced built-in tool",
    (kind) =>
      kind === "openai" ? "ok" : refused(400, 'tool_choice {"type":"web_search"} is not supported on this channel'),
    async (kind) => {
      await oai.responses.create({
        model: model(kind),
        input: "News?",
        tools: [{ type: "web_search" } as any],
        tool_choice: { type: "web_search" } as any,
      });
      expect(lastBody(kind).tool_choice).toEqual({ type: "web_search" });
    },
  );

  test("an unknown previous_response_id on a converted channel is a 400 naming it", async () => {
    const err: any = await oai.responses
      .create({ model: "mx-claude", input: "x", previous_response_id: "resp_unknown" })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toContain("previous_response_id 'resp_unknown' is not known to this gateway");
  });

  test("retrieve and delete a converted response", async () => {
    const r = await oai.responses.create({ model: "mx-gemini", input: "Keep me" });
    expect((await oai.responses.retrieve(r.id)).output_text).toBe(GEMINI_TEXT);
    await oai.responses.delete(r.id);
    expect(((await oai.responses.retrieve(r.id).catch((e) => e)) as any).status).toBe(404);
  });
});

const claudeWeather = {
  name: "get_weather",
  description: "Weather by city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};
const claudeText = (m: Anthropic.Message) =>
  m.content
    .filter((b) => b.type === "text")
    .map((b: any) => b.text)
    .join("");

describe("anthropic SDK", () => {
  row("messages", everywhere, async (kind) => {
    const m = await ant.messages.create({
      model: model(kind),
      max_tokens: 100,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(claudeText(m)).toBe(TEXT[kind]);
    expect(m.usage.output_tokens).toBeGreaterThan(0);
  });

  row("stream", everywhere, async (kind) => {
    const final = await ant.messages
      .stream({ model: model(kind), max_tokens: 100, messages: [{ role: "user", content: "Hi" }] })
      .finalMessage();
    expect(claudeText(final)).toBe(TEXT[kind]);
  });

  row("tools", everywhere, async (kind) => {
    const m = await ant.messages.create({
      model: model(kind),
      max_tokens: 100,
      tools: [claudeWeather],
      messages: [{ role: "user", content: "Weather?" }],
    });
    expect(m.content.find((b) => b.type === "tool_use")).toMatchObject({
      name: "get_weather",
      input: { city: "Paris" },
    });
    expect(m.stop_reason).toBe("tool_use");
  });

  row("thinking: budget carried, thinking blocks back", everywhere, async (kind) => {
    const m = await ant.messages.create({
      model: model(kind),
      max_tokens: 4000,
      thinking: { type: "enabled", budget_tokens: 2048 },
      messages: [{ role: "user", content: "Think" }],
    });
    expect(m.content[0]).toMatchObject({ type: "thinking", thinking: THOUGHT[kind] });
    const sent = lastBody(kind);
    if (CLAUDE_KINDS.includes(kind)) expect(sent.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    else if (GEMINI_KINDS.includes(kind))
      expect(sent.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 2048, includeThoughts: true });
    else expect(sent.reasoning_effort).toBe("low");
  });

  row("thinking, streamed", everywhere, async (kind) => {
    const final = await ant.messages
      .stream({
        model: model(kind),
        max_tokens: 4000,
        thinking: { type: "enabled", budget_tokens: 2048 },
        messages: [{ role: "user", content: "Think" }],
      })
      .finalMessage();
    expect(final.content[0]).toMatchObject({ type: "thinking", thinking: THOUGHT[kind] });
    expect(claudeText(final)).toBe(TEXT[kind]);
  });

  row("structured output (output_config.format)", everywhere, async (kind) => {
    const m = await ant.messages.create({
      model: model(kind),
      max_tokens: 200,
      output_config: { format: { type: "json_schema", schema: shape } },
      messages: [{ role: "user", content: "A thing" }],
    } as any);
    expect(JSON.parse(claudeText(m))).toEqual({ name: "Paris", count: 7 });
  });

  row(
    "a Claude server tool",
    (kind) =>
      CLAUDE_KINDS.includes(kind) ? "ok" : refused(400, "tool type 'web_search_20250305' is a Claude server tool"),
    async (kind) => {
      await ant.messages.create({
        model: model(kind),
        max_tokens: 100,
        tools: [{ type: "web_search_20250305", name: "web_search" } as any],
        messages: [{ role: "user", content: "News?" }],
      });
      expect(lastBody(kind).tools[0].type).toBe("web_search_20250305");
    },
  );

  test("an unknown model is a NotFoundError (not_found_error)", async () => {
    const err: any = await ant.messages
      .create({ model: "mx-nobody", max_tokens: 10, messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(err.error.error.type).toBe("not_found_error");
  });

  test("models.list and retrieve in Anthropic's shape", async () => {
    const ids: string[] = [];
    for await (const m of ant.models.list()) ids.push(m.id);
    expect(ids).toContain("mx-openai");
    const one = await ant.models.retrieve("mx-claude");
    expect(one).toMatchObject({ type: "model", id: "mx-claude", display_name: "mx-claude" });
  });
});

const genWeather = {
  name: "get_weather",
  description: "Weather by city",
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING, nullable: true } }, required: ["city"] },
};
const genShape = {
  type: Type.OBJECT,
  properties: { name: { type: Type.STRING }, count: { type: Type.INTEGER } },
  required: ["name", "count"],
  propertyOrdering: ["name", "count"],
};
const geminiStatus = (e: any) => Number(e?.status ?? 0);

describe("genai SDK", () => {
  row("generateContent", everywhere, async (kind) => {
    const r = await gen.models.generateContent({ model: model(kind), contents: "Hi" });
    expect(r.text).toBe(TEXT[kind]);
    expect(r.usageMetadata!.totalTokenCount).toBeGreaterThan(0);
  });

  row("generateContentStream", everywhere, async (kind) => {
    let text = "";
    for await (const c of await gen.models.generateContentStream({ model: model(kind), contents: "Hi" }))
      text += c.text ?? "";
    expect(text).toBe(TEXT[kind]);
  });

  row("function calling with Gemini's upper-case schema types", everywhere, async (kind) => {
    const r = await gen.models.generateContent({
      model: model(kind),
      contents: "Weather?",
      config: { tools: [{ functionDeclarations: [genWeather] }] },
    });
    expect(r.functionCalls).toEqual([{ name: "get_weather", args: { city: "Paris" } }]);
    const sent = lastBody(kind);
    const json = { type: "object", properties: { city: { type: ["string", "null"] } }, required: ["city"] };
    if (CLAUDE_KINDS.includes(kind)) expect(sent.tools[0].input_schema).toEqual(json);
    else if (OPENAI_KINDS.includes(kind)) expect(sent.tools[0].function.parameters).toEqual(json);
    else expect(sent.tools[0].functionDeclarations[0].parameters.type).toBe("OBJECT");
  });

  row("responseSchema (Gemini's schema) → JSON", everywhere, async (kind) => {
    const r = await gen.models.generateContent({
      model: model(kind),
      contents: "A thing",
      config: { responseMimeType: "application/json", responseSchema: genShape },
    });
    expect(JSON.parse(r.text!)).toEqual({ name: "Paris", count: 7 });
  });

  row("responseJsonSchema → JSON", everywhere, async (kind) => {
    const r = await gen.models.generateContent({
      model: model(kind),
      contents: "A thing",
      config: { responseMimeType: "application/json", responseJsonSchema: shape },
    });
    expect(JSON.parse(r.text!)).toEqual({ name: "Paris", count: 7 });
  });

  row("thinkingConfig: budget carried, thought parts back", everywhere, async (kind) => {
    const r = await gen.models.generateContent({
      model: model(kind),
      contents: "Think",
      config: { thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } },
    });
    const parts = r.candidates![0]!.content!.parts!;
    expect(parts[0]).toMatchObject({ thought: true, text: THOUGHT[kind] });
    expect(r.text).toBe(TEXT[kind]);
    const sent = lastBody(kind);
    if (CLAUDE_KINDS.includes(kind)) expect(sent.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    else if (OPENAI_KINDS.includes(kind)) expect(sent.reasoning_effort).toBe("low");
  });

  row("candidateCount 2", everywhere, async (kind) => {
    const r = await gen.models.generateContent({
      model: model(kind),
      contents: "Twice",
      config: { candidateCount: 2 },
    });
    expect(r.candidates!.map((c) => c.content!.parts!.map((p) => p.text).join(""))).toEqual([TEXT[kind], TEXT[kind]]);
  });

  row(
    "candidateCount 2, streamed",
    (kind) => (CLAUDE_KINDS.includes(kind) ? refused(400, "n > 1 cannot be streamed from a Claude channel") : "ok"),
    async (kind) => {
      const text = ["", ""];
      for await (const c of await gen.models.generateContentStream({
        model: model(kind),
        contents: "Twice",
        config: { candidateCount: 2 },
      })) {
        for (const cand of c.candidates ?? [])
          text[cand.index ?? 0] += (cand.content?.parts ?? []).map((p) => p.text ?? "").join("");
      }
      expect(text).toEqual([TEXT[kind], TEXT[kind]]);
    },
  );

  row(
    "embedContent",
    (kind) =>
      ["openai", "gemini", "azure"].includes(kind)
        ? "ok"
        : refused(501, "is not supported by the channels serving model"),
    async (kind) => {
      const r = await gen.models.embedContent({
        model: embModel(kind),
        contents: ["one", "two"],
        config: { outputDimensionality: 3 },
      });
      expect(r.embeddings!.length).toBe(2);
      expect(r.embeddings![0]!.values!.length).toBeGreaterThan(1);
      if (OPENAI_KINDS.includes(kind)) expect(lastBody(kind)).toMatchObject({ input: ["one", "two"], dimensions: 3 });
    },
  );

  row(
    "Google Search grounding",
    (kind) => (GEMINI_KINDS.includes(kind) ? "ok" : refused(400, "tool 'googleSearch' runs on Google's side")),
    async (kind) => {
      await gen.models.generateContent({
        model: model(kind),
        contents: "News?",
        config: { tools: [{ googleSearch: {} }] },
      });
      expect(lastBody(kind).tools).toEqual([{ googleSearch: {} }]);
    },
  );

  test("an unknown model is NOT_FOUND (404)", async () => {
    const err: any = await gen.models.generateContent({ model: "mx-nobody", contents: "x" }).catch((e) => e);
    expect(geminiStatus(err)).toBe(404);
    expect(err.message).toContain("NOT_FOUND");
  });

  test("models.list and models.get", async () => {
    const names: string[] = [];
    for await (const m of await gen.models.list()) names.push(m.name!);
    expect(names).toContain("models/mx-vertex-gemini");
    const one = await gen.models.get({ model: "mx-gemini" });
    expect(one.name).toBe("models/mx-gemini");
    expect(one.supportedActions).toContain("generateContent");
    expect(((await gen.models.get({ model: "nope" }).catch((e) => e)) as any).status).toBe(404);
  });
});

describe("the matrix bills what it served", () => {
  test("every served call left a consume log with a charge", async () => {
    await fx.flush();
    const logs = await logsOf(fx, userId);
    expect(logs.length).toBeGreaterThan(100);
    expect(logs.every((l) => l.type !== 2 || l.quota > 0)).toBe(true);
  });
});

// Used by the Azure native-Responses test below: a channel whose API version has the Responses API.
describe("Azure with a Responses API version", () => {
  test("the call goes to Azure's /openai/responses as it is", async () => {
    const id = await fx.channel({
      type: 3,
      key: "azure-key",
      base_url: azure.url,
      models: ["mx-azure-new"],
      model_mapping: { "mx-azure-new": "gpt-4o" },
    });
    await fx.ctx.deps.db.updateTable("channels").set({ other: "2025-04-01-preview" }).where("id", "=", id).execute();
    invalidateRelayCaches(fx.ctx.deps);
    await fx.option(
      "ModelRatio",
      JSON.stringify({ ...JSON.parse(fx.ctx.deps.options.get("ModelRatio")), "mx-azure-new": 1 }),
    );
    const r = await oai.responses.create({ model: "mx-azure-new", input: "Hi" });
    expect(azure.last().path).toBe("/openai/responses");
    expect(r.output_text).toBe("Hello world!");
  });
});
