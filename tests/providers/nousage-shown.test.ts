// When the upstream reports no usage the gateway bills counted tokens; the usage the client is shown
// must be those same numbers, not the zeros of a converted answer: OpenAI bodies' `usage` and the
// stream's usage chunk (when asked for), Claude clients' usage.input_tokens/output_tokens and Gemini
// clients' usageMetadata on channels of another format.
import { describe, expect, test } from "bun:test";
import { callAsNewUser, ratios, sharedRelayFixture } from "../relay/fixtures.ts";
import { GEMINI_USAGE, startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { SseReader } from "../../server/relay/formats/sse.ts";

const models = {
  gemini: "gemini-s-nousage",
  claude: "claude-s-nousage",
  openai: "gpt-s-nousage",
  geminiUsage: "gemini-s-usage",
};
const question = "Tell every reader of this test, in a few words, that the usage they see is the usage they pay.";

const relay = sharedRelayFixture(async (fx) => {
  const gemini = startGeminiUpstream();
  const claude = startClaudeUpstream();
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: [models.gemini, models.geminiUsage] });
  await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: [models.claude] });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: [models.openai] });
  await ratios(fx, Object.values(models), 1, 1);
  return { gemini, claude };
});

/** Calls once with a fresh user; returns the response text and the one consume log. */
async function call(path: string, body: Record<string, unknown>) {
  const { status, text, logs } = await callAsNewUser(relay.fx, path, body);
  expect(status).toBe(200);
  expect(logs).toHaveLength(1);
  const log = logs[0]!;
  expect(log.prompt_tokens).toBeGreaterThan(10);
  expect(log.completion_tokens).toBeGreaterThan(0);
  return { text, log };
}

function events(text: string): { event?: string; data: any }[] {
  return new SseReader()
    .push(new TextEncoder().encode(text))
    .filter((e) => e.data !== "[DONE]")
    .map((e) => ({ event: e.event, data: JSON.parse(e.data) }));
}

const openai = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: question }],
  ...extra,
});
const claudeBody = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 256,
  messages: [{ role: "user", content: question }],
  ...extra,
});
const geminiBody = { contents: [{ role: "user", parts: [{ text: question }] }] };

describe("OpenAI clients", () => {
  for (const [name, model] of [
    ["Gemini", models.gemini],
    ["Claude", models.claude],
  ] as const) {
    test(`${name} non-stream: the body's usage is the billed count`, async () => {
      const { text, log } = await call("/v1/chat/completions", openai(model));
      const body = JSON.parse(text);
      expect(body.usage).toMatchObject({
        prompt_tokens: log.prompt_tokens,
        completion_tokens: log.completion_tokens,
        total_tokens: log.prompt_tokens + log.completion_tokens,
      });
    });

    test(`${name} stream with include_usage: the usage chunk is the billed count`, async () => {
      const { text, log } = await call(
        "/v1/chat/completions",
        openai(model, { stream: true, stream_options: { include_usage: true } }),
      );
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
      const withUsage = events(text).filter((e) => e.data.usage);
      expect(withUsage).toHaveLength(1);
      const last = events(text).at(-1)!.data;
      expect(last.choices).toEqual([]);
      expect(last.usage).toMatchObject({
        prompt_tokens: log.prompt_tokens,
        completion_tokens: log.completion_tokens,
        total_tokens: log.prompt_tokens + log.completion_tokens,
      });
    });

    test(`${name} stream without include_usage: no usage is sent`, async () => {
      const { text } = await call("/v1/chat/completions", openai(model, { stream: true }));
      expect(events(text).filter((e) => e.data.usage)).toHaveLength(0);
    });
  }

  test("a Gemini stream that reported usage shows the upstream's own numbers", async () => {
    const { text } = await callAsNewUser(
      relay.fx,
      "/v1/chat/completions",
      openai(models.geminiUsage, { stream: true, stream_options: { include_usage: true } }),
    );
    const last = events(text).at(-1)!.data;
    expect(last.usage).toMatchObject({
      prompt_tokens: GEMINI_USAGE.promptTokenCount,
      completion_tokens: GEMINI_USAGE.candidatesTokenCount + GEMINI_USAGE.thoughtsTokenCount,
      completion_tokens_details: { reasoning_tokens: GEMINI_USAGE.thoughtsTokenCount },
    });
  });
});

describe("Claude clients on channels of another format", () => {
  for (const [name, model] of [
    ["Gemini", models.gemini],
    ["OpenAI", models.openai],
  ] as const) {
    test(`${name} non-stream: usage.input_tokens/output_tokens are the billed count`, async () => {
      const { text, log } = await call("/v1/messages", claudeBody(model));
      expect(JSON.parse(text).usage).toMatchObject({
        input_tokens: log.prompt_tokens,
        output_tokens: log.completion_tokens,
      });
    });

    test(`${name} stream: message_delta carries the billed count`, async () => {
      const { text, log } = await call("/v1/messages", claudeBody(model, { stream: true }));
      const delta = events(text).find((e) => e.data.type === "message_delta")!;
      expect(delta.data.usage).toMatchObject({ input_tokens: log.prompt_tokens, output_tokens: log.completion_tokens });
    });
  }
});

describe("Gemini clients on channels of another format", () => {
  for (const [name, model] of [
    ["Claude", models.claude],
    ["OpenAI", models.openai],
  ] as const) {
    test(`${name} non-stream: usageMetadata is the billed count`, async () => {
      const { text, log } = await call(`/v1beta/models/${model}:generateContent`, geminiBody);
      expect(JSON.parse(text).usageMetadata).toMatchObject({
        promptTokenCount: log.prompt_tokens,
        candidatesTokenCount: log.completion_tokens,
        totalTokenCount: log.prompt_tokens + log.completion_tokens,
      });
    });

    test(`${name} stream: the closing chunk's usageMetadata is the billed count`, async () => {
      const { text, log } = await call(`/v1beta/models/${model}:streamGenerateContent?alt=sse`, geminiBody);
      const last = events(text).at(-1)!.data;
      expect(last.usageMetadata).toMatchObject({
        promptTokenCount: log.prompt_tokens,
        candidatesTokenCount: log.completion_tokens,
        totalTokenCount: log.prompt_tokens + log.completion_tokens,
      });
    });
  }
});
