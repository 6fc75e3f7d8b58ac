// The official @google/genai SDK against the gateway's /v1beta routes on a real port with an sk-
// token: a Gemini channel (pass-through), an OpenAI-format channel and a Claude channel (converted).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GoogleGenAI, FunctionCallingConfigMode, Type } from "@google/genai";
import { relayFixture, logsOf, tokenRow, type RelayFixture } from "../relay/fixtures.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";

let fx: RelayFixture;
let gemini: MockUpstream;
let claude: MockUpstream;
let server: ReturnType<typeof Bun.serve>;
let ai: GoogleGenAI;
let key: string;
let tokenId: number;
let userId: number;
let base: string;

const weatherDecl = {
  name: "get_weather",
  description: "Weather by city",
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ["city"] },
};

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  gemini = startGeminiUpstream();
  claude = startClaudeUpstream();
  const models = ["gemini-2.5-flash", "gemini-alias", "gpt-via-gemini-api", "claude-via-gemini-api"];
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
  await fx.option("CompletionRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 4]))));
  await fx.channel({
    type: 24,
    key: "gemini-key",
    base_url: gemini.url,
    models: ["gemini-2.5-flash", "gemini-alias"],
    model_mapping: { "gemini-alias": "gemini-2.0-flash" },
  });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: ["gpt-via-gemini-api"] });
  await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claude.url,
    models: ["claude-via-gemini-api"],
    model_mapping: { "claude-via-gemini-api": "claude-sonnet-4-20250514" },
  });
  const user = await fx.user(50_000_000);
  userId = user.id;
  const t = await fx.token(user.id);
  key = t.key;
  tokenId = t.id;
  // As the binary listens: the Gemini routes are then served from the native route table (relay/plain-route.ts).
  server = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" }).server!;
  base = `http://127.0.0.1:${server.port}`;
  ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: base } });
});

afterAll(async () => {
  server.stop(true);
  gemini.stop();
  claude.stop();
  await fx.close();
});

describe("Gemini channel (same format)", () => {
  test("generateContent passes the body through to the mapped model", async () => {
    const res = await ai.models.generateContent({
      model: "gemini-alias",
      contents: "Hi",
      config: { temperature: 0.5, systemInstruction: "Be brief." },
    });
    expect(gemini.last().path).toBe("/v1beta/models/gemini-2.0-flash:generateContent");
    expect(gemini.last().headers["x-goog-api-key"]).toBe("gemini-key");
    expect(gemini.last().body.contents).toEqual([{ role: "user", parts: [{ text: "Hi" }] }]);
    expect(gemini.last().body.generationConfig).toEqual({ temperature: 0.5 });
    expect(res.text).toBe("Hello from Gemini.");
    expect(res.usageMetadata?.promptTokenCount).toBe(9);
  });

  test("streamGenerateContent streams SSE chunks", async () => {
    let text = "";
    let last: any;
    for await (const chunk of await ai.models.generateContentStream({ model: "gemini-2.5-flash", contents: "Hi" })) {
      text += chunk.text ?? "";
      last = chunk;
    }
    expect(gemini.last().search).toBe("?alt=sse");
    expect(text).toBe("Hello from Gemini.");
    expect(last.usageMetadata.candidatesTokenCount).toBe(5);
  });

  test("calls are billed from usageMetadata (thoughts count as completion) and logged", async () => {
    await fx.flush();
    const log = (await logsOf(fx, userId)).find((l) => l.model_name === "gemini-alias")!;
    expect([log.prompt_tokens, log.completion_tokens]).toEqual([9, 7]);
    expect(log.quota).toBe(9 + 7 * 4);
    expect((await tokenRow(fx, tokenId)).used_quota).toBeGreaterThan(0);
  });
});

