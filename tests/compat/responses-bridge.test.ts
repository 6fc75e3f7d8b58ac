// The Responses API on channels whose upstream has chat completions only (DeepSeek, Moonshot, Ollama, vLLM,
// ...): the catalogue says which types have /v1/responses, a channel's `responses_api` setting overrides it,
// and a call to a channel without it is answered through chat completions. Checked with the openai SDK on the
// client side and on the body the mock upstream received (the mock 404s /v1/responses, as those upstreams do).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { relayFixture, logsOf, type RelayFixture } from "../relay/fixtures.ts";
import { COMPAT_TEXT, startCompatUpstream, type CompatReply } from "../mocks/openai-compatible-upstream.ts";
import { CLAUDE_TEXT, CLAUDE_THINKING, startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { GEMINI_SIGNATURE, GEMINI_TEXT, startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { CHANNEL_TYPES, servesNatively } from "../../server/catalogue/channel-types.ts";

let fx: RelayFixture;
let compat: MockUpstream;
let claude: MockUpstream;
let gemini: MockUpstream;
let server: ReturnType<typeof Bun.serve>;
let oai: OpenAI;
let userId: number;
/** What the compat upstream answers next (reset to its default text after each test that sets it). */
let reply: ((body: any) => CompatReply) | undefined;

const MODELS = [
  "rb-deepseek",
  "rb-openai-chat",
  "rb-ollama-native",
  "rb-openai",
  "rb-claude",
  "rb-gemini",
  "rb-gemini3",
  "rb-claude-broken",
];

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  compat = startCompatUpstream({
    key: "sk-deepseek",
    usage: {
      prompt_tokens: 100,
      completion_tokens: 10,
      prompt_tokens_details: { cached_tokens: 40 },
      completion_tokens_details: { reasoning_tokens: 4 },
    },
    reply: (body) => reply?.(body) ?? { text: COMPAT_TEXT },
  });
  const each = (v: number) => JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, v])));
  await fx.option("ModelRatio", each(1));
  await fx.option("CompletionRatio", each(2));
  await fx.option("CacheRatio", each(0.5));
  claude = startClaudeUpstream();
  gemini = startGeminiUpstream();
  await fx.channel({
    type: 1,
    key: "sk-channel-key",
    base_url: fx.mock.url,
    models: ["rb-openai"],
    model_mapping: { "rb-openai": "gpt-4o-mini" },
  });
  await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claude.url,
    models: ["rb-claude", "rb-claude-broken"],
    model_mapping: { "rb-claude": "claude-sonnet-4-20250514", "rb-claude-broken": "claude-sonnet-4-streamerror" },
  });
  await fx.channel({
    type: 24,
    key: "gemini-key",
    base_url: gemini.url,
    models: ["rb-gemini", "rb-gemini3"],
    model_mapping: { "rb-gemini": "gemini-2.5-flash", "rb-gemini3": "gemini-3-pro-preview" },
  });
  await fx.channel({
    type: 43,
    key: "sk-deepseek",
    base_url: compat.url,
    models: ["rb-deepseek"],
    model_mapping: { "rb-deepseek": "deepseek-chat" },
  });
  // An OpenAI channel told that its upstream (a proxy, say) has chat completions only.
  await fx.channel({
    type: 1,
    key: "sk-channel-key",
    base_url: fx.mock.url,
    models: ["rb-openai-chat"],
    model_mapping: { "rb-openai-chat": "gpt-4o-mini" },
    setting: { responses_api: "chat" },
  });
  // An Ollama channel told that its upstream does serve /v1/responses.
  await fx.channel({
    type: 4,
    key: "sk-channel-key",
    base_url: fx.mock.url,
    models: ["rb-ollama-native"],
    model_mapping: { "rb-ollama-native": "gpt-4o-mini" },
    setting: { responses_api: "native" },
  });
  const user = await fx.user(500_000_000);
  userId = user.id;
  const key = (await fx.token(user.id)).key;
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
  oai = new OpenAI({
    apiKey: key,
    baseURL: `http://127.0.0.1:${server.port}/v1`,
    maxRetries: 0,
    dangerouslyAllowBrowser: true,
  });
});

afterAll(async () => {
  server.stop(true);
  for (const up of [compat, claude, gemini]) up.stop();
  await fx.close();
});

