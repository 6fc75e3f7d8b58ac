// Model fallbacks as real applications see them: the official openai and @anthropic-ai/sdk clients against a
// listening gateway whose requested model fails (all channels 503, or Claude's "prompt is too long"); the
// answer comes from the fallback model in the SDK's own types, streamed or not, and is billed at that model.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { relayFixture, logsOf, tokenRow, type RelayFixture } from "../relay/fixtures.ts";
import { startMockUpstream, type MockUpstream } from "../mocks/openai-upstream.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import type { MockUpstream as Recorded } from "../mocks/recorder.ts";

let fx: RelayFixture;
let down: MockUpstream;
let claude: Recorded;
let tooLong: ReturnType<typeof Bun.serve>;
let server: ReturnType<typeof Bun.serve>;
let openai: OpenAI;
let anthropic: Anthropic;
let userId: number;
let tokenId: number;

const QUOTA = 5_000_000;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  down = startMockUpstream({ failStatus: 503 });
  claude = startClaudeUpstream();
  tooLong = Bun.serve({
    port: 0,
    fetch: () =>
      Response.json(
        {
          type: "error",
          error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" },
        },
        { status: 400 },
      ),
  });
  await fx.option(
    "ModelRatio",
    JSON.stringify({ "sdk-big": 10, "sdk-small": 1, "claude-opus-4-1": 10, "claude-sonnet-4-20250514": 2 }),
  );
  await fx.option(
    "CompletionRatio",
    JSON.stringify({ "sdk-big": 1, "sdk-small": 1, "claude-opus-4-1": 5, "claude-sonnet-4-20250514": 5 }),
  );
  await fx.option(
    "ModelFallbacks",
    JSON.stringify({ "sdk-big": ["sdk-small"], "claude-opus-4-1": ["claude-sonnet-4-20250514"] }),
  );
  await fx.channel({ base_url: down.url, models: ["sdk-big"] });
  await fx.channel({ base_url: fx.mock.url, models: ["sdk-small"] });
  await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: `http://127.0.0.1:${tooLong.port}`,
    models: ["claude-opus-4-1"],
  });
  await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: ["claude-sonnet-4-20250514"] });
  const user = await fx.user(QUOTA);
  userId = user.id;
  const token = await fx.token(user.id, { remain_quota: QUOTA });
  tokenId = token.id;
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
  // The test preload registers a DOM (for console tests), which the SDKs take for a browser.
  openai = new OpenAI({
    apiKey: token.key,
    baseURL: `http://127.0.0.1:${server.port}/v1`,
    maxRetries: 0,
    dangerouslyAllowBrowser: true,
  });
  anthropic = new Anthropic({
    apiKey: token.key,
    baseURL: `http://127.0.0.1:${server.port}`,
    maxRetries: 0,
    dangerouslyAllowBrowser: true,
  });
});

afterAll(async () => {
  server.stop(true);
  tooLong.stop(true);
  claude.stop();
  await down.stop();
  await fx.close();
});

async function lastLog() {
  await fx.flush();
  return (await logsOf(fx, userId)).filter((l) => l.type === 2).at(-1)!;
}

describe("openai SDK", () => {
  test("chat: the requested model's channels are down; the fallback answers, billed at its price", async () => {
    const before = (await tokenRow(fx, tokenId)).remain_quota;
    const r = await openai.chat.completions.create({
      model: "sdk-big",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(r.choices[0].message.content).toBe("Hello world!");
    const log = await lastLog();
    expect(log.model_name).toBe("sdk-small");
    expect(log.quota).toBe(30);
    expect(JSON.parse(log.other).fallback).toMatchObject({ requested: "sdk-big", served: "sdk-small" });
    expect((await tokenRow(fx, tokenId)).remain_quota).toBe(before - 30);
  });

  test("chat, streamed with usage: the stream comes from the fallback", async () => {
    const stream = openai.chat.completions.stream({
      model: "sdk-big",
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hello" }],
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0].message.content).toBe("Hello world!");
    expect(final.usage?.total_tokens).toBe(30);
    expect((await lastLog()).model_name).toBe("sdk-small");
  });
});

describe("anthropic SDK", () => {
  test("messages: 'prompt is too long' on the requested model; the fallback's Claude answer, plain and streamed", async () => {
    const msg = await anthropic.messages.create({
      model: "claude-opus-4-1",
      max_tokens: 100,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(msg.type).toBe("message");
    expect(msg.model).toBe("claude-sonnet-4-20250514");
    expect(claude.last().body.model).toBe("claude-sonnet-4-20250514");
    const plain = await lastLog();
    expect(JSON.parse(plain.other).fallback).toMatchObject({
      requested: "claude-opus-4-1",
      served: "claude-sonnet-4-20250514",
      reason: "context_length_exceeded",
    });
    const stream = anthropic.messages.stream({
      model: "claude-opus-4-1",
      max_tokens: 100,
      messages: [{ role: "user", content: "Hi" }],
    });
    const final = await stream.finalMessage();
    expect(final.content[0].type).toBe("text");
    expect((await lastLog()).model_name).toBe("claude-sonnet-4-20250514");
  });
});
