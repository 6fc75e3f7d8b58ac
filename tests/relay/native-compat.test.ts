// A client's own format on a channel of the same format passes through: every field, role and content block
// the gateway does not need for billing and routing reaches the upstream as the client sent it, including ones
// newer than the gateway (the upstream decides on those). A converted call maps what has a counterpart and
// refuses with a 400 naming the field, before any upstream call, what has none. Asserted at the mock upstreams.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import { makeServiceAccount, startVertexUpstream, type VertexMock } from "../mocks/vertex-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

let fx: RelayFixture;
let claude: MockUpstream;
let gemini: MockUpstream;
let bedrock: MockUpstream;
let vertex: VertexMock;
let key = "";

const CLAUDE_KINDS = ["claude", "bedrock", "vertex"] as const;
const model = (kind: string) => `nc-${kind}`;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream();
  gemini = startGeminiUpstream();
  const creds = { accessKeyId: "AKIDNATIVE", secretAccessKey: "native/secret", region: "us-east-1" };
  bedrock = startBedrockUpstream(creds);
  vertex = startVertexUpstream();
  const sa = await makeServiceAccount(vertex.url + "/token");
  vertex.trust(sa);
  const kinds = ["claude", "bedrock", "vertex", "openai", "gemini", "o-series", "gpt5", "compat"];
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(kinds.map((k) => [model(k), 1]))));
  await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claude.url,
    models: [model("claude")],
    model_mapping: { [model("claude")]: "claude-sonnet-4-5-20250929" },
  });
  await fx.channel({
    type: 33,
    key: `${creds.accessKeyId}|${creds.secretAccessKey}|us-east-1`,
    base_url: bedrock.url,
    models: [model("bedrock")],
    model_mapping: { [model("bedrock")]: "anthropic.claude-sonnet-4-5-20250929-v1:0" },
  });
  await fx.channel({
    type: 41,
    key: JSON.stringify(sa.json),
    base_url: vertex.url,
    models: [model("vertex")],
    model_mapping: { [model("vertex")]: "claude-sonnet-4-5@20250929" },
  });
  await fx.channel({
    type: 1,
    base_url: fx.mock.url,
    models: [model("openai")],
    model_mapping: { [model("openai")]: "gpt-4o-mini" },
  });
  await fx.channel({
    type: 1,
    base_url: fx.mock.url,
    models: [model("o-series")],
    model_mapping: { [model("o-series")]: "o4-mini" },
  });
  await fx.channel({
    type: 1,
    base_url: fx.mock.url,
    models: [model("gpt5")],
    model_mapping: { [model("gpt5")]: "gpt-5.1-codex" },
  });
  // DeepSeek (43): an OpenAI-compatible API that documents max_tokens.
  await fx.channel({
    type: 43,
    base_url: fx.mock.url,
    models: [model("compat")],
    model_mapping: { [model("compat")]: "deepseek-reasoner" },
  });
  await fx.channel({
    type: 24,
    key: "gemini-key",
    base_url: gemini.url,
    models: [model("gemini")],
    model_mapping: { [model("gemini")]: "gemini-2.5-flash" },
  });
  const user = await fx.user(500_000_000);
  key = (await fx.token(user.id, { remain_quota: 400_000_000 })).key;
});

afterAll(async () => {
  for (const up of [claude, gemini, bedrock, vertex]) up.stop();
  await fx.close();
});

/** What Claude Code 2.1 sends with its default tools: a system message in the middle of `messages`. */
const claudeCodeMessages = () => [
  { role: "user", content: [{ type: "text", text: "List the files." }] },
  { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } }] },
  { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "a.txt\nb.txt" }] },
  { role: "system", content: [{ type: "text", text: "The working directory changed to /tmp." }] },
];
const bash = {
  name: "Bash",
  description: "Runs a shell command",
  input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
};