/** The SSE events of a streamed call, as the client got them (type and data). */
async function events(body: Record<string, unknown>): Promise<any[]> {
  const res = await fetch(`http://127.0.0.1:${server.port}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${oai.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
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
    for (const t of CHANNEL_TYPES.filter((t) => t.kind === "openai" && t.id !== 1))
      expect([t.name, servesNatively(t.id, "/v1/responses")]).toEqual([t.name, false]);
  });
});

describe("a chat-only upstream serves the Responses API", () => {
  test("non-streamed: the chat request it received, the response object and the bill", async () => {
    const before = compat.requests.length;
    const r = await oai.responses.create({
      model: "rb-deepseek",
      input: "Hi",
      instructions: "Be brief.",
      max_output_tokens: 300,
      temperature: 0.2,
    });
    expect(compat.requests.length).toBe(before + 1);
    const sent = compat.last();
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.body).toEqual({
      model: "deepseek-chat",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
      max_tokens: 300,
      temperature: 0.2,
    });
    expect(r.object).toBe("response");
    expect(r.id).toMatch(/^resp_/);
    expect(r.status).toBe("completed");
    expect(r.model).toBe("rb-deepseek");
    expect(r.output_text).toBe(COMPAT_TEXT);
    expect(r.usage).toEqual({
      input_tokens: 100,
      input_tokens_details: { cached_tokens: 40, cache_write_tokens: 0 },
      output_tokens: 10,
      output_tokens_details: { reasoning_tokens: 4 },
      total_tokens: 110,
    });
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
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(evs.map((e) => e.sequence_number)).toEqual(evs.map((_, i) => i));
    expect(evs[0].response).toMatchObject({
      object: "response",
      status: "in_progress",
      model: "rb-deepseek",
      output: [],
    });
    const item = evs[2].item;
    expect(item).toMatchObject({ type: "message", role: "assistant", status: "in_progress", content: [] });
    expect(
      evs
        .slice(4, 7)
        .map((e) => e.delta)
        .join(""),
    ).toBe(COMPAT_TEXT);
    for (const e of evs.slice(2, 10))
      expect([e.type, e.output_index, e.item_id ?? e.item.id]).toEqual([e.type, 0, item.id]);
    const done = evs.at(-1).response;
    expect(done.status).toBe("completed");
    expect(done.output).toEqual([
      {
        id: item.id,
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: COMPAT_TEXT, annotations: [], logprobs: [] }],
      },
    ]);
    expect(done.usage).toEqual({
      input_tokens: 100,
      input_tokens_details: { cached_tokens: 40, cache_write_tokens: 0 },
      output_tokens: 10,
      output_tokens_details: { reasoning_tokens: 4 },
      total_tokens: 110,
    });
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

/** The compat upstream answers `r` for the calls `run` makes. */
async function answering<T>(r: CompatReply, run: () => Promise<T>): Promise<T> {
  reply = () => r;
  try {
    return await run();
  } finally {
    reply = undefined;
  }
}

/** The text of a patch Codex's apply_patch would send: newlines, quotes, a backslash and a non-BMP character. */
const PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+say "hi" \\ \u{1F600}\n*** End Patch\n';
const APPLY_PATCH = {
  type: "custom",
  name: "apply_patch",
  description: "Use the `apply_patch` tool to edit files.",
  format: {
    type: "grammar",
    syntax: "lark",
    definition: 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF',
  },
};
const SHELL = {
  type: "function",
  name: "shell",
  description: "Runs a shell command",
  strict: false,
  parameters: {
    type: "object",
    properties: { command: { type: "array", items: { type: "string" } } },
    required: ["command"],
  },
};
/** A call as Codex 0.17x makes it (responses-lite: the tools in an additional_tools item, one in a namespace). */
const codexBody = (input: unknown[]) => ({
  model: "rb-deepseek",
  instructions: "You are Codex.",
  store: false,
  stream: true,
  include: ["reasoning.encrypted_content"],
  reasoning: { effort: "medium", summary: "auto" },
  tool_choice: "auto",
  parallel_tool_calls: false,
  prompt_cache_key: "thread-7",
  text: { verbosity: "low" },
  input: [
    {
      type: "additional_tools",
      role: "developer",
      tools: [
        SHELL,
        APPLY_PATCH,
        {
          type: "namespace",
          name: "mcp",
          description: "MCP tools",
          tools: [{ type: "function", name: "search", parameters: { type: "object", properties: {} } }],
        },
      ],
    },
    ...input,
  ],
});

describe("Codex on a chat-only upstream: custom tools, additional_tools, reasoning carried back", () => {
  test("the chat request: tools from additional_tools (custom → one string argument, namespaced flattened), effort, cache key", async () => {
    await answering({ text: "ok" }, () =>
      events(codexBody([{ type: "message", role: "user", content: [{ type: "input_text", text: "Add hello.txt" }] }])),
    );
    const sent = compat.last().body;
    expect(sent.messages).toEqual([
      { role: "system", content: "You are Codex." },
      { role: "user", content: "Add hello.txt" },
    ]);
    expect(sent.tools).toEqual([
      {
        type: "function",
        function: { name: "shell", description: "Runs a shell command", parameters: SHELL.parameters, strict: false },
      },
      {
        type: "function",
        function: {
          name: "apply_patch",
          description: APPLY_PATCH.description,
          parameters: {
            type: "object",
            required: ["input"],
            additionalProperties: false,
            properties: {
              input: {
                type: "string",
                description: `The tool's whole input, as free-form text, written in this lark grammar:\n${APPLY_PATCH.format.definition}`,
              },
            },
          },
        },
      },
      { type: "function", function: { name: "mcp__search", parameters: { type: "object", properties: {} } } },
    ]);
    expect(sent).toMatchObject({
      model: "deepseek-chat",
      tool_choice: "auto",
      parallel_tool_calls: false,
      reasoning_effort: "medium",
      prompt_cache_key: "thread-7",
      verbosity: "low",
      stream: true,
    });
  });

  test("streamed: reasoning, then apply_patch as a custom tool call whose input streams as text", async () => {
    const args = JSON.stringify({ input: PATCH });
    const evs = await answering(
      { reasoning: "I will add the file.", calls: [{ id: "call_p", name: "apply_patch", arguments: args }] },
      () => events(codexBody([{ role: "user", content: "Add hello.txt" }])),
    );
    expect(evs.map((e) => e.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      ...evs.filter((e) => e.type === "response.custom_tool_call_input.delta").map((e) => e.type),
      "response.custom_tool_call_input.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const deltas = evs.filter((e) => e.type === "response.custom_tool_call_input.delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((e) => e.delta).join("")).toBe(PATCH);
    const added = evs.find((e) => e.type === "response.output_item.added" && e.output_index === 1).item;
    expect(added).toEqual({
      id: added.id,
      type: "custom_tool_call",
      status: "in_progress",
      call_id: "call_p",
      name: "apply_patch",
      input: "",
    });
    expect(evs.find((e) => e.type === "response.custom_tool_call_input.done")).toMatchObject({
      item_id: added.id,
      output_index: 1,
      input: PATCH,
    });
    const done = evs.at(-1).response;
    expect(done.output[0]).toMatchObject({
      type: "reasoning",
      summary: [{ type: "summary_text", text: "I will add the file." }],
    });
    expect(done.output[0].encrypted_content).toEqual(expect.any(String));
    expect(done.output[1]).toEqual({
      id: added.id,
      type: "custom_tool_call",
      status: "completed",
      call_id: "call_p",
      name: "apply_patch",
      input: PATCH,
    });
  });

  test("the next turn: the custom call and its output, the sealed reasoning back as reasoning_content; OpenAI's own ciphertext is left out", async () => {
    const first = await answering(
      {
        reasoning: "Plan: add it.",
        calls: [{ id: "call_p", name: "apply_patch", arguments: JSON.stringify({ input: PATCH }) }],
      },
      () => events(codexBody([{ role: "user", content: "Add hello.txt" }])),
    );
    const [reasoning, call] = first.at(-1).response.output;
    await answering({ text: "Done." }, () =>
      events(
        codexBody([
          { role: "user", content: "Add hello.txt" },
          { type: "reasoning", id: "rs_openai", summary: [], encrypted_content: "gAAAAABopaque" },
          reasoning,
          call,
          {
            type: "custom_tool_call_output",
            call_id: "call_p",
            output: "Success. Updated the following files:\nA hello.txt",
          },
          { type: "function_call", call_id: "call_s", name: "search", namespace: "mcp", arguments: "{}" },
          {
            type: "function_call_output",
            call_id: "call_s",
            output: [
              { type: "input_text", text: "see the picture" },
              { type: "input_image", image_url: "https://x/y.png" },
            ],
          },
        ]),
      ),
    );
    expect(compat.last().body.messages.slice(1)).toEqual([
      { role: "user", content: "Add hello.txt" },
      {
        role: "assistant",
        content: null,
        reasoning_content: "Plan: add it.",
        tool_calls: [
          {
            id: "call_p",
            type: "function",
            function: { name: "apply_patch", arguments: JSON.stringify({ input: PATCH }) },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_p", content: "Success. Updated the following files:\nA hello.txt" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_s", type: "function", function: { name: "mcp__search", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_s", content: "see the picture" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] },
    ]);
  });

  test("an open model's plain reasoning_text goes back as reasoning_content too", async () => {
    await answering({ text: "ok" }, () =>
      oai.responses.create({
        model: "rb-deepseek",
        input: [
          { role: "user", content: "Go" },
          { type: "reasoning", id: "rs_x", summary: [], content: [{ type: "reasoning_text", text: "Plan A." }] },
          { type: "function_call", call_id: "c9", name: "shell", arguments: "{}" },
          { type: "function_call_output", call_id: "c9", output: "ok" },
        ] as any,
        tools: [SHELL] as any,
      }),
    );
    expect(compat.last().body.messages[1]).toMatchObject({
      role: "assistant",
      reasoning_content: "Plan A.",
      tool_calls: [{ id: "c9" }],
    });
  });

  test("non-streamed: custom and namespaced calls come back as custom_tool_call and function_call items", async () => {
    const r: any = await answering(
      {
        calls: [
          { id: "c1", name: "apply_patch", arguments: JSON.stringify({ input: PATCH }) },
          { id: "c2", name: "mcp__search", arguments: "{}" },
        ],
      },
      () => oai.responses.create({ ...codexBody([{ role: "user", content: "Go" }]), stream: false } as any),
    );
    expect(r.output.map((o: any) => [o.type, o.name, o.namespace ?? null, o.input ?? o.arguments])).toEqual([
      ["custom_tool_call", "apply_patch", null, PATCH],
      ["function_call", "search", "mcp", "{}"],
    ]);
  });

  test("streamed function calls: arguments deltas and done, two calls in their order", async () => {
    const evs = await answering(
      {
        calls: [
          { id: "c1", name: "shell", arguments: '{"command":["ls"]}' },
          { id: "c2", name: "shell", arguments: '{"command":["pwd"]}' },
        ],
      },
      () => events(codexBody([{ role: "user", content: "Look" }])),
    );
    const calls = evs.filter((e) => e.type === "response.output_item.done").map((e) => e.item);
    expect(calls.map((c) => [c.type, c.call_id, c.arguments])).toEqual([
      ["function_call", "c1", '{"command":["ls"]}'],
      ["function_call", "c2", '{"command":["pwd"]}'],
    ]);
    const args = (i: number) =>
      evs
        .filter((e) => e.type === "response.function_call_arguments.delta" && e.output_index === i)
        .map((e) => e.delta)
        .join("");
    expect([args(0), args(1)]).toEqual(['{"command":["ls"]}', '{"command":["pwd"]}']);
    expect(
      evs
        .filter((e) => e.type === "response.function_call_arguments.done")
        .map((e) => [e.output_index, e.name, e.arguments]),
    ).toEqual([
      [0, "shell", '{"command":["ls"]}'],
      [1, "shell", '{"command":["pwd"]}'],
    ]);
  });

  test("tool_choice: a custom tool by name, and allowed_tools narrowing the tools sent", async () => {
    await answering({ text: "ok" }, () =>
      oai.responses.create({
        model: "rb-deepseek",
        input: "x",
        tools: [SHELL, APPLY_PATCH] as any,
        tool_choice: { type: "custom", name: "apply_patch" },
      }),
    );
    expect(compat.last().body.tool_choice).toEqual({ type: "function", function: { name: "apply_patch" } });
    await answering({ text: "ok" }, () =>
      oai.responses.create({
        model: "rb-deepseek",
        input: "x",
        tools: [SHELL, APPLY_PATCH] as any,
        tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "shell" }] },
      }),
    );
    expect(compat.last().body.tool_choice).toBe("required");
    expect(compat.last().body.tools.map((t: any) => t.function.name)).toEqual(["shell"]);
  });

  test("text.format json_schema becomes response_format", async () => {
    const schema = {
      type: "object",
      properties: { a: { type: "string" } },
      required: ["a"],
      additionalProperties: false,
    };
    await answering({ text: '{"a":"b"}' }, () =>
      oai.responses.create({
        model: "rb-deepseek",
        input: "x",
        text: { format: { type: "json_schema", name: "thing", schema, strict: true } },
      }),
    );
    expect(compat.last().body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "thing", schema, strict: true },
    });
  });

  test("a tool OpenAI runs itself (Codex offers web_search by default) is not offered; forcing one is a 400 in OpenAI's error format, before any upstream call", async () => {
    await answering({ text: "ok" }, () =>
      oai.responses.create({
        model: "rb-deepseek",
        input: "x",
        tools: [{ type: "web_search", external_web_access: false } as any, SHELL as any],
      }),
    );
    expect(compat.last().body.tools.map((t: any) => t.function.name)).toEqual(["shell"]);
    await answering({ text: "ok" }, () =>
      oai.responses.create({ model: "rb-deepseek", input: "x", tools: [{ type: "web_search" } as any] }),
    );
    expect(compat.last().body.tools).toBeUndefined();
    const before = compat.requests.length;
    const res = await fx.call("/v1/responses", oai.apiKey!, {
      model: "rb-deepseek",
      input: "x",
      tools: [{ type: "web_search" }],
      tool_choice: { type: "web_search" },
    });
    expect(res.status).toBe(400);
    const body: any = await res.json();
    expect(body.error.message).toContain('tool_choice {"type":"web_search"} is not supported on this channel');
    expect(body.error.type).toEqual(expect.any(String));
    expect(compat.requests.length).toBe(before);
  });
});

