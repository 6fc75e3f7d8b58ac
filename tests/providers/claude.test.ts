import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  toClaudeRequest,
  fromClaudeResponse,
  ClaudeStreamToOpenAI,
  usageFromClaude,
} from "../../server/relay/formats/claude/upstream.ts";
import { claudeAdaptor, messagesUrl } from "../../server/relay/providers/claude/index.ts";
import { claudeSettings, claudeModelHeaders } from "../../server/relay/providers/claude/messages.ts";
import { awsAdaptor } from "../../server/relay/providers/aws/index.ts";
import { vertexAdaptor } from "../../server/relay/providers/vertex/index.ts";
import type { ProviderAdaptor } from "../../server/relay/providers/types.ts";
import { countTokensNow } from "../../server/relay/tokenizer.ts";
import { SseReader } from "../../server/relay/formats/sse.ts";
import { startClaudeUpstream, CLAUDE_TEXT } from "../mocks/claude-upstream.ts";
import { chunksOf, contentOf, makeCall, run, site } from "./harness.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

const settings = { defaultMaxTokens: 8192, thinkingAdapter: true, thinkingPercentage: 0.8 };
const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather by city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

describe("OpenAI → Claude request", () => {
  test("system and developer messages become the system prompt; turns alternate", () => {
    const r = toClaudeRequest(
      {
        model: "claude-sonnet-4-20250514",
        messages: [
          { role: "system", content: "Be brief." },
          { role: "developer", content: [{ type: "text", text: "Answer in English." }] },
          { role: "user", content: "Hi" },
          {
            role: "user",
            content: [
              { type: "text", text: "" },
              { type: "text", text: "Are you there?" },
            ],
          },
          { role: "assistant", content: "Yes." },
          { role: "user", content: "Good." },
        ],
      },
      settings,
    );
    expect(r.system).toBe("Be brief.\nAnswer in English.");
    expect(r.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(r.messages[0]!.content).toEqual([
      { type: "text", text: "Hi" },
      { type: "text", text: "Are you there?" },
    ]);
    expect(r.max_tokens).toBe(8192);
  });

  test("images by URL and as base64 data URLs", () => {
    const r = toClaudeRequest(
      {
        model: "m",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "What is this?" },
              { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
              { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQ" } },
            ],
          },
        ],
      },
      settings,
    );
    expect(r.messages[0]!.content).toEqual([
      { type: "text", text: "What is this?" },
      { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
      { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } },
    ]);
  });

  test("tools, tool calls and tool results", () => {
    const r = toClaudeRequest(
      {
        model: "m",
        tools: [weatherTool],
        tool_choice: { type: "function", function: { name: "get_weather" } },
        messages: [
          { role: "user", content: "Weather in Paris?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            ],
          },
          { role: "tool", tool_call_id: "call_1", content: "18C, sunny" },
        ],
      },
      settings,
    );
    expect(r.tools).toEqual([
      { name: "get_weather", description: "Weather by city", input_schema: weatherTool.function.parameters },
    ]);
    expect(r.tool_choice).toEqual({ type: "tool", name: "get_weather" });
    expect(r.messages[1]).toEqual({
      role: "assistant",
      content: [{ type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } }],
    });
    expect(r.messages[2]).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "call_1", content: "18C, sunny" }],
    });
  });

  test("tool_choice auto/required/none map to auto/any/none", () => {
    const base = { model: "m", messages: [{ role: "user", content: "x" }], tools: [weatherTool] };
    expect(toClaudeRequest({ ...base, tool_choice: "auto" }, settings).tool_choice).toEqual({ type: "auto" });
    expect(toClaudeRequest({ ...base, tool_choice: "required" }, settings).tool_choice).toEqual({ type: "any" });
    expect(toClaudeRequest({ ...base, tool_choice: "none" }, settings).tool_choice).toEqual({ type: "none" });
  });

  test("sampling parameters and stop sequences", () => {
    const r = toClaudeRequest(
      {
        model: "m",
        messages: [{ role: "user", content: "x" }],
        temperature: 0.3,
        top_p: 0.9,
        max_tokens: 100,
        stop: "END",
      },
      settings,
    );
    expect([r.temperature, r.top_p, r.max_tokens, r.stop_sequences]).toEqual([0.3, 0.9, 100, ["END"]]);
    expect(
      toClaudeRequest({ model: "m", messages: [{ role: "user", content: "x" }], max_completion_tokens: 55 }, settings)
        .max_tokens,
    ).toBe(55);
  });

  test("the -thinking suffix enables thinking with budget = percentage × max_tokens and drops sampling overrides", () => {
    const r = toClaudeRequest(
      {
        model: "claude-sonnet-4-20250514-thinking",
        messages: [{ role: "user", content: "x" }],
        max_tokens: 10000,
        temperature: 0.5,
      },
      settings,
    );
    expect(r.model).toBe("claude-sonnet-4-20250514");
    expect(r.thinking).toEqual({ type: "enabled", budget_tokens: 8000 });
    expect(r.temperature).toBeUndefined();
  });

  test("with the thinking adapter off the suffix is left alone", () => {
    const r = toClaudeRequest(
      { model: "x-thinking", messages: [{ role: "user", content: "x" }] },
      { ...settings, thinkingAdapter: false },
    );
    expect(r.model).toBe("x-thinking");
    expect(r.thinking).toBeUndefined();
  });

  test("option values: per-model default max tokens, thinking percentage, model headers", () => {
    const s = site({
      "claude.default_max_tokens": JSON.stringify({ default: 4096, "claude-opus-4-20250514": 32000 }),
      "claude.thinking_adapter_budget_tokens_percentage": "0.5",
      "claude.model_headers_settings": JSON.stringify({
        "claude-3-7-sonnet-20250219": {
          "anthropic-beta": ["output-128k-2025-02-19", "token-efficient-tools-2025-02-19"],
        },
      }),
    });
    expect(claudeSettings({ site: s }, "claude-opus-4-20250514").defaultMaxTokens).toBe(32000);
    expect(claudeSettings({ site: s }, "other").defaultMaxTokens).toBe(4096);
    expect(claudeSettings({ site: s }, "other").thinkingPercentage).toBe(0.5);
    expect(claudeModelHeaders({ site: s }, "claude-3-7-sonnet-20250219")).toEqual({
      "anthropic-beta": "output-128k-2025-02-19,token-efficient-tools-2025-02-19",
    });
    expect(claudeModelHeaders({ site: s }, "other")).toEqual({});
  });
});

