// Usage objects that leave a side out (an empty `usage: {}` or `usageMetadata: {}`, no input count, no
// output count), streams without any usage, and upstream frames that are not JSON. Whatever is missing
// is counted rather than billed as 0: a usage without its input side is no usage (the relay then counts
// the prompt and the generated text), a missing output side is counted from the answer's text. Frames
// the gateway cannot read still never carry the channel key or an upstream address to a client.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, logsOf, userRow, type RelayFixture } from "../relay/fixtures.ts";
import { CLAUDE_TEXT, startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { countPromptTokens, countTokens, countTokensNow } from "../../server/relay/tokenizer.ts";
import { claudeAdaptor } from "../../server/relay/providers/claude/index.ts";
import { geminiAdaptor } from "../../server/relay/providers/gemini/index.ts";
import type { ClientFormat, SseEvent } from "../../server/relay/providers/types.ts";
import { makeCall } from "./harness.ts";
import { answerUsage } from "../../server/relay/core/meter.ts";

const KEY = "sk-ant-api03-gapsecret0123456789";
const BASE = "http://10.9.9.9:7000";
const call = (format: ClientFormat = "openai", stream = false) => makeCall({ baseUrl: BASE, key: KEY, stream, format });
const frame = (data: unknown, event?: string): SseEvent => {
  const text = typeof data === "string" ? data : JSON.stringify(data);
  return { event, data: text, raw: (event ? `event: ${event}\n` : "") + `data: ${text}\n\n` };
};

describe("Claude answers", () => {
  const answer = (usage?: unknown) => ({
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-x",
    stop_reason: "end_turn",
    stop_sequence: null,
    content: [{ type: "text", text: CLAUDE_TEXT }],
    ...(usage === undefined ? {} : { usage }),
  });

  test("an empty usage object, or one without input_tokens, is no usage", () => {
    expect(claudeAdaptor.parseResponse(call(), answer({})).usage).toBeNull();
    expect(claudeAdaptor.parseResponse(call("claude"), answer({ output_tokens: 5 })).usage).toBeNull();
  });

  test("a usage without output_tokens gets the answer's text counted (by the relay, off the event loop)", async () => {
    const parsed = claudeAdaptor.parseResponse(call(), answer({ input_tokens: 10 }));
    expect(parsed.uncountedOutput).toBe(CLAUDE_TEXT);
    const u = (await answerUsage(parsed))!;
    expect(u.prompt_tokens).toBe(10);
    expect(u.completion_tokens).toBe(countTokensNow(CLAUDE_TEXT));
    expect(u.total_tokens).toBe(10 + u.completion_tokens);
  });

  test("a complete usage is taken as reported", () => {
    const parsed = claudeAdaptor.parseResponse(call(), answer({ input_tokens: 10, output_tokens: 0 }));
    expect(parsed.uncountedOutput).toBeUndefined();
    const u = parsed.usage!;
    expect([u.prompt_tokens, u.completion_tokens]).toEqual([10, 0]);
  });
});

describe("Claude streams", () => {
  const text = [
    frame({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start"),
    frame(
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: CLAUDE_TEXT } },
      "content_block_delta",
    ),
  ];
  const start = (usage?: object) =>
    frame(
      { type: "message_start", message: { id: "m", model: "claude-x", content: [], ...(usage ? { usage } : {}) } },
      "message_start",
    );
  const delta = (usage?: object) =>
    frame({ type: "message_delta", delta: { stop_reason: "end_turn" }, ...(usage ? { usage } : {}) }, "message_delta");

  test("message_start without usage: no usage, whatever message_delta reports, so the prompt gets counted", () => {
    for (const last of [delta(), delta({ output_tokens: 7 }), delta({})]) {
      const m = claudeAdaptor.streamMapper(call("openai", true));
      for (const ev of [start(), ...text, last]) m.event(ev);
      expect(m.usage()).toBeNull();
      expect(m.generatedText()).toBe(CLAUDE_TEXT);
    }
  });

  test("an input count in message_start is kept, the output counted when message_delta has none", () => {
    const m = claudeAdaptor.streamMapper(call("claude", true));
    for (const ev of [start({ input_tokens: 12, output_tokens: 1 }), ...text, delta()]) m.event(ev);
    expect(m.usage()).toMatchObject({ prompt_tokens: 12, completion_tokens: countTokensNow(CLAUDE_TEXT) });
  });

  test("a tool call's name counts as generated, as in non-stream answers", () => {
    const m = claudeAdaptor.streamMapper(call("openai", true));
    m.event(start());
    m.event(
      frame(
        {
          type: "content_block_start",
          index: 0,
          content_block: { type: "tool_use", id: "t1", name: "get_weather", input: {} },
        },
        "content_block_start",
      ),
    );
    m.event(
      frame(
        {
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: '{"city":"Paris"}' },
        },
        "content_block_delta",
      ),
    );
    expect(m.generatedText()).toBe('get_weather{"city":"Paris"}');
  });

  test("a frame that is not JSON reaches a Claude client without the key or the upstream address", () => {
    const m = claudeAdaptor.streamMapper(call("claude", true));
    const out = m.event(frame(`proxy note: key ${KEY} via ${BASE}/v1/messages`, "notice"));
    expect(out).not.toContain(KEY);
    expect(out).not.toContain("10.9.9.9");
    expect(out).toContain("proxy note");
  });
});