const messages = (kind: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fx.call(
    "/v1/messages",
    key,
    { model: model(kind), max_tokens: 100, ...body },
    { "anthropic-version": "2023-06-01", ...headers },
  );

const upstreamOf = (kind: string): MockUpstream =>
  (({ claude, bedrock, vertex }) as Record<string, MockUpstream>)[kind]!;

test("Claude client, Claude channel: a mid-conversation system message reaches Anthropic where it was sent", async () => {
  const sent = claudeCodeMessages();
  const res = await messages(
    "claude",
    { messages: sent, tools: [bash] },
    { "anthropic-beta": "mid-conversation-system-2026-04-07" },
  );
  const answer = await res.json();
  expect(answer.error).toBeUndefined();
  expect(res.status).toBe(200);
  expect(answer.type).toBe("message");
  expect(claude.last().body.messages).toEqual(sent);
});

for (const kind of ["bedrock", "vertex"]) {
  test(`Claude client, ${kind} channel (no mid-conversation system messages there): its text joins the top-level system`, async () => {
    const sent = [...claudeCodeMessages(), { role: "user", content: "And now?" }];
    const res = await messages(kind, {
      system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
      messages: sent,
      tools: [bash],
    });
    const answer = await res.json();
    expect(answer.error).toBeUndefined();
    expect(res.status).toBe(200);
    const got = upstreamOf(kind).last().body;
    expect(got.system).toEqual([
      { type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } },
      { type: "text", text: "The working directory changed to /tmp." },
    ]);
    // The turns around it, two user turns now side by side, become one.
    expect(got.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(got.messages[2].content).toEqual([
      { type: "tool_result", tool_use_id: "toolu_1", content: "a.txt\nb.txt" },
      { type: "text", text: "And now?" },
    ]);
  });

  test(`Claude client, ${kind} channel: a body without system messages goes as it came`, async () => {
    const sent = [{ role: "user", content: "hi" }];
    expect((await messages(kind, { system: "Be brief.", messages: sent })).status).toBe(200);
    const got = upstreamOf(kind).last().body;
    expect([got.system, got.messages]).toEqual(["Be brief.", sent]);
  });
}

for (const kind of CLAUDE_KINDS) {
  test(`Claude client, ${kind} channel: fields, blocks and roles newer than the gateway pass through for the upstream to judge`, async () => {
    const calls = upstreamOf(kind).requests.length;
    const sent = [
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "future_block", payload: { x: 1 } },
        ],
      },
      { role: "narrator", content: "a role from a later API version" },
    ];
    const res = await messages(kind, {
      messages: sent,
      context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
    });
    // The mock refuses the unknown role as the API does: the gateway forwarded it and relays the upstream's verdict.
    expect(upstreamOf(kind).requests.length).toBe(calls + 1);
    const got = upstreamOf(kind).last().body;
    expect(got.messages).toEqual(sent);
    expect(got.context_management).toEqual({ edits: [{ type: "clear_tool_uses_20250919" }] });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toContain("messages.1.role");
  });
}

test("Claude client, count_tokens: a mid-conversation system message and unknown blocks are counted, not refused", async () => {
  const res = await fx.call("/v1/messages/count_tokens", key, {
    model: model("claude"),
    messages: [...claudeCodeMessages(), { role: "assistant", content: [{ type: "future_block" }] }],
    mcp_servers: [{ type: "url", url: "https://x", name: "x" }],
  });
  expect(res.status).toBe(200);
  expect((await res.json()).input_tokens).toBeGreaterThan(10);
});

test("Claude client, OpenAI channel: a mid-conversation system message becomes a system message at that point", async () => {
  const res = await messages("openai", { system: "Be brief.", messages: claudeCodeMessages(), tools: [bash] });
  expect(res.status).toBe(200);
  const sent = fx.mock.seen.at(-1)!.body;
  expect(sent.messages.map((m: any) => m.role)).toEqual(["system", "user", "assistant", "tool", "system"]);
  expect(sent.messages[4]).toEqual({ role: "system", content: "The working directory changed to /tmp." });
  expect(sent.messages[0]).toEqual({ role: "system", content: "Be brief." });
});

