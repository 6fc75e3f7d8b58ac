// The conversions behind the native entry points, on recorded-shape fixtures: Claude Messages and
// Gemini generateContent requests → OpenAI chat, OpenAI replies and streams → Claude / Gemini.
import { describe, expect, test } from "bun:test";
import {
  claudeRequestToOpenAI,
  openAIResponseToClaude,
  OpenAIStreamToClaude,
  claudeUsageOf,
} from "../../server/relay/formats/claude/client.ts";
import {
  geminiRequestToOpenAI,
  openAIResponseToGemini,
  OpenAIStreamToGemini,
} from "../../server/relay/formats/gemini/client.ts";
import { checkClaudeBody, checkGeminiBody, geminiTarget } from "../../server/relay/endpoints/native.ts";
import type { OpenAIChunk } from "../../server/relay/formats/claude/wire.ts";

const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: any): OpenAIChunk =>
  ({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "gpt",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(usage ? { usage } : {}),
  }) as OpenAIChunk;

describe("Claude request → OpenAI", () => {
  test("system blocks, images, tool use and tool results, tool_choice, stop sequences", () => {
    const r = claudeRequestToOpenAI({
      model: "m",
      max_tokens: 300,
      stream: true,
      temperature: 0.2,
      stop_sequences: ["\n\nHuman:"],
      system: [{ type: "text", text: "You are terse." }],
      tools: [{ name: "get_weather", description: "w", input_schema: { type: "object", properties: {} } }],
      tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true },
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Look:" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBOR" } },
            { type: "image", source: { type: "url", url: "https://x.test/a.png" } },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking." },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Oslo" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "-3C" }] },
            { type: "text", text: "And tomorrow?" },
          ],
        },
      ],
    });
    expect(r.messages).toEqual([
      { role: "system", content: "You are terse." },
      {
        role: "user",
        content: [
          { type: "text", text: "Look:" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBOR" } },
          { type: "image_url", image_url: { url: "https://x.test/a.png" } },
        ],
      },
      {
        role: "assistant",
        content: "Checking.",
        tool_calls: [
          { id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: "tool", tool_call_id: "toolu_1", content: "-3C" },
      { role: "user", content: "And tomorrow?" },
    ]);
    expect(r.tool_choice).toEqual({ type: "function", function: { name: "get_weather" } });
    expect(r.parallel_tool_calls).toBe(false);
    expect([r.max_tokens, r.temperature, r.stop, r.stream, r.stream_options]).toEqual([
      300,
      0.2,
      ["\n\nHuman:"],
      true,
      { include_usage: true },
    ]);
  });
});

describe("OpenAI → Claude reply", () => {
  test("a tool-call completion becomes tool_use blocks with stop_reason tool_use; cached tokens split out", () => {
    const r = openAIResponseToClaude(
      {
        id: "chatcmpl-9",
        object: "chat.completion",
        created: 1,
        model: "gpt",
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: '{"x":1}' } }],
            },
            finish_reason: "tool_calls",
          },
        ],
        usage: {
          prompt_tokens: 50,
          completion_tokens: 5,
          total_tokens: 55,
          prompt_tokens_details: { cached_tokens: 30 },
        },
      },
      "claude-client-model",
    );
    expect(r).toMatchObject({
      type: "message",
      role: "assistant",
      model: "claude-client-model",
      stop_reason: "tool_use",
      stop_sequence: null,
    });
    expect(r.id).toStartWith("msg_");
    expect(r.content).toEqual([{ type: "tool_use", id: "call_1", name: "f", input: { x: 1 } }]);
    expect(r.usage).toEqual({
      input_tokens: 20,
      output_tokens: 5,
      cache_read_input_tokens: 30,
      cache_creation_input_tokens: 0,
    });
  });

  test("length → max_tokens", () => {
    const r = openAIResponseToClaude(
      {
        id: "x",
        object: "chat.completion",
        created: 1,
        model: "g",
        choices: [{ index: 0, message: { role: "assistant", content: "abc" }, finish_reason: "length" }],
      },
      "m",
    );
    expect(r.stop_reason).toBe("max_tokens");
    expect(claudeUsageOf(undefined)).toEqual({
      input_tokens: 0,
      output_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
  });

  test("a stream becomes a block-structured Claude event sequence", () => {
    const s = new OpenAIStreamToClaude("claude-x", "msg_test");
    const evs = [
      chunk({ role: "assistant", content: "" }),
      chunk({ reasoning_content: "think" }),
      chunk({ content: "Hi" }),
      chunk({ content: " there" }),
      chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "f", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }),
      chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "g", arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
      { ...chunk({}), choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } } as OpenAIChunk,
    ].flatMap((c) => s.push(c));
    const all = [...evs, ...s.end()];
    expect(all.map((e) => e.type + (e.index !== undefined ? `#${e.index}` : ""))).toEqual([
      "message_start",
      "content_block_start#0",
      "content_block_delta#0",
      "content_block_stop#0",
      "content_block_start#1",
      "content_block_delta#1",
      "content_block_delta#1",
      "content_block_stop#1",
      "content_block_start#2",
      "content_block_delta#2",
      "content_block_stop#2",
      "content_block_start#3",
      "content_block_delta#3",
      "content_block_stop#3",
      "message_delta",
      "message_stop",
    ]);
    expect(all[0]!.message.id).toBe("msg_test");
    expect(all[1]!.content_block).toEqual({ type: "thinking", thinking: "" });
    expect(all[8]!.content_block).toEqual({ type: "tool_use", id: "call_a", name: "f", input: {} });
    expect(all[9]!.delta).toEqual({ type: "input_json_delta", partial_json: '{"a":1}' });
    expect(all.at(-2)).toEqual({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { input_tokens: 9, output_tokens: 4, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    });
    expect(s.end()).toEqual([]);
  });
});