describe("Gemini answers", () => {
  const answer = (usageMetadata?: unknown) => ({
    candidates: [
      { content: { role: "model", parts: [{ text: "Hello from Gemini." }] }, finishReason: "STOP", index: 0 },
    ],
    ...(usageMetadata === undefined ? {} : { usageMetadata }),
  });

  for (const format of ["openai", "gemini"] as const) {
    test(`${format} client: usageMetadata without promptTokenCount is no usage`, () => {
      expect(geminiAdaptor.parseResponse(call(format), answer({})).usage).toBeNull();
      expect(
        geminiAdaptor.parseResponse(call(format), answer({ candidatesTokenCount: 5, totalTokenCount: 5 })).usage,
      ).toBeNull();
    });
  }

  test("usageMetadata without candidatesTokenCount gets the answer's text counted (by the relay, off the event loop)", async () => {
    const u = (await answerUsage(
      geminiAdaptor.parseResponse(call(), answer({ promptTokenCount: 9, totalTokenCount: 9 })),
    ))!;
    expect(u.prompt_tokens).toBe(9);
    expect(u.completion_tokens).toBe(countTokensNow("Hello from Gemini."));
  });

  test("a blocked prompt (no candidates) bills the prompt only", async () => {
    const u = (await answerUsage(
      geminiAdaptor.parseResponse(call(), {
        promptFeedback: { blockReason: "SAFETY" },
        usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
      }),
    ))!;
    expect([u.prompt_tokens, u.completion_tokens]).toEqual([9, 0]);
  });
});

describe("Gemini streams", () => {
  const chunk = (usageMetadata?: object, finishReason?: string) =>
    frame({
      candidates: [
        { content: { role: "model", parts: [{ text: "Hello" }] }, index: 0, ...(finishReason ? { finishReason } : {}) },
      ],
      ...(usageMetadata ? { usageMetadata } : {}),
    });

  test("usageMetadata without promptTokenCount is no usage, so the prompt gets counted", () => {
    for (const meta of [{}, { candidatesTokenCount: 1, totalTokenCount: 1 }]) {
      const m = geminiAdaptor.streamMapper(call("openai", true));
      m.event(chunk(meta));
      m.event(chunk(meta, "STOP"));
      expect(m.usage()).toBeNull();
      expect(m.generatedText()).toBe("HelloHello");
    }
  });

  test("a frame that is not JSON reaches a Gemini client without the key or the upstream address", () => {
    const m = geminiAdaptor.streamMapper(call("gemini", true));
    const out = m.event(frame(`upstream hiccup for key ${KEY} at ${BASE}/v1beta`));
    expect(out).not.toContain(KEY);
    expect(out).not.toContain("10.9.9.9");
    expect(out).toContain("upstream hiccup");
  });
});

describe("through the relay: a Claude stream without usage", () => {
  let fx: RelayFixture;
  let claude: ReturnType<typeof startClaudeUpstream>;
  const model = "claude-x-nousage";
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    claude = startClaudeUpstream();
    await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: [model] });
    await fx.option("ModelRatio", JSON.stringify({ [model]: 1 }));
    await fx.option("CompletionRatio", JSON.stringify({ [model]: 1 }));
  });
  afterAll(async () => {
    claude.stop();
    await fx.close();
  });

  const question = "Please greet every reader of this test with a few friendly words.";
  const cases: [string, string, Record<string, unknown>][] = [
    ["OpenAI client", "/v1/chat/completions", { model, stream: true, messages: [{ role: "user", content: question }] }],
    [
      "Claude client",
      "/v1/messages",
      { model, stream: true, max_tokens: 100, messages: [{ role: "user", content: question }] },
    ],
  ];
  for (const [name, path, body] of cases) {
    test(`${name}: the prompt and the text are counted and billed`, async () => {
      const user = await fx.user(10_000_000);
      const token = await fx.token(user.id, { remain_quota: 10_000_000 });
      const res = await fx.call(path, token.key, body);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("Claude");
      await fx.flush();
      const [log] = await logsOf(fx, user.id);
      expect(log).toBeDefined();
      expect(log.prompt_tokens).toBe(await countPromptTokens(body));
      expect(log.prompt_tokens).toBeGreaterThan(10);
      expect(log.completion_tokens).toBe(await countTokens(CLAUDE_TEXT));
      expect(log.quota).toBe(log.prompt_tokens + log.completion_tokens);
      expect((await userRow(fx, user.id)).quota).toBe(10_000_000 - log.quota);
    });
  }
});
