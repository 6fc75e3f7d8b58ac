// An upstream Claude stream that fails midway with `event: error`: the client gets the error in its own
// format (an OpenAI error chunk on /v1/chat/completions, a Claude error event on /v1/messages), never
// with the channel key or an internal address in it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "../relay/fixtures.ts";
import { startClaudeUpstream, CLAUDE_INTERNAL_URL } from "../mocks/claude-upstream.ts";
import { SseReader } from "../../server/relay/formats/sse.ts";

const KEY = "sk-ant-api03-channelsecret0123456789";
let fx: RelayFixture;
let claude: ReturnType<typeof startClaudeUpstream>;
let token: string;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream({ key: KEY });
  await fx.channel({ type: 14, key: KEY, base_url: claude.url, models: ["claude-x-streamerror"] });
  await fx.option("ModelRatio", JSON.stringify({ "claude-x-streamerror": 1 }));
  const user = await fx.user(10_000_000);
  token = (await fx.token(user.id)).key;
});

afterAll(async () => {
  claude.stop();
  await fx.close();
});

function expectScrubbed(text: string) {
  expect(text).not.toContain(KEY);
  expect(text).not.toContain(new URL(CLAUDE_INTERNAL_URL).host);
  expect(text).not.toContain(claude.url);
  expect(text).toContain("Overloaded");
}

test("/v1/chat/completions: an OpenAI error chunk without the key or internal URLs", async () => {
  const res = await fx.call("/v1/chat/completions", token, {
    model: "claude-x-streamerror",
    stream: true,
    messages: [{ role: "user", content: "Hi" }],
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).toContain("Hello");
  expectScrubbed(text);
  const events = new SseReader()
    .push(new TextEncoder().encode(text))
    .filter((e) => e.data !== "[DONE]")
    .map((e) => JSON.parse(e.data));
  expect(events.find((e) => e.error)).toEqual({
    error: { type: "overloaded_error", message: expect.stringContaining("Overloaded") },
  });
});

test("/v1/messages: a Claude error event without the key or internal URLs", async () => {
  const res = await fx.call("/v1/messages", token, {
    model: "claude-x-streamerror",
    max_tokens: 50,
    stream: true,
    messages: [{ role: "user", content: "Hi" }],
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  expectScrubbed(text);
  const error = new SseReader().push(new TextEncoder().encode(text)).find((e) => e.event === "error")!;
  expect(JSON.parse(error.data)).toEqual({
    type: "error",
    error: { type: "overloaded_error", message: expect.stringContaining("Overloaded") },
  });
});
