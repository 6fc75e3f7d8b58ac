// The conversions behind client fidelity, as pure functions: Gemini schemas as JSON Schema, reasoning levels
// and budgets, OpenAI's response_format on Claude, the Responses API through chat, and the refusals that
// replace silent drops. (tests/compat/matrix.test.ts drives the same paths with the official SDKs.)
import { describe, expect, test } from "bun:test";
import { geminiSchemaToJson } from "../../server/relay/formats/schema.ts";
import { claudeBudget, effortFromBudget, geminiBudget, THINKING } from "../../server/relay/formats/reasoning.ts";
import {
  ClaudeStreamToOpenAI,
  fromClaudeResponse,
  toClaudeRequest,
  type ClaudeRequestFacts,
} from "../../server/relay/formats/claude/upstream.ts";
import { claudeRequestToOpenAI } from "../../server/relay/formats/claude/client.ts";
import { geminiRequestToOpenAI, OpenAIStreamToGemini } from "../../server/relay/formats/gemini/client.ts";
import { toGeminiRequest } from "../../server/relay/formats/gemini/upstream.ts";
import { responsesToChat } from "../../server/relay/formats/responses/request.ts";
import { ChatStreamToResponses, chatToResponse } from "../../server/relay/formats/responses/answer.ts";

const settings = { defaultMaxTokens: 8192, thinkingAdapter: true, thinkingPercentage: 0.8 };
const gSettings = { safety: { default: "OFF" }, thinkingAdapter: false, thinkingPercentage: 0.6, imageModels: [] };
const ask = (extra: Record<string, unknown> = {}) => ({
  model: "claude-x",
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});

describe("Gemini schemas as JSON Schema", () => {
  test("upper-case types, nullable, int64 counts and propertyOrdering", () => {
    expect(
      geminiSchemaToJson({
        type: "OBJECT",
        propertyOrdering: ["a", "b"],
        required: ["a"],
        properties: {
          a: { type: "STRING", nullable: true, enum: ["x", "y"] },
          b: { type: "ARRAY", minItems: "1", maxItems: "3", items: { type: "INTEGER", format: "int32" } },
          c: { anyOf: [{ type: "NUMBER" }, { type: "BOOLEAN" }], nullable: true },
        },
      }),
    ).toEqual({
      type: "object",
      required: ["a"],
      properties: {
        a: { type: ["string", "null"], enum: ["x", "y"] },
        b: { type: "array", minItems: 1, maxItems: 3, items: { type: "integer", format: "int32" } },
        c: { anyOf: [{ type: "number" }, { type: "boolean" }, { type: "null" }] },
      },
    });
  });

  test("JSON Schema passes unchanged; a property named like a dropped key is kept", () => {
    const schema = {
      type: "object",
      properties: { nullable: { type: "string" }, type: { type: "string" } },
      additionalProperties: false,
    };
    expect(geminiSchemaToJson(schema)).toEqual(schema);
  });
});