describe("OpenAI-format channel (converted)", () => {
  test("generateContent", async () => {
    const res = await ai.models.generateContent({
      model: "gpt-via-gemini-api",
      contents: "Hi",
      config: { systemInstruction: "sys", maxOutputTokens: 40 },
    });
    const sent = fx.mock.seen.at(-1)!.body;
    expect(sent.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "Hi" },
    ]);
    expect(sent.max_tokens).toBe(40);
    expect(res.text).toBe("Hello world!");
    expect(res.candidates?.[0]?.finishReason).toBe("STOP" as any);
    expect(res.usageMetadata).toMatchObject({ promptTokenCount: 10, candidatesTokenCount: 20, totalTokenCount: 30 });
  });

  test("function calling, and the function response sent back", async () => {
    const res = await ai.models.generateContent({
      model: "gpt-via-gemini-api",
      contents: "Weather?",
      config: {
        tools: [{ functionDeclarations: [weatherDecl] }],
        toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY } },
      },
    });
    expect(fx.mock.seen.at(-1)!.body.tool_choice).toBe("required");
    expect(res.functionCalls).toEqual([{ name: "get_weather", args: { city: "Paris" } }]);
    await ai.models.generateContent({
      model: "gpt-via-gemini-api",
      contents: [
        { role: "user", parts: [{ text: "Weather?" }] },
        { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } } }] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { temp: 18 } } }] },
      ],
    });
    const msgs = fx.mock.seen.at(-1)!.body.messages;
    expect(msgs[1].tool_calls[0].function).toEqual({ name: "get_weather", arguments: '{"city":"Paris"}' });
    expect(msgs[2]).toEqual({
      role: "tool",
      tool_call_id: msgs[1].tool_calls[0].id,
      name: "get_weather",
      content: '{"temp":18}',
    });
  });

  test("stream text ends with finish reason and usage", async () => {
    const chunks: any[] = [];
    for await (const c of await ai.models.generateContentStream({ model: "gpt-via-gemini-api", contents: "Hi" }))
      chunks.push(c);
    expect(chunks.map((c) => c.text ?? "").join("")).toBe("Hello world!");
    expect(chunks.at(-1).candidates[0].finishReason).toBe("STOP");
    expect(chunks.at(-1).usageMetadata).toMatchObject({ promptTokenCount: 10, candidatesTokenCount: 20 });
  });

  test("stream function call arrives whole", async () => {
    const calls: any[] = [];
    for await (const c of await ai.models.generateContentStream({
      model: "gpt-via-gemini-api",
      contents: "Weather?",
      config: { tools: [{ functionDeclarations: [weatherDecl] }] },
    })) {
      calls.push(...(c.functionCalls ?? []));
    }
    expect(calls).toEqual([{ name: "get_weather", args: { city: "Paris" } }]);
  });
});

describe("Claude channel (converted)", () => {
  test("generateContent and stream through a Claude channel", async () => {
    const res = await ai.models.generateContent({ model: "claude-via-gemini-api", contents: "Hi" });
    expect(claude.last().body.model).toBe("claude-sonnet-4-20250514");
    expect(claude.last().body.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
    expect(res.text).toBe("Hello from Claude.");
    let text = "";
    for await (const c of await ai.models.generateContentStream({ model: "claude-via-gemini-api", contents: "Hi" }))
      text += c.text ?? "";
    expect(text).toBe("Hello from Claude.");
  });
});

describe("countTokens", () => {
  test("the SDK's countTokens is answered by the gateway's tokenizer without an upstream call or charge", async () => {
    const calls = gemini.requests.length;
    await fx.flush();
    const before = (await tokenRow(fx, tokenId)).remain_quota;
    const r = await ai.models.countTokens({ model: "gemini-2.5-flash", contents: "Hello there, how are you?" });
    expect(r.totalTokens).toBeGreaterThan(5);
    expect(r.totalTokens).toBeLessThan(20);
    expect(gemini.requests.length).toBe(calls);
    expect((await tokenRow(fx, tokenId)).remain_quota).toBe(before);
  });
});

describe("errors in Gemini's format", () => {
  test("a bad key is a Gemini error body; ?key= works like the header", async () => {
    const res = await fetch(`${base}/v1beta/models/gemini-2.5-flash:generateContent?key=sk-wrong`, {
      method: "POST",
      body: JSON.stringify({ contents: [{ parts: [{ text: "x" }] }] }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: { code: 401, message: "invalid API key", status: "UNAUTHENTICATED" } });
    const ok = await fetch(`${base}/v1beta/models/gemini-2.5-flash:generateContent?key=${key}`, {
      method: "POST",
      body: JSON.stringify({ contents: [{ parts: [{ text: "x" }] }] }),
    });
    expect(ok.status).toBe(200);
  });

  test("bad bodies and unknown methods are refused without calling upstream or charging", async () => {
    // The previous test's call is settled first: its debit landing mid-test is not this test's charge.
    await fx.flush();
    const before = (await tokenRow(fx, tokenId)).remain_quota;
    const calls = gemini.requests.length;
    const empty = await fetch(`${base}/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": key },
      body: JSON.stringify({ contents: [] }),
    });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as any).error.status).toBe("INVALID_ARGUMENT");
    const method = await fetch(`${base}/v1beta/models/gemini-2.5-flash:predictLongRunning`, {
      method: "POST",
      headers: { "x-goog-api-key": key },
      body: "{}",
    });
    expect(method.status).toBe(501);
    expect(((await method.json()) as any).error).toEqual({
      code: 501,
      message: "method predictLongRunning is not supported by this gateway",
      status: "UNIMPLEMENTED",
    });
    const embed = await fetch(`${base}/v1beta/models/gemini-2.5-flash:embedContent`, {
      method: "POST",
      headers: { "x-goog-api-key": key },
      body: "{}",
    });
    expect(embed.status).toBe(400);
    expect(((await embed.json()) as any).error.status).toBe("INVALID_ARGUMENT");
    expect(gemini.requests.length).toBe(calls);
    expect((await tokenRow(fx, tokenId)).remain_quota).toBe(before);
  });

  test("an SDK error carries the gateway's message", async () => {
    const err: any = await ai.models.generateContent({ model: "no-such-model", contents: "x" }).catch((e) => e);
    expect(err.status).toBe(404);
    expect(err.message).toContain("NOT_FOUND");
    expect(err.message).toContain("the model 'no-such-model' does not exist");
  });
});