describe("Claude and Gemini channels take custom tools, additional_tools and item_reference", () => {
  test("Claude: a custom tool from additional_tools is a tool with one string input; its call comes back as a custom_tool_call", async () => {
    const r: any = await oai.responses.create({
      model: "rb-claude",
      input: [
        { type: "additional_tools", role: "developer", tools: [APPLY_PATCH] },
        { role: "user", content: "Patch it" },
      ],
    } as any);
    const sent = claude.last().body;
    expect(sent.tools).toEqual([
      {
        name: "apply_patch",
        description: APPLY_PATCH.description,
        input_schema: expect.objectContaining({
          type: "object",
          required: ["input"],
          properties: { input: expect.objectContaining({ type: "string" }) },
        }),
      },
    ]);
    const call = r.output.find((o: any) => o.type === "custom_tool_call");
    expect(call).toMatchObject({ name: "apply_patch", status: "completed" });
    expect(typeof call.input).toBe("string");
    // the round trip
    const again: any = await oai.responses.create({
      model: "rb-claude",
      input: [
        { type: "additional_tools", role: "developer", tools: [APPLY_PATCH] },
        { role: "user", content: "Patch it" },
        { type: "custom_tool_call", call_id: call.call_id, name: "apply_patch", input: call.input },
        { type: "custom_tool_call_output", call_id: call.call_id, output: "Done" },
      ],
    } as any);
    expect(again.output_text).toBe(CLAUDE_TEXT);
    const blocks = claude.last().body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : []));
    expect(blocks.find((b: any) => b.type === "tool_use")).toMatchObject({
      id: call.call_id,
      name: "apply_patch",
      input: { input: call.input },
    });
    expect(blocks.find((b: any) => b.type === "tool_result")).toMatchObject({
      tool_use_id: call.call_id,
      content: "Done",
    });
  });

  test("Claude: the AI SDK's next step names the gateway's own items by item_reference", async () => {
    const tools = [
      {
        type: "function" as const,
        name: "get_weather",
        parameters: { type: "object", properties: { city: { type: "string" } } },
        strict: false,
      },
    ];
    const first: any = await oai.responses.create({ model: "rb-claude", input: "Weather in Paris?", tools });
    const refs = first.output.map((o: any) => ({ type: "item_reference", id: o.id }));
    const call = first.output.find((o: any) => o.type === "function_call");
    const second: any = await oai.responses.create({
      model: "rb-claude",
      tools,
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...refs,
        { type: "function_call_output", call_id: call.call_id, output: "18 degrees" },
      ],
    } as any);
    expect(second.output_text).toBe(CLAUDE_TEXT);
    const sent = claude.last().body.messages;
    expect(sent.map((m: any) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(sent[1].content.find((b: any) => b.type === "tool_use")).toMatchObject({
      id: call.call_id,
      name: "get_weather",
      input: { city: "Paris" },
    });
    expect(sent[2].content[0]).toMatchObject({ type: "tool_result", tool_use_id: call.call_id, content: "18 degrees" });
  });

  test("an item_reference the gateway does not keep is a 400 naming it on a converted channel", async () => {
    const err: any = await oai.responses
      .create({ model: "rb-claude", input: [{ type: "item_reference", id: "msg_unknown" }] } as any)
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toContain("item_reference 'msg_unknown' is not known to this gateway");
  });

  test("Gemini: a custom tool is a function declaration with one string parameter", async () => {
    const r: any = await oai.responses.create({ model: "rb-gemini", input: "Patch it", tools: [APPLY_PATCH] as any });
    const decl = gemini.last().body.tools[0].functionDeclarations[0];
    expect(decl.name).toBe("apply_patch");
    expect(JSON.stringify(decl)).toContain('"input"');
    expect(r.output.find((o: any) => o.type === "custom_tool_call")).toMatchObject({
      name: "apply_patch",
      status: "completed",
    });
  });
});