describe("reasoning levels and budgets", () => {
  test("Claude: the share of max_tokens × percentage, at least 1024; none is no thinking", () => {
    expect(claudeBudget("high", 10000, 0.8)).toBe(8000);
    expect(claudeBudget("medium", 10000, 0.8)).toBe(4000);
    expect(claudeBudget("low", 4000, 0.8)).toBe(1024);
    expect(claudeBudget("minimal", 10000, 0.8)).toBe(1024);
    expect(claudeBudget("none", 10000, 0.8)).toBeNull();
  });

  test("Gemini: capped at 24576, the cap without max tokens; none is a zero budget", () => {
    expect(geminiBudget("high", undefined, 0.6)).toBe(24576);
    expect(geminiBudget("medium", undefined, 0.6)).toBe(12288);
    expect(geminiBudget("high", 10000, 0.6)).toBe(6000);
    expect(geminiBudget("minimal", 10000, 0.6)).toBe(512);
    expect(geminiBudget("none", 10000, 0.6)).toBe(0);
  });

  test("budgets back to levels; off and dynamic leave the model's default", () => {
    expect([
      effortFromBudget(1024),
      effortFromBudget(8192),
      effortFromBudget(20000),
      effortFromBudget(0),
      effortFromBudget(-1),
    ]).toEqual(["low", "medium", "high", null, null]);
  });

  test("OpenAI reasoning_effort on Claude: thinking, sampling overrides dropped, max_tokens above the budget", () => {
    const r = toClaudeRequest(ask({ reasoning_effort: "high", max_tokens: 2000, temperature: 0.2 }) as any, settings);
    expect(r.thinking).toEqual({ type: "enabled", budget_tokens: 1600 });
    expect(r.temperature).toBeUndefined();
    expect(toClaudeRequest(ask({ reasoning_effort: "none" }) as any, settings).thinking).toBeUndefined();
  });

  test("a Claude client's exact budget reaches Gemini; a Gemini client's reaches Claude", () => {
    const fromClaude = claudeRequestToOpenAI({
      model: "m",
      max_tokens: 5000,
      thinking: { type: "enabled", budget_tokens: 3000 },
      messages: [{ role: "user", content: "hi" }],
    });
    expect(fromClaude.reasoning_effort).toBe("low");
    expect(toGeminiRequest(fromClaude, gSettings).body.generationConfig!.thinkingConfig).toEqual({
      thinkingBudget: 3000,
      includeThoughts: true,
    });
    const fromGemini = geminiRequestToOpenAI(
      {
        contents: [{ role: "user", parts: [{ text: "hi" }] }],
        generationConfig: { thinkingConfig: { thinkingBudget: 5000 } },
      },
      "m",
      false,
    );
    expect(fromGemini.reasoning_effort).toBe("medium");
    expect((fromGemini as any)[THINKING]).toEqual({ budget: 5000, include: false });
    expect(toClaudeRequest(fromGemini, settings).thinking).toEqual({ type: "enabled", budget_tokens: 5000 });
    // The side channel never reaches an OpenAI upstream.
    expect(JSON.stringify(fromGemini)).not.toContain("5000");
  });

  test("inside a tool loop whose last assistant turn has no thinking block, Claude gets no thinking for that request", () => {
    const r = toClaudeRequest(
      {
        model: "m",
        reasoning_effort: "high",
        messages: [
          { role: "user", content: "weather?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "w", arguments: "{}" } }],
          },
          { role: "tool", tool_call_id: "c1", content: "sunny" },
        ],
      },
      settings,
    );
    expect(r.thinking).toBeUndefined();
  });
});

describe("OpenAI response_format on Claude", () => {
  const schema = { type: "object", properties: { name: { type: "string" } } };
  const fmt = { type: "json_schema", json_schema: { name: "thing", schema } };

  test("the forced-tool technique: a structured_output tool Claude must call", () => {
    const facts: ClaudeRequestFacts = {};
    const r = toClaudeRequest(ask({ response_format: fmt }) as any, settings, facts);
    expect(r.tools).toEqual([
      {
        name: "structured_output",
        description: "Give your final answer by calling this tool: its input is the answer (thing).",
        input_schema: schema,
      },
    ]);
    expect(r.tool_choice).toEqual({ type: "tool", name: "structured_output" });
    expect(facts.structuredTool).toBe("structured_output");
  });

  test("beside the client's tools: any tool, and a client tool of that name renames it", () => {
    const tools = [{ type: "function", function: { name: "structured_output", parameters: { type: "object" } } }];
    const facts: ClaudeRequestFacts = {};
    const r = toClaudeRequest(ask({ response_format: fmt, tools }) as any, settings, facts);
    expect(r.tools!.map((t) => t.name)).toEqual(["structured_output", "structured_output_"]);
    expect(r.tool_choice).toEqual({ type: "any" });
    expect(facts.structuredTool).toBe("structured_output_");
  });

  test("with thinking on: Claude's own structured output (forced tool use is refused with thinking)", () => {
    const r = toClaudeRequest(ask({ response_format: fmt, reasoning_effort: "low" }) as any, settings);
    expect(r.output_config).toEqual({ format: { type: "json_schema", schema } });
    expect(r.tools).toBeUndefined();
  });

  test("an unknown response_format type is a 400, not dropped", () => {
    expect(() => toClaudeRequest(ask({ response_format: { type: "grammar" } }) as any, settings)).toThrow(
      "response_format type 'grammar' is not supported on this channel (Claude)",
    );
  });

  test("the tool's input comes back as the message text, finish stop, whole and streamed", () => {
    const facts = { structuredTool: "structured_output" };
    const res = fromClaudeResponse(
      {
        id: "m",
        type: "message",
        role: "assistant",
        model: "c",
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 2 },
        content: [{ type: "tool_use", id: "t", name: "structured_output", input: { name: "Ada" } }],
      },
      0,
      facts,
    );
    expect(res.choices[0]).toMatchObject({ message: { content: '{"name":"Ada"}' }, finish_reason: "stop" });
    expect(res.choices[0]!.message.tool_calls).toBeUndefined();
    const s = new ClaudeStreamToOpenAI(0, facts);
    const chunks = [
      { type: "message_start", message: { id: "m", model: "c", usage: { input_tokens: 1, output_tokens: 1 } } },
      {
        type: "content_block_start",
        index: 0,
        content_block: { type: "tool_use", id: "t", name: "structured_output", input: {} },
      },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"name":' } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '"Ada"}' } },
      { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 5 } },
    ].flatMap((e) => s.push(e));
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe('{"name":"Ada"}');
    expect(chunks.some((c) => c.choices[0]?.delta.tool_calls)).toBe(false);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
  });

  test("a fan-out's answers are the choices, their usage added", () => {
    const one = (text: string) => ({
      id: "m",
      type: "message" as const,
      role: "assistant" as const,
      model: "c",
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 4 },
      content: [{ type: "text", text }],
    });
    const res = fromClaudeResponse(one("a"), 0, {}, [one("b")]);
    expect(res.choices.map((c) => [c.index, c.message.content])).toEqual([
      [0, "a"],
      [1, "b"],
    ]);
    expect(res.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 8, total_tokens: 14 });
  });
});