describe("Gemini request → OpenAI", () => {
  test("contents, system instruction, inline data, function call/response pairing, generation config, tools", () => {
    const r = geminiRequestToOpenAI(
      {
        systemInstruction: { parts: [{ text: "Be kind." }] },
        contents: [
          {
            role: "user",
            parts: [
              { text: "What is in " },
              { text: "this?" },
              { inlineData: { mimeType: "image/jpeg", data: "/9j/" } },
            ],
          },
          { role: "model", parts: [{ functionCall: { name: "lookup", args: { q: "cat" } } }] },
          { role: "user", parts: [{ functionResponse: { name: "lookup", response: { result: "a cat" } } }] },
        ],
        generationConfig: {
          temperature: 0.1,
          topP: 0.5,
          maxOutputTokens: 99,
          stopSequences: ["STOP"],
          responseMimeType: "application/json",
        },
        tools: [
          {
            functionDeclarations: [
              {
                name: "lookup",
                description: "search",
                parameters: { type: "OBJECT", properties: { q: { type: "STRING" } } },
              },
            ],
          },
        ],
        toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["lookup"] } },
      },
      "gpt-x",
      false,
    );
    expect(r.messages[0]).toEqual({ role: "system", content: "Be kind." });
    expect(r.messages[1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is in " },
        { type: "text", text: "this?" },
        { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/" } },
      ],
    });
    const callId = r.messages[2]!.tool_calls![0]!.id;
    expect(r.messages[2]).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: callId, type: "function", function: { name: "lookup", arguments: '{"q":"cat"}' } }],
    });
    expect(r.messages[3]).toEqual({
      role: "tool",
      tool_call_id: callId,
      name: "lookup",
      content: '{"result":"a cat"}',
    });
    expect([r.temperature, r.top_p, r.max_tokens, r.stop, r.response_format]).toEqual([
      0.1,
      0.5,
      99,
      ["STOP"],
      { type: "json_object" },
    ]);
    expect(r.tool_choice).toEqual({ type: "function", function: { name: "lookup" } });
    expect(r.tools![0]!.function.name).toBe("lookup");
    expect(r.stream).toBeUndefined();
  });
});

describe("OpenAI → Gemini reply", () => {
  test("candidates with text, function calls, finish reason and usageMetadata", () => {
    const r = openAIResponseToGemini(
      {
        id: "chatcmpl-3",
        object: "chat.completion",
        created: 1,
        model: "gpt",
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: "Sure.",
              tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: '{"k":"v"}' } }],
            },
            finish_reason: "tool_calls",
          },
        ],
        usage: {
          prompt_tokens: 7,
          completion_tokens: 3,
          total_tokens: 10,
          completion_tokens_details: { reasoning_tokens: 1 },
        },
      },
      "gemini-client",
    );
    expect(r.candidates).toEqual([
      {
        content: { role: "model", parts: [{ text: "Sure." }, { functionCall: { name: "f", args: { k: "v" } } }] },
        finishReason: "STOP",
        index: 0,
      },
    ]);
    expect(r.usageMetadata).toEqual({
      promptTokenCount: 7,
      candidatesTokenCount: 2,
      thoughtsTokenCount: 1,
      totalTokenCount: 10,
    });
    expect(r.modelVersion).toBe("gemini-client");
  });

  test("a stream: text as it comes, function calls held until the end, final chunk with finish and usage", () => {
    const s = new OpenAIStreamToGemini("g", "rid");
    const out = [
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hel" }),
      chunk({ content: "lo" }),
      chunk({ tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "f", arguments: '{"a"' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: ":2}" } }] }),
      chunk({}, "length"),
    ].flatMap((c) => s.push(c));
    expect(out.map((g) => g.candidates![0]!.content!.parts[0]!.text)).toEqual(["Hel", "lo"]);
    const end = s.end({ prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 });
    expect(end).toEqual([
      {
        candidates: [
          {
            content: { role: "model", parts: [{ functionCall: { name: "f", args: { a: 2 } } }] },
            index: 0,
            finishReason: "MAX_TOKENS",
          },
        ],
        modelVersion: "g",
        responseId: "rid",
        usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 6, totalTokenCount: 10 },
      },
    ]);
  });
});