describe("compaction and input token counts on every channel", () => {
  const conversation = [
    { role: "user", content: "Add hello.txt" },
    { type: "function_call", call_id: "c1", name: "shell", arguments: '{"command":["ls"]}' },
    { type: "function_call_output", call_id: "c1", output: "README.md" },
    { role: "assistant", content: [{ type: "output_text", text: "There is a README." }] },
  ];

  test("a chat-only channel: the model writes the summary; the answer keeps the user messages and one compaction item; billed by the upstream's usage", async () => {
    await fx.flush();
    const before = (await logsOf(fx, userId)).length;
    const r: any = await answering({ text: "The user wants hello.txt; ls showed README.md." }, () =>
      oai.responses.compact({
        model: "rb-deepseek",
        instructions: "You are Codex.",
        input: conversation as any,
        tools: [SHELL],
      } as any),
    );
    const sent = compat.last().body;
    expect(sent.stream).toBeUndefined();
    expect(sent.messages[0]).toEqual({ role: "system", content: "You are Codex." });
    expect(sent.messages.at(-1).role).toBe("user");
    expect(sent.messages.at(-1).content).toContain("Summarise the conversation");
    expect(sent.tool_choice).toBe("none");
    expect(r.object).toBe("response.compaction");
    expect(r.output.map((o: any) => o.type)).toEqual(["message", "compaction"]);
    expect(r.output[0]).toEqual({
      type: "message",
      role: "user",
      content: [{ type: "input_text", text: "Add hello.txt" }],
    });
    expect(r.usage).toMatchObject({
      input_tokens: 100,
      output_tokens: 10,
      input_tokens_details: { cached_tokens: 40 },
    });
    await fx.flush();
    const logs = await logsOf(fx, userId);
    expect(logs.length).toBe(before + 1);
    expect(logs.at(-1)!.quota).toBe(100);
    // The compacted window continues on any converting channel: the summary is a user message.
    await answering({ text: "ok" }, () =>
      oai.responses.create({ model: "rb-deepseek", input: [...r.output, { role: "user", content: "Go on" }] }),
    );
    expect(compat.last().body.messages).toEqual([
      { role: "user", content: "Add hello.txt" },
      {
        role: "user",
        content: "A summary of the earlier conversation:\nThe user wants hello.txt; ls showed README.md.",
      },
      { role: "user", content: "Go on" },
    ]);
  });

  test("an OpenAI channel compacts upstream; its opaque compaction item is refused by a converting channel, naming it", async () => {
    const r: any = await oai.responses.compact({ model: "rb-openai", input: conversation as any } as any);
    expect(fx.mock.seen.at(-1)!.path).toBe("/v1/responses/compact");
    expect(fx.mock.seen.at(-1)!.body.input).toEqual(conversation);
    expect(r.output.at(-1)).toEqual({ id: "cmp_1", type: "compaction", encrypted_content: "gAAAAABopaque" });
    const log = await lastLog();
    expect(log.quota).toBe(50 + 24);
    const err: any = await oai.responses.create({ model: "rb-deepseek", input: r.output }).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toContain("a compaction item made by another service");
  });

  test("the gateway's sealed items reach a channel with the Responses API as plain input", async () => {
    const r: any = await answering({ text: "Summary." }, () =>
      oai.responses.compact({ model: "rb-deepseek", input: "Hi" } as any),
    );
    const seal = r.output.at(-1).encrypted_content;
    await oai.responses.create({
      model: "rb-openai",
      input: [
        { type: "reasoning", summary: [], encrypted_content: seal },
        r.output.at(-1),
        { role: "user", content: "Go on" },
      ] as any,
    });
    expect(fx.mock.seen.at(-1)!.body.input).toEqual([
      {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "A summary of the earlier conversation:\nSummary." }],
      },
      { role: "user", content: "Go on" },
    ]);
  });

  test("input_tokens: the gateway's count of the request as chat, no upstream call, nothing billed", async () => {
    const calls = compat.requests.length + fx.mock.seen.length;
    await fx.flush();
    const before = (await logsOf(fx, userId)).length;
    const small: any = await oai.responses.inputTokens.count({ model: "rb-deepseek", input: "Hi" } as any);
    const big: any = await oai.responses.inputTokens.count({
      model: "rb-deepseek",
      instructions: "You are Codex, a coding agent.",
      input: conversation as any,
      tools: [SHELL, APPLY_PATCH] as any,
    } as any);
    expect(small.object).toBe("response.input_tokens");
    expect(small.input_tokens).toBeGreaterThan(0);
    expect(big.input_tokens).toBeGreaterThan(small.input_tokens + 20);
    expect(compat.requests.length + fx.mock.seen.length).toBe(calls);
    await fx.flush();
    expect((await logsOf(fx, userId)).length).toBe(before);
  });
});

