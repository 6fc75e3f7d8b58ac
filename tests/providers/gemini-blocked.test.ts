// A prompt Gemini's safety filter refuses comes back as promptFeedback.blockReason with no candidates.
// OpenAI clients get what OpenAI sends for a filtered answer: a choice whose finish_reason is
// "content_filter" (streamed as its own chunk, then [DONE]); the counted prompt is billed.
import { expect, test } from "bun:test";
import { callAsNewUser, ratios, sharedRelayFixture } from "../relay/fixtures.ts";
import { GEMINI_USAGE, startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { SseReader } from "../../server/relay/formats/sse.ts";

const model = "gemini-x-blocked";
const relay = sharedRelayFixture(async (fx) => {
  const gemini = startGeminiUpstream();
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: [model] });
  await ratios(fx, [model], 1);
  return { gemini };
});

async function call(path: string, body: Record<string, unknown>) {
  const { status, text, logs } = await callAsNewUser(relay.fx, path, body);
  expect(status).toBe(200);
  expect(logs).toHaveLength(1);
  expect([logs[0]!.prompt_tokens, logs[0]!.completion_tokens]).toEqual([GEMINI_USAGE.promptTokenCount, 0]);
  return text;
}

const events = (text: string) => new SseReader().push(new TextEncoder().encode(text)).map((e) => e.data);
const openai = (extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "Something the filter refuses." }],
  ...extra,
});

test("non-stream: one choice with finish_reason content_filter", async () => {
  const body = JSON.parse(await call("/v1/chat/completions", openai()));
  expect(body.choices).toEqual([
    { index: 0, message: { role: "assistant", content: "" }, finish_reason: "content_filter" },
  ]);
  expect(body.usage).toMatchObject({ prompt_tokens: GEMINI_USAGE.promptTokenCount, completion_tokens: 0 });
});

for (const includeUsage of [false, true]) {
  test(`stream${includeUsage ? " with include_usage" : ""}: a content_filter finish, then [DONE]`, async () => {
    const extra = includeUsage ? { stream: true, stream_options: { include_usage: true } } : { stream: true };
    const data = events(await call("/v1/chat/completions", openai(extra)));
    expect(data.at(-1)).toBe("[DONE]");
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    const finishes = chunks.flatMap((c) =>
      c.choices.filter((ch: any) => ch.finish_reason).map((ch: any) => ch.finish_reason),
    );
    expect(finishes).toEqual(["content_filter"]);
    const usage = chunks.filter((c) => c.usage);
    if (!includeUsage) expect(usage).toHaveLength(0);
    else
      expect(usage.map((c) => [c.usage.prompt_tokens, c.usage.completion_tokens])).toEqual([
        [GEMINI_USAGE.promptTokenCount, 0],
      ]);
  });
}

test("a Claude client's stream ends with stop_reason refusal", async () => {
  const data = events(
    await call("/v1/messages", {
      model,
      max_tokens: 100,
      stream: true,
      messages: [{ role: "user", content: "Something the filter refuses." }],
    }),
  );
  const delta = data.map((d) => JSON.parse(d)).find((e) => e.type === "message_delta");
  expect(delta.delta.stop_reason).toBe("refusal");
});
