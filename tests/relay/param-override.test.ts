// A channel's param_override is merged into the body that actually goes upstream, in the upstream's
// own wire format, whichever format the client spoke and whatever conversion ran in between.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { testChannel } from "../../server/modules/channel/testing.ts";

let fx: RelayFixture;
let key: string;
let claude: MockUpstream;
let gemini: MockUpstream;
let bedrock: MockUpstream;
let claudeId: number;

const OVERRIDE = { temperature: 0.1, user: "x" };
const MODELS = ["po-openai", "po-claude", "po-gemini", "po-bedrock", "po-plain"];

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream();
  gemini = startGeminiUpstream();
  const creds = { accessKeyId: "AKIDPO", secretAccessKey: "po-secret", region: "us-east-1" };
  bedrock = startBedrockUpstream(creds);
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, 1]))));
  await fx.channel({ type: 1, base_url: fx.mock.url, models: ["po-openai"], param_override: OVERRIDE });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: ["po-plain"] });
  claudeId = await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claude.url,
    models: ["po-claude"],
    model_mapping: { "po-claude": "claude-sonnet-4-20250514" },
    param_override: { top_k: 5, temperature: 0.3 },
  });
  await fx.channel({
    type: 24,
    key: "gemini-key",
    base_url: gemini.url,
    models: ["po-gemini"],
    model_mapping: { "po-gemini": "gemini-2.5-flash" },
    param_override: { cachedContent: "cachedContents/abc" },
  });
  await fx.channel({
    type: 33,
    key: `${creds.accessKeyId}|${creds.secretAccessKey}|${creds.region}`,
    base_url: bedrock.url,
    models: ["po-bedrock"],
    model_mapping: { "po-bedrock": "claude-3-5-sonnet-20240620" },
    param_override: { top_k: 7 },
  });
  const user = await fx.user(100_000_000);
  key = (await fx.token(user.id)).key;
});
afterAll(async () => {
  for (const m of [claude, gemini, bedrock]) m.stop();
  await fx.close();
});

const claudeBody = (model: string, more: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 16,
  temperature: 1,
  messages: [{ role: "user", content: "hi" }],
  ...more,
});
const geminiBody = { contents: [{ role: "user", parts: [{ text: "hi" }] }], generationConfig: { temperature: 1 } };
const gemini_ = (model: string, method = "generateContent") =>
  fx.ctx.app.handle(
    new Request(
      `http://localhost/v1beta/models/${model}:${method}${method === "streamGenerateContent" ? "?alt=sse" : ""}`,
      {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": key },
        body: JSON.stringify(geminiBody),
      },
    ),
  );
const lastOpenAI = () => fx.mock.seen.at(-1)!.body;

describe("param_override reaches the upstream body", () => {
  test("a Claude-native call bridged to an OpenAI channel (non-stream and stream)", async () => {
    const res = await fx.call("/v1/messages", key, claudeBody("po-openai"));
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).type).toBe("message");
    expect(lastOpenAI()).toMatchObject({ model: "po-openai", temperature: 0.1, user: "x" });
    expect(lastOpenAI().messages).toEqual([{ role: "user", content: "hi" }]);

    const stream = await fx.call("/v1/messages", key, claudeBody("po-openai", { stream: true }));
    expect(await stream.text()).toContain("message_stop");
    expect(lastOpenAI()).toMatchObject({
      temperature: 0.1,
      user: "x",
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  test("a Gemini-native call bridged to an OpenAI channel", async () => {
    const res = await gemini_("po-openai");
    expect(res.status).toBe(200);
    expect(lastOpenAI()).toMatchObject({ model: "po-openai", temperature: 0.1, user: "x" });
    const stream = await gemini_("po-openai", "streamGenerateContent");
    expect(stream.status).toBe(200);
    await stream.text();
    expect(lastOpenAI()).toMatchObject({ temperature: 0.1, user: "x", stream: true });
  });

  test("an OpenAI call to an OpenAI channel (as before) and none on a channel without overrides", async () => {
    await fx.call("/v1/chat/completions", key, {
      model: "po-openai",
      temperature: 1,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(lastOpenAI()).toMatchObject({ temperature: 0.1, user: "x" });
    await fx.call("/v1/chat/completions", key, {
      model: "po-plain",
      temperature: 1,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(lastOpenAI().temperature).toBe(1);
    expect(lastOpenAI()).not.toHaveProperty("user");
  });

  test("an OpenAI call converted for a Claude channel: the override lands in the Claude body", async () => {
    const res = await fx.call("/v1/chat/completions", key, {
      model: "po-claude",
      temperature: 1,
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(200);
    // top_k has no OpenAI counterpart: merged before the conversion it would have been dropped.
    expect(claude.last().body).toMatchObject({ model: "claude-sonnet-4-20250514", top_k: 5, temperature: 0.3 });
  });

  test("a Claude-native call passed through to a Claude channel", async () => {
    const res = await fx.call("/v1/messages", key, claudeBody("po-claude"));
    expect(res.status).toBe(200);
    expect(claude.last().body).toMatchObject({ model: "claude-sonnet-4-20250514", top_k: 5, temperature: 0.3 });
  });

  test("Gemini channel: the override lands in the generateContent body", async () => {
    const res = await fx.call("/v1/chat/completions", key, {
      model: "po-gemini",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(200);
    expect(gemini.last().body).toMatchObject({ cachedContent: "cachedContents/abc" });
    expect(gemini.last().body.contents).toBeArray();
  });

  test("Bedrock channel: the override is in the signed body (the mock checks the SigV4 signature)", async () => {
    const res = await fx.call("/v1/messages", key, claudeBody("po-bedrock"));
    expect(res.status).toBe(200);
    expect(bedrock.last().body).toMatchObject({ top_k: 7, anthropic_version: "bedrock-2023-05-31" });
    const viaOpenAI = await fx.call("/v1/chat/completions", key, {
      model: "po-bedrock",
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(viaOpenAI.status).toBe(200);
    expect(bedrock.last().body).toMatchObject({ top_k: 7 });
  });

  test("a channel test sends the override in the upstream's format too", async () => {
    const result = await testChannel(fx.ctx.deps, claudeId, { model: "po-claude" });
    expect(result.success).toBe(true);
    expect(claude.last().body).toMatchObject({ model: "claude-sonnet-4-20250514", top_k: 5, temperature: 0.3 });
  });
});