describe("store and previous_response_id on a chat-only channel", () => {
  test("the next turn gets the earlier ones, the reasoning with its tool call; the response can be read back", async () => {
    const first: any = await answering(
      {
        reasoning: "Need the weather.",
        calls: [{ id: "call_w", name: "shell", arguments: '{"command":["weather"]}' }],
      },
      () => oai.responses.create({ model: "rb-deepseek", input: "Weather?", tools: [SHELL] as any }),
    );
    expect((await oai.responses.retrieve(first.id)).output.map((o: any) => o.type)).toEqual([
      "reasoning",
      "function_call",
    ]);
    const second: any = await answering({ text: "Sunny." }, () =>
      oai.responses.create({
        model: "rb-deepseek",
        previous_response_id: first.id,
        tools: [SHELL] as any,
        input: [{ type: "function_call_output", call_id: "call_w", output: "sunny" }],
      }),
    );
    expect(second.previous_response_id).toBe(first.id);
    expect(compat.last().body.messages).toEqual([
      { role: "user", content: "Weather?" },
      {
        role: "assistant",
        content: null,
        reasoning_content: "Need the weather.",
        tool_calls: [
          { id: "call_w", type: "function", function: { name: "shell", arguments: '{"command":["weather"]}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_w", content: "sunny" },
    ]);
  });
});

describe("Gemini 3's thought signatures come back with its function calls", () => {
  const tools = [
    {
      type: "function" as const,
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } } },
      strict: false,
    },
  ];
  const modelTurn = () => gemini.last().body.contents.find((c: any) => c.role === "model");

  test("streamed, store: false (Codex): a reasoning item before the call carries the signature; sent back, Gemini gets it", async () => {
    const evs = await events({
      model: "rb-gemini3",
      input: "Weather in Paris?",
      tools,
      store: false,
      include: ["reasoning.encrypted_content"],
    });
    const items = evs.filter((e) => e.type === "response.output_item.done").map((e) => e.item);
    const call = items.find((i) => i.type === "function_call");
    const reasoning = items[items.indexOf(call) - 1];
    expect(reasoning).toMatchObject({ type: "reasoning", summary: [] });
    expect(reasoning.encrypted_content).toEqual(expect.any(String));
    const output = evs.at(-1).response.output;
    const r: any = await oai.responses.create({
      model: "rb-gemini3",
      tools,
      store: false,
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...output,
        { type: "function_call_output", call_id: call.call_id, output: "18 degrees" },
      ],
    } as any);
    expect(r.output_text).toBe(GEMINI_TEXT);
    expect(modelTurn().parts.find((p: any) => p.functionCall)).toMatchObject({
      functionCall: { name: "get_weather" },
      thoughtSignature: GEMINI_SIGNATURE,
    });
  });

  test("non-streamed, kept: previous_response_id carries it too", async () => {
    const first: any = await oai.responses.create({ model: "rb-gemini3", input: "Weather in Paris?", tools });
    const call = first.output.find((o: any) => o.type === "function_call");
    const second: any = await oai.responses.create({
      model: "rb-gemini3",
      tools,
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "18 degrees" }],
    });
    expect(second.output_text).toBe(GEMINI_TEXT);
    expect(modelTurn().parts.find((p: any) => p.functionCall).thoughtSignature).toBe(GEMINI_SIGNATURE);
  });

  test("chat clients: the signature rides on the tool call (extra_content.google); a history without one gets Google's placeholder", async () => {
    const ask = {
      model: "rb-gemini3",
      messages: [{ role: "user" as const, content: "Weather in Paris?" }],
      tools: [{ type: "function" as const, function: { name: "get_weather", parameters: tools[0].parameters } }],
    };
    const first: any = await oai.chat.completions.create(ask);
    const call = first.choices[0].message.tool_calls[0];
    expect(call.extra_content).toEqual({ google: { thought_signature: GEMINI_SIGNATURE } });
    const next = (c: any) =>
      oai.chat.completions.create({
        ...ask,
        messages: [
          ...ask.messages,
          { role: "assistant", content: null, tool_calls: [c] },
          { role: "tool", tool_call_id: call.id, content: "18 degrees" },
        ],
      } as any);
    expect((await next(call)).choices[0].message.content).toBe(GEMINI_TEXT);
    expect(modelTurn().parts[0].thoughtSignature).toBe(GEMINI_SIGNATURE);
    const { extra_content: _drop, ...unsigned } = call;
    expect((await next(unsigned)).choices[0].message.content).toBe(GEMINI_TEXT);
    expect(modelTurn().parts[0].thoughtSignature).toBe("skip_thought_signature_validator");
  });
});