describe("Claude → OpenAI response", () => {
  test("text, thinking and tool_use; usage counts cache reads and writes into prompt_tokens", () => {
    const r = fromClaudeResponse({
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-x",
      content: [
        { type: "thinking", thinking: "hmm", signature: "s" },
        { type: "text", text: "Checking." },
        { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 },
    });
    expect(r.choices[0]!.message).toEqual({
      role: "assistant",
      content: "Checking.",
      reasoning_content: "hmm",
      thinking_blocks: [{ type: "thinking", thinking: "hmm", signature: "s" }],
      tool_calls: [
        { id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      ],
    });
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    expect(r.usage).toEqual({
      prompt_tokens: 130,
      completion_tokens: 5,
      total_tokens: 135,
      prompt_tokens_details: { cached_tokens: 100, cached_creation_tokens: 20 },
    });
  });

  test("stop reasons", () => {
    const fin = (stop_reason: string) =>
      fromClaudeResponse({
        id: "m",
        type: "message",
        role: "assistant",
        model: "x",
        content: [],
        stop_reason,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      }).choices[0]!.finish_reason;
    expect([fin("end_turn"), fin("max_tokens"), fin("stop_sequence"), fin("tool_use"), fin("refusal")]).toEqual([
      "stop",
      "length",
      "stop",
      "tool_calls",
      "content_filter",
    ]);
  });

  test("stream events become chunks: role, text, tool call pieces, finish, usage", () => {
    const s = new ClaudeStreamToOpenAI();
    const out = [
      {
        type: "message_start",
        message: {
          id: "msg_s",
          model: "claude-x",
          usage: { input_tokens: 7, cache_read_input_tokens: 1, output_tokens: 1 },
        },
      },
      {
        type: "content_block_start",
        index: 0,
        content_block: { type: "tool_use", id: "toolu_9", name: "f", input: {} },
      },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"a":' } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "1}" } },
      { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 9 } },
    ].flatMap((e) => s.push(e));
    expect(out[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" });
    expect(out[1]!.choices[0]!.delta.tool_calls).toEqual([
      { index: 0, id: "toolu_9", type: "function", function: { name: "f", arguments: "" } },
    ]);
    expect(
      out
        .slice(2, 4)
        .map((c) => c.choices[0]!.delta.tool_calls![0]!.function!.arguments)
        .join(""),
    ).toBe('{"a":1}');
    expect(out[4]!.choices[0]!.finish_reason).toBe("tool_calls");
    expect(s.usage).toEqual(usageFromClaude({ input_tokens: 7, cache_read_input_tokens: 1, output_tokens: 9 }));
    expect(s.usage.prompt_tokens).toBe(8);
  });
});

describe("Claude adaptor against the mock upstream", () => {
  let up: MockUpstream;
  beforeAll(() => (up = startClaudeUpstream()));
  afterAll(() => up.stop());
  const call = (p: Parameters<typeof makeCall>[0] extends infer T ? Partial<T> : never = {}) =>
    makeCall({
      baseUrl: up.url,
      key: "claude-key",
      upstreamModel: "claude-sonnet-4-20250514",
      requestModel: "claude-sonnet-4-20250514",
      ...p,
    });

  test("URL: one /v1 whether or not the base URL carries it", () => {
    expect(messagesUrl("https://api.anthropic.com")).toBe("https://api.anthropic.com/v1/messages");
    expect(messagesUrl("https://proxy.example/v1")).toBe("https://proxy.example/v1/messages");
  });

  test("non-stream chat: headers, converted body, OpenAI answer, usage with cache tokens", async () => {
    const o = await run(claudeAdaptor, call(), {
      model: "claude-sonnet-4-20250514",
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "Hi" },
      ],
    });
    expect(o.status).toBe(200);
    const rec = up.last();
    expect(rec.headers["x-api-key"]).toBe("claude-key");
    expect(rec.headers["anthropic-version"]).toBe("2023-06-01");
    expect(rec.body.system).toBe("sys");
    expect(rec.body.max_tokens).toBe(8192);
    expect(o.body.object).toBe("chat.completion");
    expect(o.body.choices[0].message.content).toBe(CLAUDE_TEXT);
    expect(o.usage).toEqual({
      prompt_tokens: 17,
      completion_tokens: 7,
      total_tokens: 24,
      cached_tokens: 3,
      cache_creation_tokens: 2,
    });
  });

  test("stream with tools: text, assembled tool-call arguments, finish, usage chunk when asked", async () => {
    const o = await run(claudeAdaptor, call({ stream: true, clientWantsUsage: true }), {
      model: "claude-sonnet-4-20250514",
      stream: true,
      tools: [weatherTool],
      messages: [{ role: "user", content: "Weather?" }],
    });
    expect(contentOf(o)).toBe("Hello from Claude.");
    const chunks = chunksOf(o);
    const args = chunks
      .flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? [])
      .map((t: any) => t.function?.arguments ?? "")
      .join("");
    expect(JSON.parse(args)).toEqual({ city: "Paris" });
    expect(chunks.some((c) => c.choices?.[0]?.finish_reason === "tool_calls")).toBe(true);
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage.prompt_tokens).toBe(17);
    expect(o.text.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(o.usage).toMatchObject({
      prompt_tokens: 17,
      completion_tokens: 7,
      cached_tokens: 3,
      cache_creation_tokens: 2,
    });
  });

  test("without include_usage no usage chunk reaches the client, but the relay still gets usage", async () => {
    const o = await run(claudeAdaptor, call({ stream: true }), {
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "x" }],
    });
    expect(chunksOf(o).some((c) => c.usage)).toBe(false);
    expect(o.usage?.completion_tokens).toBe(7);
  });

  test("thinking via the model suffix reaches the upstream and comes back as reasoning_content", async () => {
    const o = await run(claudeAdaptor, call({ stream: true, upstreamModel: "claude-sonnet-4-20250514-thinking" }), {
      model: "x",
      stream: true,
      max_tokens: 4000,
      temperature: 0.2,
      messages: [{ role: "user", content: "x" }],
    });
    expect(up.last().body.thinking).toEqual({ type: "enabled", budget_tokens: 3200 });
    expect(up.last().body.model).toBe("claude-sonnet-4-20250514");
    expect(
      chunksOf(o)
        .map((c) => c.choices?.[0]?.delta?.reasoning_content ?? "")
        .join(""),
    ).toBe("Considering.");
  });

  test("model headers from claude.model_headers_settings are sent", async () => {
    const s = site({
      "claude.model_headers_settings": JSON.stringify({
        "claude-sonnet-4-20250514": { "anthropic-beta": ["context-1m-2025-08-07"] },
      }),
    });
    await run(claudeAdaptor, call({ site: s }), { model: "x", messages: [{ role: "user", content: "x" }] });
    expect(up.last().headers["anthropic-beta"]).toBe("context-1m-2025-08-07");
  });

  test("upstream errors are read from Claude error bodies", async () => {
    const o = await run(claudeAdaptor, call({ key: "wrong" }), {
      model: "x",
      messages: [{ role: "user", content: "x" }],
    });
    expect(o.status).toBe(401);
    expect(o.error).toBe("invalid x-api-key");
  });

  test("a Claude client's body passes through (model replaced) and events pass verbatim", async () => {
    const o = await run(claudeAdaptor, call({ format: "claude", stream: true, upstreamModel: "claude-mapped" }), {
      model: "alias",
      max_tokens: 50,
      stream: true,
      messages: [{ role: "user", content: "x" }],
    });
    expect(up.last().body.model).toBe("claude-mapped");
    expect(o.events[0]!.event).toBe("message_start");
    expect(o.events.some((e) => e.event === "ping")).toBe(true);
    expect(o.text).not.toContain("[DONE]");
    expect(o.usage?.prompt_tokens).toBe(17);
  });

  test("global.pass_through_request_enabled forwards a Claude body unchanged", async () => {
    const body = {
      model: "claude-original",
      max_tokens: 20,
      messages: [{ role: "user", content: "x" }],
      custom_field: 1,
    };
    await run(
      claudeAdaptor,
      call({
        format: "claude",
        upstreamModel: "claude-mapped",
        site: site({ "global.pass_through_request_enabled": "true" }),
      }),
      body,
    );
    expect(JSON.parse(up.last().raw)).toEqual(body);
  });

  test("model list", async () => {
    expect(await claudeAdaptor.fetchModels!(up.url, "claude-key")).toEqual([
      "claude-sonnet-4-20250514",
      "claude-3-5-haiku-20241022",
    ]);
  });
});