describe("refusals instead of silent drops", () => {
  const claudeBody = (extra: Record<string, unknown>) => ({
    model: "m",
    max_tokens: 10,
    messages: [{ role: "user" as const, content: "hi" }],
    ...extra,
  });
  test("Claude clients on other channels: server tools, MCP servers, unknown blocks", () => {
    expect(() =>
      claudeRequestToOpenAI(claudeBody({ tools: [{ type: "bash_20250124", name: "bash" }] }) as any),
    ).toThrow("tool type 'bash_20250124' is a Claude server tool");
    expect(() =>
      claudeRequestToOpenAI(claudeBody({ mcp_servers: [{ type: "url", url: "https://x" }] }) as any),
    ).toThrow("mcp_servers is a Claude API feature");
    expect(() =>
      claudeRequestToOpenAI(
        claudeBody({ messages: [{ role: "user", content: [{ type: "search_result", source: "x" }] }] }) as any,
      ),
    ).toThrow("messages.0.content.0.type: content block type 'search_result' has no counterpart");
  });

  test("OpenAI-only chat features on Claude and Gemini: logprobs and audio output refused; Gemini takes penalties and seed", () => {
    expect(() => toClaudeRequest(ask({ logprobs: true }) as any, settings)).toThrow(
      "logprobs are not available on this channel (Claude)",
    );
    expect(() => toGeminiRequest(ask({ web_search_options: {} }) as any, gSettings)).toThrow(
      "web_search_options (OpenAI's web search) is not available on this channel (Gemini)",
    );
    expect(() =>
      toGeminiRequest(ask({ modalities: ["text", "audio"], audio: { voice: "alloy" } }) as any, gSettings),
    ).toThrow("audio output is not available on this channel (Gemini)");
    expect(
      toGeminiRequest(ask({ presence_penalty: 0.4, frequency_penalty: 0.1, seed: 3 }) as any, gSettings).body
        .generationConfig,
    ).toMatchObject({ presencePenalty: 0.4, frequencyPenalty: 0.1, seed: 3 });
  });

  test("Claude documents become file parts; a PDF reaches Claude again as a document", () => {
    const out = claudeRequestToOpenAI(
      claudeBody({
        messages: [
          {
            role: "user",
            content: [
              { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBE" } },
              { type: "text", text: "sum up" },
            ],
          },
        ],
      }) as any,
    );
    expect(out.messages[0]!.content).toEqual([
      { type: "file", file: { file_data: "data:application/pdf;base64,JVBE", filename: "document.pdf" } },
      { type: "text", text: "sum up" },
    ]);
    const back = toClaudeRequest(out, settings);
    expect((back.messages[0]!.content as any[])[0]).toEqual({
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: "JVBE" },
      title: "document.pdf",
    });
  });

  test("a Claude client's PDF and an OpenAI client's audio reach Gemini as inline data; unknown parts are refused", () => {
    const fromClaude = claudeRequestToOpenAI(
      claudeBody({
        messages: [
          {
            role: "user",
            content: [{ type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBE" } }],
          },
        ],
      }) as any,
    );
    expect(toGeminiRequest(fromClaude, gSettings).body.contents[0]!.parts).toEqual([
      { inlineData: { mimeType: "application/pdf", data: "JVBE" } },
    ]);
    const audio = {
      model: "m",
      messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "UklG", format: "wav" } }] }],
    };
    expect(toGeminiRequest(audio as any, gSettings).body.contents[0]!.parts).toEqual([
      { inlineData: { mimeType: "audio/wav", data: "UklG" } },
    ]);
    const video = {
      model: "m",
      messages: [{ role: "user", content: [{ type: "video_url", video_url: { url: "https://x/v.mp4" } }] }],
    };
    expect(() => toGeminiRequest(video as any, gSettings)).toThrow(
      "content part type 'video_url' is not supported on this channel (Gemini)",
    );
    expect(() => toClaudeRequest(video as any, settings)).toThrow(
      "content part type 'video_url' is not supported on this channel (Claude)",
    );
  });

  test("Gemini clients on other channels: audio output, enum output, cached content, Google tools, video", () => {
    const g = (extra: Record<string, unknown>) => ({ contents: [{ role: "user", parts: [{ text: "hi" }] }], ...extra });
    expect(() =>
      geminiRequestToOpenAI(g({ generationConfig: { responseModalities: ["AUDIO"] } }) as any, "m", false),
    ).toThrow("response modality AUDIO is not supported");
    expect(() =>
      geminiRequestToOpenAI(g({ generationConfig: { responseMimeType: "text/x.enum" } }) as any, "m", false),
    ).toThrow("text/x.enum is not supported");
    expect(() => geminiRequestToOpenAI(g({ cachedContent: "cachedContents/1" }) as any, "m", false)).toThrow(
      "cachedContent is a Gemini API feature",
    );
    expect(() => geminiRequestToOpenAI(g({ tools: [{ codeExecution: {} }] }) as any, "m", false)).toThrow(
      "tool 'codeExecution' runs on Google's side",
    );
    expect(() =>
      geminiRequestToOpenAI(
        { contents: [{ role: "user", parts: [{ inlineData: { mimeType: "video/mp4", data: "AA" } }] }] } as any,
        "m",
        false,
      ),
    ).toThrow("inline data of type 'video/mp4' is not supported");
  });

  test("Gemini clients: penalties and seed carried; thought parts only when asked", () => {
    const out = geminiRequestToOpenAI(
      {
        contents: [{ role: "user", parts: [{ text: "hi" }] }],
        generationConfig: { presencePenalty: 0.5, frequencyPenalty: 0.2, seed: 7 },
      } as any,
      "m",
      false,
    );
    expect(out).toMatchObject({ presence_penalty: 0.5, frequency_penalty: 0.2, seed: 7 });
    const conv = new OpenAIStreamToGemini("m", "id", false);
    const frames = conv.push({
      id: "c",
      object: "chat.completion.chunk",
      created: 0,
      model: "m",
      choices: [{ index: 0, delta: { reasoning_content: "hmm", content: "ok" }, finish_reason: null }],
    });
    expect(frames[0]!.candidates![0]!.content!.parts).toEqual([{ text: "ok" }]);
  });
});