describe("billing of converted Responses calls follows the upstream's usage", () => {
  for (const model of ["rb-claude", "rb-gemini"]) {
    for (const stream of [false, true]) {
      test(`${model}${stream ? ", streamed" : ""}: the same bill as the chat call, cache reads and writes included, and the usage shown`, async () => {
        const chat = stream
          ? await (async () => {
              for await (const _ of await oai.chat.completions.create({
                model,
                messages: [{ role: "user", content: "Hi" }],
                stream: true,
              }));
            })()
          : await oai.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }] });
        void chat;
        const viaChat = await lastLog();
        const usage = stream
          ? (await events({ model, input: "Hi" })).at(-1).response.usage
          : (await oai.responses.create({ model, input: "Hi" })).usage;
        const viaResponses = await lastLog();
        expect(viaResponses.id).not.toBe(viaChat.id);
        expect([viaResponses.quota, viaResponses.prompt_tokens, viaResponses.completion_tokens]).toEqual([
          viaChat.quota,
          viaChat.prompt_tokens,
          viaChat.completion_tokens,
        ]);
        expect(JSON.parse(viaResponses.other).cache_tokens ?? 0).toBe(JSON.parse(viaChat.other).cache_tokens ?? 0);
        expect(usage.input_tokens).toBe(viaChat.prompt_tokens);
        expect(usage.output_tokens).toBe(viaChat.completion_tokens);
        if (model === "rb-claude")
          expect(usage.input_tokens_details).toEqual({ cached_tokens: 3, cache_write_tokens: 2 });
      });
    }
  }
});

