// The prompt of a Gemini-format request (contents[].parts[].text and systemInstruction) is seen by the
// gateway like any other prompt: the sensitive-word check, the pre-consumption estimate, and the
// prompt count when the upstream sends no usageMetadata.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, logsOf, type RelayFixture } from "../relay/fixtures.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { countTokens, estimateTokens, promptText } from "../../server/relay/tokenizer.ts";

const userText = Array.from({ length: 120 }, (_, i) => `line${i}`).join(" ");
const systemText = Array.from({ length: 60 }, (_, i) => `rule${i}`).join(" ");
const body = (text = userText) => ({
  systemInstruction: { parts: [{ text: systemText }] },
  contents: [
    { role: "user", parts: [{ text }] },
    { role: "model", parts: [{ text: "ok" }] },
    { role: "user", parts: [{ text: "go on" }] },
  ],
});
const models = ["gemini-x", "gemini-x-nousage"];

let fx: RelayFixture;
let gemini: MockUpstream;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  gemini = startGeminiUpstream();
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models });
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
  await fx.option("CompletionRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
});

afterAll(async () => {
  gemini.stop();
  await fx.close();
});

test("promptText reads contents parts and the system instruction (either spelling)", () => {
  const text = promptText(body());
  for (const piece of [userText, systemText, "ok", "go on"]) expect(text).toContain(piece);
  expect(promptText({ system_instruction: { parts: [{ text: "snake" }] }, contents: [] })).toContain("snake");
  expect(estimateTokens(text)).toBeGreaterThan(0);
});

describe("sensitive words in native Gemini requests", () => {
  beforeAll(async () => {
    await fx.option("SensitiveWords", "forbidden thing\nbadword");
    await fx.option("CheckSensitiveEnabled", "true");
    await fx.option("CheckSensitiveOnPromptEnabled", "true");
  });
  afterAll(() => fx.option("CheckSensitiveEnabled", "false"));

  for (const action of ["generateContent", "streamGenerateContent?alt=sse"]) {
    test(`${action}: a sensitive word in contents or the system instruction is refused before the upstream`, async () => {
      const user = await fx.user(10_000_000);
      const token = await fx.token(user.id);
      const before = gemini.requests.length;
      const inContents = await fx.call(`/v1beta/models/gemini-x:${action}`, token.key, body("please say BADWORD"));
      expect(inContents.status).toBe(400);
      const inSystem = await fx.call(`/v1beta/models/gemini-x:${action}`, token.key, {
        ...body(),
        systemInstruction: { parts: [{ text: "a forbidden thing" }] },
      });
      expect(inSystem.status).toBe(400);
      expect(gemini.requests.length).toBe(before);
      const clean = await fx.call(`/v1beta/models/gemini-x:${action}`, token.key, body());
      expect(clean.status).toBe(200);
      expect(await clean.text()).toContain("Hello");
    });
  }
});

describe("counting when the upstream sends no usageMetadata", () => {
  for (const action of ["generateContent", "streamGenerateContent?alt=sse"]) {
    test(`${action}: prompt tokens are counted from contents and the system instruction`, async () => {
      const user = await fx.user(10_000_000);
      const token = await fx.token(user.id);
      const res = await fx.call(`/v1beta/models/gemini-x-nousage:${action}`, token.key, body());
      expect(res.status).toBe(200);
      await res.text();
      await fx.flush();
      const [log] = await logsOf(fx, user.id);
      expect(log).toBeDefined();
      expect(log.prompt_tokens).toBeGreaterThanOrEqual((await countTokens(userText)) + (await countTokens(systemText)));
      if (action.startsWith("stream")) expect(log.completion_tokens).toBe(await countTokens("Hello from Gemini."));
    });
  }

  test("the pre-consumption estimate covers the Gemini prompt: a balance below it is refused up front", async () => {
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id, { remain_quota: 20 });
    // No flat fallback hold: only the prompt estimate can stop the call.
    await fx.option("PreConsumedQuota", "0");
    try {
      const before = gemini.requests.length;
      const res = await fx.call("/v1beta/models/gemini-x:generateContent", token.key, body());
      expect(res.status).toBe(403);
      expect(gemini.requests.length).toBe(before);
    } finally {
      await fx.option("PreConsumedQuota", "500");
    }
  });
});