describe("the Responses API through chat", () => {
  test("instructions, items, function calls and outputs, tools, reasoning and text format", () => {
    const chat = responsesToChat({
      model: "m",
      instructions: "Be brief.",
      max_output_tokens: 100,
      reasoning: { effort: "low" },
      text: { format: { type: "json_schema", name: "x", schema: { type: "object" } } },
      tools: [{ type: "function", name: "w", parameters: { type: "object" } }],
      tool_choice: { type: "function", name: "w" },
      input: [
        { role: "developer", content: "Use metric." },
        {
          role: "user",
          content: [
            { type: "input_text", text: "Look:" },
            { type: "input_image", image_url: "https://x/y.png" },
          ],
        },
        { type: "function_call", call_id: "c1", name: "w", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "sunny" },
        { type: "reasoning", id: "rs_1", summary: [] },
      ],
    });
    expect(chat.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "system", content: "Use metric." },
      {
        role: "user",
        content: [
          { type: "text", text: "Look:" },
          { type: "image_url", image_url: { url: "https://x/y.png" } },
        ],
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "w", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "sunny" },
    ]);
    expect(chat).toMatchObject({
      reasoning_effort: "low",
      max_tokens: 100,
      tool_choice: { type: "function", function: { name: "w" } },
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } },
    });
  });

  test("what chat cannot express is a 400 naming it", () => {
    expect(() => responsesToChat({ model: "m", input: "x", background: true })).toThrow(
      "background mode is not supported on this channel",
    );
    expect(() =>
      responsesToChat({
        model: "m",
        input: "x",
        tools: [{ type: "file_search" }],
        tool_choice: { type: "file_search" },
      }),
    ).toThrow('tool_choice {"type":"file_search"} is not supported');
    expect(() => responsesToChat({ model: "m", input: [{ type: "item_reference", id: "msg_1" }] })).toThrow(
      "input[0]: item_reference 'msg_1' is not known to this gateway",
    );
    expect(() =>
      responsesToChat({ model: "m", input: [{ role: "user", content: [{ type: "input_image", file_id: "file-1" }] }] }),
    ).toThrow("an input_image given by file_id");
  });

  test("a chat answer as a response: reasoning, message and function call items; a cut answer is incomplete", () => {
    const r = chatToResponse(
      {
        id: "c",
        object: "chat.completion",
        created: 1,
        model: "m",
        usage: {
          prompt_tokens: 3,
          completion_tokens: 4,
          total_tokens: 7,
          completion_tokens_details: { reasoning_tokens: 2 },
        },
        choices: [
          {
            index: 0,
            finish_reason: "length",
            message: {
              role: "assistant",
              content: "hi",
              reasoning_content: "hmm",
              tool_calls: [{ id: "c1", type: "function", function: { name: "w", arguments: "{}" } }],
            },
          },
        ],
      },
      { model: "m" },
      "alias",
    );
    expect(r.output.map((o: any) => o.type)).toEqual(["reasoning", "message", "function_call"]);
    expect(r).toMatchObject({
      object: "response",
      model: "alias",
      status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" },
    });
    expect(r.usage).toEqual({
      input_tokens: 3,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 7,
    });
  });

  test("a chat stream as typed events with rising sequence numbers and consistent indices", () => {
    const conv = new ChatStreamToResponses({ model: "m" }, "m");
    const chunk = (delta: object, finish: string | null = null) => ({
      id: "c",
      object: "chat.completion.chunk" as const,
      created: 0,
      model: "m",
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    let sse =
      conv.push(chunk({ reasoning_content: "hm" }))
      + conv.push(chunk({ content: "Hel" }))
      + conv.push(chunk({ content: "lo" }));
    sse += conv.push(
      chunk({ tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "w", arguments: '{"a"' } }] }),
    );
    sse += conv.push(chunk({ tool_calls: [{ index: 0, function: { arguments: ":1}" } }] }, "tool_calls"));
    sse += conv.end({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    const events = sse
      .trim()
      .split("\n\n")
      .map((b) => JSON.parse(b.split("\n")[1]!.slice(6)));
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => e.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const done = events.at(-1).response;
    expect(done.output.map((o: any) => [o.type, o.summary?.[0]?.text ?? o.content?.[0]?.text ?? o.arguments])).toEqual([
      ["reasoning", "hm"],
      ["message", "Hello"],
      ["function_call", '{"a":1}'],
    ]);
    expect(done.usage.total_tokens).toBe(3);
    expect(conv.completed).toEqual(done);
  });
});