describe("max_output_tokens", () => {
  test("max_tokens on a chat-only upstream even with reasoning effort (DeepSeek documents max_tokens); max_completion_tokens for OpenAI's reasoning models", async () => {
    await answering({ text: "ok" }, () =>
      oai.responses.create({ model: "rb-deepseek", input: "x", max_output_tokens: 64, reasoning: { effort: "high" } }),
    );
    expect(compat.last().body).toMatchObject({ max_tokens: 64, reasoning_effort: "high" });
    expect(compat.last().body.max_completion_tokens).toBeUndefined();
    await oai.responses.create({
      model: "rb-openai-chat",
      input: "x",
      max_output_tokens: 64,
      reasoning: { effort: "high" },
    });
    expect(fx.mock.seen.at(-1)!.body).toMatchObject({ max_completion_tokens: 64, reasoning_effort: "high" });
    expect(fx.mock.seen.at(-1)!.body.max_tokens).toBeUndefined();
  });
});

describe("Claude's signed thinking comes back, so thinking stays on through a tool loop", () => {
  const tools = [
    {
      type: "function" as const,
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } } },
      strict: false,
    },
  ];
  const assistantTurn = () => claude.last().body.messages.find((m: any) => m.role === "assistant");

  test("streamed, store: false (Codex): the sealed reasoning item gives the thinking block and its signature back", async () => {
    const evs = await events({
      model: "rb-claude",
      input: "Weather in Paris?",
      tools,
      reasoning: { effort: "medium" },
      store: false,
      include: ["reasoning.encrypted_content"],
    });
    const output = evs.at(-1).response.output;
    expect(output.map((o: any) => o.type)).toEqual(["reasoning", "message", "function_call"]);
    const call = output[2];
    const r: any = await oai.responses.create({
      model: "rb-claude",
      tools,
      reasoning: { effort: "medium" },
      store: false,
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...output,
        { type: "function_call_output", call_id: call.call_id, output: "18 degrees" },
      ],
    } as any);
    expect(r.output_text).toBe(CLAUDE_TEXT);
    expect(claude.last().body.thinking).toMatchObject({ type: "enabled" });
    expect(assistantTurn().content[0]).toEqual({ type: "thinking", thinking: CLAUDE_THINKING, signature: "sig" });
  });

  test("non-streamed, kept: previous_response_id carries the signed block", async () => {
    const first: any = await oai.responses.create({
      model: "rb-claude",
      input: "Weather in Paris?",
      tools,
      reasoning: { effort: "medium" },
    });
    const call = first.output.find((o: any) => o.type === "function_call");
    await oai.responses.create({
      model: "rb-claude",
      tools,
      reasoning: { effort: "medium" },
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "18 degrees" }],
    });
    expect(claude.last().body.thinking).toMatchObject({ type: "enabled" });
    expect(assistantTurn().content[0]).toEqual({ type: "thinking", thinking: CLAUDE_THINKING, signature: "sig" });
  });

  test("chat clients get thinking_blocks beside reasoning_content; without them the tool loop goes on without thinking", async () => {
    const ask = {
      model: "rb-claude",
      reasoning_effort: "medium",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: tools[0].parameters } }],
    };
    const first: any = await oai.chat.completions.create(ask as any);
    const m = first.choices[0].message;
    expect(m.thinking_blocks).toEqual([{ type: "thinking", thinking: CLAUDE_THINKING, signature: "sig" }]);
    const next = (assistant: any) =>
      oai.chat.completions.create({
        ...ask,
        messages: [
          ...ask.messages,
          assistant,
          { role: "tool", tool_call_id: m.tool_calls[0].id, content: "18 degrees" },
        ],
      } as any);
    await next({ role: "assistant", content: m.content, tool_calls: m.tool_calls, thinking_blocks: m.thinking_blocks });
    expect(claude.last().body.thinking).toMatchObject({ type: "enabled" });
    expect(assistantTurn().content[0].type).toBe("thinking");
    await next({ role: "assistant", content: m.content, tool_calls: m.tool_calls });
    expect(claude.last().body.thinking).toBeUndefined();
    expect(assistantTurn().content.some((b: any) => b.type === "thinking")).toBe(false);
  });
});

describe("an upstream error mid-stream", () => {
  test("ends the stream with error and response.failed, in OpenAI's shapes; no response.completed", async () => {
    const evs = await events({ model: "rb-claude-broken", input: "Hi" });
    const types = evs.map((e) => e.type);
    expect(types.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(types.slice(-2)).toEqual(["error", "response.failed"]);
    expect(types).not.toContain("response.completed");
    const [error, failed] = evs.slice(-2);
    expect(error.message).toContain("Overloaded");
    expect(failed.response).toMatchObject({ object: "response", status: "failed", error: { code: "upstream_error" } });
    expect(failed.response.error.message).toContain("Overloaded");
    expect(evs.map((e) => e.sequence_number)).toEqual(evs.map((_, i) => i));
  });
});