test("Claude client, Gemini channel: a mid-conversation system message goes into systemInstruction", async () => {
  const res = await messages("gemini", { system: "Be brief.", messages: claudeCodeMessages(), tools: [bash] });
  expect(res.status).toBe(200);
  const sent = gemini.last().body;
  const system = sent.systemInstruction.parts.map((p: any) => p.text).join("\n");
  expect(system).toContain("Be brief.");
  expect(system).toContain("The working directory changed to /tmp.");
  expect(JSON.stringify(sent.contents)).not.toContain("working directory");
});

for (const kind of ["openai", "gemini"]) {
  test(`Claude client, ${kind} channel: a role with no counterpart is refused with a 400 naming it, before any upstream call`, async () => {
    const before = fx.mock.seen.length + gemini.requests.length;
    const res = await messages(kind, {
      messages: [
        { role: "user", content: "hi" },
        { role: "narrator", content: "x" },
      ],
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toContain("messages.1.role");
    expect(fx.mock.seen.length + gemini.requests.length).toBe(before);
  });

  test(`Claude client, ${kind} channel: a system message with a block that is not text is refused naming the block`, async () => {
    const before = fx.mock.seen.length + gemini.requests.length;
    const res = await messages(kind, {
      messages: [
        { role: "user", content: "hi" },
        { role: "system", content: [{ type: "image", source: { type: "url", url: "https://x/y.png" } }] },
      ],
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toContain("messages.1.content.0");
    expect(fx.mock.seen.length + gemini.requests.length).toBe(before);
  });
}

test("OpenAI client, OpenAI channel: fields and roles newer than the gateway reach the upstream as sent", async () => {
  const body = {
    model: model("openai"),
    verbosity: "low",
    prompt_cache_key: "conv-1",
    safety_identifier: "u1",
    future_knob: { a: [1, 2] },
    messages: [
      { role: "developer", content: "Be brief." },
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "future_part", x: 1 },
        ],
      },
      { role: "critic", content: "later" },
    ],
  };
  const res = await fx.call("/v1/chat/completions", key, body);
  expect(res.status).toBe(200);
  const sent = fx.mock.seen.at(-1)!.body;
  expect({ ...sent, model: body.model }).toEqual(body);
});

test("Gemini client, Gemini channel: fields and parts newer than the gateway reach the upstream as sent", async () => {
  const body = {
    contents: [{ role: "user", parts: [{ text: "hi" }, { futurePart: { a: 1 } }] }],
    generationConfig: { mediaResolution: "MEDIA_RESOLUTION_LOW", futureSetting: true },
    labels: { team: "x" },
    futureTopLevel: [1],
  };
  const res = await fx.call(`/v1beta/models/${model("gemini")}:generateContent`, key, body);
  expect(res.status).toBe(200);
  expect(gemini.last().body).toEqual(body);
});

/** Gemini CLI's routing call: its schemas written with Gemini's upper-case type names. */
const routerSchema = {
  type: "OBJECT",
  properties: {
    reasoning: { type: "STRING" },
    model_choice: { type: "STRING", enum: ["flash", "pro"] },
    score: { type: "NUMBER", nullable: true },
  },
  required: ["reasoning", "model_choice"],
};
const routerJson = {
  type: "object",
  properties: {
    reasoning: { type: "string" },
    model_choice: { type: "string", enum: ["flash", "pro"] },
    score: { type: ["number", "null"] },
  },
  required: ["reasoning", "model_choice"],
};
const readFile = {
  name: "read_file",
  description: "Reads a file",
  parametersJsonSchema: { type: "OBJECT", properties: { path: { type: "STRING" } }, required: ["path"] },
};
const readFileJson = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };

for (const kind of ["openai", "claude"]) {
  test(`Gemini client, ${kind} channel: upper-case schema types in responseJsonSchema become JSON Schema`, async () => {
    const res = await fx.call(`/v1beta/models/${model(kind)}:generateContent`, key, {
      contents: [{ role: "user", parts: [{ text: "Route this prompt." }] }],
      generationConfig: { responseMimeType: "application/json", responseJsonSchema: routerSchema },
    });
    const answer = await res.json();
    expect(answer.error).toBeUndefined();
    expect(res.status).toBe(200);
    expect(JSON.parse(answer.candidates[0].content.parts[0].text).model_choice).toBeDefined();
    if (kind === "openai") expect(fx.mock.seen.at(-1)!.body.response_format.json_schema.schema).toEqual(routerJson);
    else expect(claude.last().body.tools[0].input_schema).toEqual(routerJson);
  });

  test(`Gemini client, ${kind} channel: upper-case schema types in parametersJsonSchema and parameters become JSON Schema`, async () => {
    const parameters = {
      type: "OBJECT",
      properties: { pattern: { type: "STRING" }, limit: { type: "INTEGER", minimum: 1 } },
    };
    const res = await fx.call(`/v1beta/models/${model(kind)}:generateContent`, key, {
      contents: [{ role: "user", parts: [{ text: "Read a.txt" }] }],
      tools: [{ functionDeclarations: [readFile, { name: "grep", parameters }] }],
    });
    const answer = await res.json();
    expect(answer.error).toBeUndefined();
    expect(res.status).toBe(200);
    const grepJson = {
      type: "object",
      properties: { pattern: { type: "string" }, limit: { type: "integer", minimum: 1 } },
    };
    if (kind === "openai") {
      expect(fx.mock.seen.at(-1)!.body.tools.map((t: any) => t.function.parameters)).toEqual([readFileJson, grepJson]);
    } else expect(claude.last().body.tools.map((t: any) => t.input_schema)).toEqual([readFileJson, grepJson]);
  });
}

test("Gemini client: a JSON Schema in responseJsonSchema passes to an OpenAI channel unchanged", async () => {
  const schema = {
    type: "object",
    properties: { a: { type: ["string", "null"], description: "x" } },
    additionalProperties: false,
  };
  const res = await fx.call(`/v1beta/models/${model("openai")}:generateContent`, key, {
    contents: [{ role: "user", parts: [{ text: "x" }] }],
    generationConfig: { responseMimeType: "application/json", responseJsonSchema: schema },
  });
  expect(res.status).toBe(200);
  expect(fx.mock.seen.at(-1)!.body.response_format.json_schema.schema).toEqual(schema);
});

const thinking = {
  thinking: { type: "enabled", budget_tokens: 4096 },
  max_tokens: 8192,
  messages: [{ role: "user", content: "Think." }],
};

for (const kind of ["o-series", "gpt5", "openai"]) {
  test(`Claude thinking, ${kind} channel: max_completion_tokens goes with reasoning_effort, never max_tokens`, async () => {
    const res = await messages(kind, thinking);
    const answer = await res.json();
    expect(answer.error).toBeUndefined();
    expect(res.status).toBe(200);
    const sent = fx.mock.seen.at(-1)!.body;
    expect(sent.max_completion_tokens).toBe(8192);
    expect(sent.max_tokens).toBeUndefined();
    expect(sent.reasoning_effort).toBeDefined();
  });
}

test("Claude thinking, an OpenAI-compatible channel with a model of its own: max_tokens stays (its API documents it)", async () => {
  const res = await messages("compat", thinking);
  expect(res.status).toBe(200);
  const sent = fx.mock.seen.at(-1)!.body;
  expect(sent.max_tokens).toBe(8192);
  expect(sent.max_completion_tokens).toBeUndefined();
});

test("Claude client without thinking, reasoning-model channel: max_tokens is sent as max_completion_tokens", async () => {
  const res = await messages("gpt5", { max_tokens: 300, messages: [{ role: "user", content: "hi" }] });
  expect(res.status).toBe(200);
  const sent = fx.mock.seen.at(-1)!.body;
  expect(sent.max_completion_tokens).toBe(300);
  expect(sent.max_tokens).toBeUndefined();
});

