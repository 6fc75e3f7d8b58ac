// Non-stream answers of non-OpenAI upstreams that carry no usage (Gemini without usageMetadata, Claude,
// Bedrock and Claude-on-Vertex without usage): the gateway counts the prompt and the generated text in
// the upstream's own wire format, whatever format the client speaks, and bills both.
import { describe, expect, test } from "bun:test";
import { callAsNewUser, NEW_USER_QUOTA, ratios, sharedRelayFixture, userRow } from "../relay/fixtures.ts";
import { GEMINI_TEXT, startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { CLAUDE_TEXT, startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import { makeServiceAccount, startVertexUpstream } from "../mocks/vertex-upstream.ts";
import { countPromptTokens, countTokens } from "../../server/relay/tokenizer.ts";

const creds = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" };
const models = {
  gemini: "gemini-x-nousage",
  claude: "claude-x-nousage",
  bedrock: "claude-b-nousage",
  vertexClaude: "claude-v-nousage",
  vertexGemini: "gemini-v-nousage",
};
const question = "Say hello, in a few words, to everyone reading this test.";
const tool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather",
    parameters: { type: "object", properties: { city: { type: "string" } } },
  },
};

const relay = sharedRelayFixture(async (fx) => {
  const gemini = startGeminiUpstream();
  const claude = startClaudeUpstream();
  const bedrock = startBedrockUpstream(creds);
  const vertex = startVertexUpstream();
  const sa = await makeServiceAccount(vertex.url + "/token");
  vertex.trust(sa);
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: [models.gemini] });
  await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: [models.claude] });
  await fx.channel({
    type: 33,
    key: `${creds.accessKeyId}|${creds.secretAccessKey}|${creds.region}`,
    base_url: bedrock.url,
    models: [models.bedrock],
  });
  await fx.channel({
    type: 41,
    key: JSON.stringify(sa.json),
    base_url: vertex.url,
    models: [models.vertexClaude, models.vertexGemini],
  });
  await ratios(fx, Object.values(models), 1, 2);
  return { gemini, claude, bedrock, vertex };
});

/** Calls once with a fresh user and returns the consume log after checking the quota it charged. */
async function billed(path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const { status, user, logs } = await callAsNewUser(relay.fx, path, body, headers);
  expect(status).toBe(200);
  expect(logs).toHaveLength(1);
  const log = logs[0]!;
  // Ratio 1, completion ratio 2: quota = prompt + 2 × completion.
  expect(log.quota).toBe(log.prompt_tokens + 2 * log.completion_tokens);
  expect((await userRow(relay.fx, user.id)).quota).toBe(NEW_USER_QUOTA - log.quota);
  return log;
}

const openai = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: question }],
  ...extra,
});
const claudeBody = (model: string) => ({ model, max_tokens: 256, messages: [{ role: "user", content: question }] });
const geminiBody = { contents: [{ role: "user", parts: [{ text: question }] }] };

describe("OpenAI clients", () => {
  const cases: [string, string, string][] = [
    ["Gemini", models.gemini, GEMINI_TEXT],
    ["Claude", models.claude, CLAUDE_TEXT],
    ["Bedrock Claude", models.bedrock, CLAUDE_TEXT],
    ["Vertex Claude", models.vertexClaude, CLAUDE_TEXT],
    ["Vertex Gemini", models.vertexGemini, GEMINI_TEXT],
  ];
  for (const [name, model, text] of cases) {
    test(`${name}: the generated text and the prompt are counted and billed`, async () => {
      const log = await billed("/v1/chat/completions", openai(model));
      expect(log.completion_tokens).toBe(await countTokens(text));
      expect(log.prompt_tokens).toBe(await countPromptTokens(openai(model)));
    });
  }

  test("Gemini function calls count as generated text (name and arguments)", async () => {
    const log = await billed("/v1/chat/completions", openai(models.gemini, { tools: [tool] }));
    expect(log.completion_tokens).toBe(await countTokens("get_weather" + JSON.stringify({ city: "Paris" })));
  });

  test("Claude tool calls count as generated text (text, name and input)", async () => {
    const log = await billed("/v1/chat/completions", openai(models.claude, { tools: [tool] }));
    expect(log.completion_tokens).toBe(
      await countTokens("Let me check." + "get_weather" + JSON.stringify({ city: "Paris" })),
    );
  });
});

describe("native clients", () => {
  test("a Gemini client on a Gemini channel", async () => {
    const log = await billed(`/v1beta/models/${models.gemini}:generateContent`, geminiBody);
    expect(log.completion_tokens).toBe(await countTokens(GEMINI_TEXT));
    expect(log.prompt_tokens).toBeGreaterThanOrEqual(await countTokens(question));
  });

  test("a Claude client on a Claude channel", async () => {
    const log = await billed("/v1/messages", claudeBody(models.claude));
    expect(log.completion_tokens).toBe(await countTokens(CLAUDE_TEXT));
    expect(log.prompt_tokens).toBeGreaterThanOrEqual(await countTokens(question));
  });

  test("a Claude client on a Gemini channel (converted through OpenAI)", async () => {
    const log = await billed("/v1/messages", claudeBody(models.gemini));
    expect(log.completion_tokens).toBe(await countTokens(GEMINI_TEXT));
    expect(log.prompt_tokens).toBeGreaterThanOrEqual(await countTokens(question));
  });

  test("a Gemini client on a Claude channel (converted through OpenAI)", async () => {
    const log = await billed(`/v1beta/models/${models.claude}:generateContent`, geminiBody);
    expect(log.completion_tokens).toBe(await countTokens(CLAUDE_TEXT));
    expect(log.prompt_tokens).toBeGreaterThanOrEqual(await countTokens(question));
  });

  test("a Claude client on Vertex Gemini and a Gemini client on Bedrock", async () => {
    expect((await billed("/v1/messages", claudeBody(models.vertexGemini))).completion_tokens).toBe(
      await countTokens(GEMINI_TEXT),
    );
    expect((await billed(`/v1beta/models/${models.bedrock}:generateContent`, geminiBody)).completion_tokens).toBe(
      await countTokens(CLAUDE_TEXT),
    );
  });
});