describe("stream usage when no message_delta arrives", () => {
  const thinking = Array.from({ length: 30 }, (_, i) => ` step ${i} of reasoning`);
  const text = Array.from({ length: 40 }, (_, i) => ` answer word${i}`);
  const generated = thinking.join("") + text.join("");
  const frame = (ev: object) => ({
    event: (ev as any).type,
    data: JSON.stringify(ev),
    raw: `event: ${(ev as any).type}\ndata: ${JSON.stringify(ev)}\n\n`,
  });
  const start = {
    type: "message_start",
    message: {
      id: "msg_c",
      model: "claude-x",
      usage: { input_tokens: 20, cache_read_input_tokens: 4, output_tokens: 1 },
    },
  };
  const body = [
    start,
    { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } },
    ...thinking.map((t) => ({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: t } })),
    { type: "content_block_stop", index: 0 },
    { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
    ...text.map((t) => ({ type: "content_block_delta", index: 1, delta: { type: "text_delta", text: t } })),
  ];
  // Every channel type that streams Claude events: Anthropic (14), Bedrock (33), Claude on Vertex (41).
  const adaptors: [string, ProviderAdaptor][] = [
    ["anthropic", claudeAdaptor],
    ["bedrock", awsAdaptor],
    ["vertex", vertexAdaptor],
  ];

  test("the converter's generated text includes thinking", () => {
    const s = new ClaudeStreamToOpenAI();
    for (const ev of body) s.push(ev);
    expect(s.receivedText).toBe(generated);
  });

  for (const [name, adaptor] of adaptors) {
    for (const format of ["openai", "claude"] as const) {
      test(`${name}, ${format} client: a cut stream bills the counted text, not message_start's placeholder`, () => {
        const m = adaptor.streamMapper(
          makeCall({ baseUrl: "http://x", key: "k", upstreamModel: "claude-sonnet-4-20250514", stream: true, format }),
        );
        for (const ev of body) m.event(frame(ev));
        const u = m.usage()!;
        expect(u.prompt_tokens).toBe(24);
        expect(u.cached_tokens).toBe(4);
        expect(u.completion_tokens).toBe(countTokensNow(generated));
        expect(u.completion_tokens).toBeGreaterThan(100);
        expect(u.total_tokens).toBe(24 + u.completion_tokens);
      });
    }
  }

  test("a final message_delta is trusted as reported", () => {
    const m = claudeAdaptor.streamMapper(makeCall({ baseUrl: "http://x", key: "k", stream: true }));
    for (const ev of [
      ...body,
      { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 90 } },
    ])
      m.event(frame(ev));
    expect(m.usage()!.completion_tokens).toBe(90);
  });

  test("a reported output count above the counted text is kept", () => {
    const m = claudeAdaptor.streamMapper(makeCall({ baseUrl: "http://x", key: "k", stream: true }));
    m.event(frame({ ...start, message: { ...start.message, usage: { input_tokens: 20, output_tokens: 5000 } } }));
    m.event(frame(body[body.length - 1]!));
    expect(m.usage()!.completion_tokens).toBe(5000);
  });
});