test("Gemini client, reasoning-model channel: maxOutputTokens is sent as max_completion_tokens", async () => {
  const res = await fx.call(`/v1beta/models/${model("o-series")}:generateContent`, key, {
    contents: [{ role: "user", parts: [{ text: "x" }] }],
    generationConfig: { maxOutputTokens: 500, thinkingConfig: { thinkingBudget: 2048 } },
  });
  expect(res.status).toBe(200);
  const sent = fx.mock.seen.at(-1)!.body;
  expect(sent.max_completion_tokens).toBe(500);
  expect(sent.max_tokens).toBeUndefined();
});

test("OpenAI client, reasoning-model channel: max_tokens is sent as max_completion_tokens, everything else as sent", async () => {
  const body = {
    model: model("o-series"),
    max_tokens: 200,
    reasoning_effort: "low",
    messages: [{ role: "user", content: "hi" }],
    future_knob: 1,
  };
  const res = await fx.call("/v1/chat/completions", key, body);
  expect(res.status).toBe(200);
  const { max_tokens: _m, ...rest } = body;
  expect(fx.mock.seen.at(-1)!.body).toEqual({ ...rest, model: "o4-mini", max_completion_tokens: 200 });
});

test("OpenAI client, reasoning-model channel: a max_completion_tokens of its own is kept", async () => {
  const res = await fx.call("/v1/chat/completions", key, {
    model: model("gpt5"),
    max_completion_tokens: 50,
    messages: [{ role: "user", content: "hi" }],
  });
  expect(res.status).toBe(200);
  expect(fx.mock.seen.at(-1)!.body.max_completion_tokens).toBe(50);
});

test("Gemini client, countTokens: tools and parts only Gemini has are counted, not refused", async () => {
  const res = await fx.call(`/v1beta/models/${model("gemini")}:countTokens`, key, {
    contents: [
      { role: "user", parts: [{ text: "Search the web for the weather in Paris." }, { futurePart: { a: 1 } }] },
    ],
    tools: [{ googleSearch: {} }],
    cachedContent: "cachedContents/abc",
  });
  expect(res.status).toBe(200);
  expect((await res.json()).totalTokens).toBeGreaterThan(5);
});

test("Claude client, OpenAI channel: a block with no counterpart is refused naming its place", async () => {
  const before = fx.mock.seen.length;
  const res = await messages("openai", {
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "future_block", x: 1 },
        ],
      },
    ],
  });
  expect(res.status).toBe(400);
  expect((await res.json()).error.message).toContain("messages.0.content.1.type");
  expect(fx.mock.seen.length).toBe(before);
});

test("Gemini CLI's sampling settings on a reasoning-model channel: temperature and topP, which those models do not take, are left out", async () => {
  const res = await fx.call(`/v1beta/models/${model("gpt5")}:generateContent`, key, {
    contents: [{ role: "user", parts: [{ text: "x" }] }],
    generationConfig: { temperature: 0, topP: 1, maxOutputTokens: 100 },
  });
  const answer = await res.json();
  expect(answer.error).toBeUndefined();
  expect(res.status).toBe(200);
  const sent = fx.mock.seen.at(-1)!.body;
  expect(sent.temperature).toBeUndefined();
  expect(sent.top_p).toBeUndefined();
  expect(sent.max_completion_tokens).toBe(100);
});

test("a Gemini client's temperature still goes to a model that takes it", async () => {
  const res = await fx.call(`/v1beta/models/${model("openai")}:generateContent`, key, {
    contents: [{ role: "user", parts: [{ text: "x" }] }],
    generationConfig: { temperature: 0.2, topP: 0.9 },
  });
  expect(res.status).toBe(200);
  const sent = fx.mock.seen.at(-1)!.body;
  expect([sent.temperature, sent.top_p]).toEqual([0.2, 0.9]);
});