describe("entry-point input checks", () => {
  test("Gemini route tails", () => {
    expect(geminiTarget("gemini-2.5-flash:generateContent")).toEqual({
      model: "gemini-2.5-flash",
      action: "generateContent",
      stream: false,
    });
    expect(geminiTarget("gemini-2.5-flash%3AstreamGenerateContent")).toEqual({
      model: "gemini-2.5-flash",
      action: "streamGenerateContent",
      stream: true,
    });
    expect(geminiTarget("gemini-2.5-flash:embedContent")).toEqual({
      model: "gemini-2.5-flash",
      action: "embedContent",
      stream: false,
    });
    expect(() => geminiTarget("gemini-2.5-flash:predictLongRunning")).toThrow(
      "method predictLongRunning is not supported",
    );
    expect(() => geminiTarget("gemini-2.5-flash")).toThrow("unknown Gemini route");
  });

  test("Claude bodies", () => {
    expect(checkClaudeBody({ model: " m ", messages: [{ role: "user", content: "x" }] })).toBe("m");
    expect(() => checkClaudeBody({ messages: [] })).toThrow("model: Field required");
    expect(() => checkClaudeBody({ model: "m", messages: [{ content: "x" }] })).toThrow(
      "messages.0.role: Field required",
    );
    // Roles and content are the channel's to judge: a Claude channel takes them as sent, a conversion names what it cannot map.
    expect(
      checkClaudeBody({
        model: "m",
        messages: [
          { role: "user", content: "x" },
          { role: "system", content: "y" },
        ],
      }),
    ).toBe("m");
    expect(checkClaudeBody({ model: "m", messages: [{ role: "user", content: 5 }] })).toBe("m");
    expect(() =>
      claudeRequestToOpenAI({ model: "m", max_tokens: 1, messages: [{ role: "user", content: 5 as any }] }),
    ).toThrow("messages.0.content");
    expect(() => checkClaudeBody({ model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 0 })).toThrow(
      "max_tokens",
    );
  });

  test("Gemini bodies", () => {
    expect(() => checkGeminiBody({})).toThrow("contents is not specified");
    expect(() => checkGeminiBody({ contents: [{ role: "user" }] })).toThrow("contents[0].parts");
    expect(() => checkGeminiBody({ contents: [{ parts: [{ text: "x" }] }] })).not.toThrow();
  });
});

describe("bridge", () => {
  test("an OpenAI error frame mid-stream becomes a Claude error event / a Gemini error chunk", async () => {
    const { nativeAware } = await import("../../server/relay/formats/bridge.ts");
    const { openaiAdaptor } = await import("../../server/relay/providers/openai/index.ts");
    const { makeCall } = await import("./harness.ts");
    const frame = (data: string) => ({ data, raw: `data: ${data}\n\n` });
    const claudeSide = nativeAware(openaiAdaptor).streamMapper(
      makeCall({ baseUrl: "x", key: "k", format: "claude", stream: true, requestModel: "c" }),
    );
    let out = claudeSide.event(frame(JSON.stringify(chunk({ content: "partial" }))));
    out += claudeSide.event(frame(JSON.stringify({ error: { message: "upstream exploded" } })));
    out += claudeSide.end();
    expect(out).toContain(
      'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"upstream exploded"}}',
    );
    expect(out).toContain('"text":"partial"');
    expect(out.trimEnd().endsWith('data: {"type":"message_stop"}')).toBe(true);
    const geminiSide = nativeAware(openaiAdaptor).streamMapper(
      makeCall({ baseUrl: "x", key: "k", format: "gemini", stream: true, requestModel: "g" }),
    );
    const g = geminiSide.event(frame(JSON.stringify({ error: { message: "nope" } })));
    expect(JSON.parse(g.slice(6))).toEqual({ error: { code: 500, message: "nope", status: "INTERNAL" } });
  });

  test("adaptors are used as they are when they speak the client's format", async () => {
    const { nativeAware, speaksNatively } = await import("../../server/relay/formats/bridge.ts");
    const { claudeAdaptor } = await import("../../server/relay/providers/claude/index.ts");
    const { openaiAdaptor } = await import("../../server/relay/providers/openai/index.ts");
    const { makeCall } = await import("./harness.ts");
    expect(speaksNatively(claudeAdaptor, makeCall({ baseUrl: "x", key: "k", format: "claude" }))).toBe(true);
    expect(speaksNatively(openaiAdaptor, makeCall({ baseUrl: "x", key: "k", format: "claude" }))).toBe(false);
    expect(speaksNatively(openaiAdaptor, makeCall({ baseUrl: "x", key: "k", format: "openai" }))).toBe(true);
    expect(nativeAware(claudeAdaptor)).toBe(nativeAware(claudeAdaptor));
    const up = await nativeAware(openaiAdaptor).buildRequest(
      makeCall({ baseUrl: "http://u", key: "k", format: "claude", upstreamModel: "gpt-x" }),
      { model: "alias", max_tokens: 5, messages: [{ role: "user", content: "hi" }] },
    );
    expect(up.url).toBe("http://u/v1/chat/completions");
    expect(JSON.parse(up.body as string)).toEqual({
      model: "gpt-x",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 5,
    });
  });
});