describe("a mid-stream error event reaches the client scrubbed", () => {
  const key = "sk-ant-api03-SECRETSECRETSECRET";
  const baseUrl = "http://10.9.8.7:9000";
  const error = {
    type: "error",
    request_id: "req_internal_77",
    error: {
      type: "overloaded_error",
      message: `Overloaded for key ${key} at ${baseUrl}/v1/messages (trace https://trace.internal.example/t?id=1)`,
    },
  };
  const frame = (ev: object) => ({
    event: (ev as any).type,
    data: JSON.stringify(ev),
    raw: `event: ${(ev as any).type}\ndata: ${JSON.stringify(ev)}\n\n`,
  });
  const clean = (text: string) => {
    for (const secret of [key, "10.9.8.7", "trace.internal.example", "req_internal_77"])
      expect(text).not.toContain(secret);
    expect(text).toContain("Overloaded");
  };

  for (const [name, adaptor] of [
    ["anthropic", claudeAdaptor],
    ["bedrock", awsAdaptor],
    ["vertex", vertexAdaptor],
  ] as [string, ProviderAdaptor][]) {
    test(`${name}, OpenAI client: an OpenAI-shaped error chunk`, () => {
      const m = adaptor.streamMapper(
        makeCall({ baseUrl, key, upstreamModel: "claude-sonnet-4-20250514", stream: true }),
      );
      m.event(
        frame({
          type: "message_start",
          message: { id: "msg_e", model: "m", usage: { input_tokens: 1, output_tokens: 1 } },
        }),
      );
      const out = m.event(frame(error));
      clean(out);
      const ev = new SseReader().push(new TextEncoder().encode(out));
      expect(ev).toHaveLength(1);
      expect(JSON.parse(ev[0]!.data)).toEqual({ error: { type: "overloaded_error", message: expect.any(String) } });
    });

    test(`${name}, Claude client: a Claude error event`, () => {
      const m = adaptor.streamMapper(
        makeCall({ baseUrl, key, upstreamModel: "claude-sonnet-4-20250514", stream: true, format: "claude" }),
      );
      const out = m.event(frame(error));
      clean(out);
      const ev = new SseReader().push(new TextEncoder().encode(out));
      expect(ev[0]!.event).toBe("error");
      expect(JSON.parse(ev[0]!.data)).toEqual({
        type: "error",
        error: { type: "overloaded_error", message: expect.any(String) },
      });
    });
  }

  test("an `event: error` whose data is not a Claude error object is rebuilt and scrubbed too", () => {
    for (const format of ["claude", "openai"] as const) {
      const m = claudeAdaptor.streamMapper(makeCall({ baseUrl, key, stream: true, format }));
      const plain = m.event({
        event: "error",
        data: `upstream broke, key ${key}`,
        raw: `event: error\ndata: upstream broke, key ${key}\n\n`,
      });
      const untypedData = JSON.stringify({ error: { message: `at ${baseUrl}` } });
      const untyped = m.event({ event: "error", data: untypedData, raw: `event: error\ndata: ${untypedData}\n\n` });
      for (const out of [plain, untyped]) {
        expect(out).not.toContain(key);
        expect(out).not.toContain("10.9.8.7");
        expect(JSON.parse(new SseReader().push(new TextEncoder().encode(out))[0]!.data).error.type).toBe("api_error");
      }
    }
  });

  test("an error type that is not a plain name is not forwarded", () => {
    const m = claudeAdaptor.streamMapper(makeCall({ baseUrl, key, stream: true, format: "claude" }));
    const out = m.event(frame({ type: "error", error: { type: `bad ${key}`, message: "x" } }));
    expect(out).not.toContain(key);
    expect(JSON.parse(new SseReader().push(new TextEncoder().encode(out))[0]!.data).error.type).toBe("api_error");
  });
});
