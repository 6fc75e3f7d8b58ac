// A stream the upstream cuts (connection reset, or a clean close before the answer finished) must not look
// complete: the client's stream ends with an error event in its own format — which the official SDKs raise —
// and the log marks the call as interrupted; what was generated is still billed. A non-stream answer whose
// JSON is cut is a 502 and costs nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { relayFixture, logsOf, userRow, type RelayFixture } from "./fixtures.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";

let fx: RelayFixture;
let claude: ReturnType<typeof startClaudeUpstream>;
let server: ReturnType<typeof Bun.serve>;
let base: string;
const openaiModels = ["oc-cut", "oc-eof", "oc-badjson", "oc-ok"];

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream({ textDeltas: ["One", " two", " three", " four"] });
  await fx.channel({ base_url: fx.mock.url, models: openaiModels });
  await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: ["claude-z-cut"] });
  const all = [...openaiModels, "claude-z-cut"];
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(all.map((m) => [m, 1]))));
  await fx.option("CompletionRatio", JSON.stringify(Object.fromEntries(all.map((m) => [m, 1]))));
  await fx.option("LogErrorEnabled", "true");
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(async () => {
  server.stop(true);
  claude.stop();
  await fx.close();
});

async function freshUser() {
  const user = await fx.user(10_000_000);
  const token = await fx.token(user.id, { remain_quota: 10_000_000 });
  return { user, token };
}

function events(text: string): { event?: string; data: string }[] {
  return text
    .split("\n\n")
    .filter((b) => b.trim())
    .map((b) => {
      const event = /^event: (.*)$/m.exec(b)?.[1];
      const data = b
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trim())
        .join("\n");
      return { event, data };
    });
}

async function interruptedLog(userId: number) {
  await fx.flush();
  const [log] = await logsOf(fx, userId);
  expect(log).toBeDefined();
  expect(JSON.parse(log.other ?? "{}").stream_interrupted).toBe(true);
  expect(log.quota).toBeGreaterThan(0);
  expect((await userRow(fx, userId)).quota).toBe(10_000_000 - log.quota);
  return log;
}

describe("a stream the upstream cuts", () => {
  for (const model of ["oc-cut", "oc-eof"])
    test(`OpenAI client, ${model === "oc-cut" ? "connection reset" : "clean close without finish or [DONE]"}: ends with an error event, no [DONE]`, async () => {
      const { user, token } = await freshUser();
      const res = await fx.call("/v1/chat/completions", token.key, {
        model,
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      });
      expect(res.status).toBe(200);
      const evs = events(await res.text());
      expect(evs.some((e) => e.data === "[DONE]")).toBe(false);
      const last = JSON.parse(evs.at(-1)!.data);
      expect(last.error.code).toBe("stream_interrupted");
      expect(evs.some((e) => e.data.includes("Hello"))).toBe(true);
      await interruptedLog(user.id);
    });

  test("the openai SDK raises instead of returning a truncated answer", async () => {
    const { token } = await freshUser();
    const client = new OpenAI({
      apiKey: token.key,
      baseURL: `${base}/v1`,
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
    });
    const stream = await client.chat.completions.create({
      model: "oc-cut",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    let text = "";
    await expect(
      (async () => {
        for await (const c of stream) text += c.choices[0]?.delta?.content ?? "";
      })(),
    ).rejects.toThrow(/interrupted|broke off/);
    expect(text).toContain("Hello");
  });

  test("Claude client on an OpenAI channel: an error event, no message_stop; the anthropic SDK raises", async () => {
    const { user, token } = await freshUser();
    const res = await fx.call("/v1/messages", token.key, {
      model: "oc-eof",
      stream: true,
      max_tokens: 50,
      messages: [{ role: "user", content: "hi" }],
    });
    const evs = events(await res.text());
    expect(evs.some((e) => e.event === "message_stop")).toBe(false);
    expect(evs.at(-1)!.event).toBe("error");
    expect(JSON.parse(evs.at(-1)!.data).type).toBe("error");
    await interruptedLog(user.id);
    const client = new Anthropic({ apiKey: token.key, baseURL: base, maxRetries: 0, dangerouslyAllowBrowser: true });
    const stream = client.messages.stream({
      model: "oc-cut",
      max_tokens: 50,
      messages: [{ role: "user", content: "hi" }],
    });
    await expect(stream.finalMessage()).rejects.toThrow(/interrupted|broke off/);
  });

  test("Gemini client on an OpenAI channel: an error chunk with a code; the genai SDK raises", async () => {
    const { user, token } = await freshUser();
    const res = await fx.call("/v1beta/models/oc-cut:streamGenerateContent?alt=sse", token.key, {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
    });
    const evs = events(await res.text());
    const last = JSON.parse(evs.at(-1)!.data);
    expect(last.error.code).toBe(502);
    expect(evs.some((e) => e.data.includes('"finishReason"'))).toBe(false);
    await interruptedLog(user.id);
    const ai = new GoogleGenAI({ apiKey: token.key, httpOptions: { baseUrl: base } });
    await expect(
      (async () => {
        for await (const _ of await ai.models.generateContentStream({ model: "oc-eof", contents: "hi" })) void _;
      })(),
    ).rejects.toThrow(/interrupted|broke off/);
  });

  test("a Claude upstream cut before message_stop, OpenAI client: error event, billed for the text", async () => {
    const { user, token } = await freshUser();
    const res = await fx.call("/v1/chat/completions", token.key, {
      model: "claude-z-cut",
      stream: true,
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    const evs = events(await res.text());
    expect(evs.some((e) => e.data === "[DONE]")).toBe(false);
    expect(JSON.parse(evs.at(-1)!.data).error.code).toBe("stream_interrupted");
    await interruptedLog(user.id);
  });

  test("a complete stream is not marked interrupted", async () => {
    const { user, token } = await freshUser();
    const res = await fx.call("/v1/chat/completions", token.key, {
      model: "oc-ok",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    const evs = events(await res.text());
    expect(evs.at(-1)!.data).toBe("[DONE]");
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(JSON.parse(log.other ?? "{}").stream_interrupted).toBeUndefined();
  });
});

describe("a malformed upstream answer", () => {
  for (const [path, body] of [
    ["/v1/chat/completions", { model: "oc-badjson", messages: [{ role: "user", content: "hi" }] }],
    ["/v1/messages", { model: "oc-badjson", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }],
    ["/v1beta/models/oc-badjson:generateContent", { contents: [{ role: "user", parts: [{ text: "hi" }] }] }],
  ] as const)
    test(`${path}: 502 in the caller's format, nothing billed, logged as an error`, async () => {
      const { user, token } = await freshUser();
      const res = await fx.call(path, token.key, body);
      expect(res.status).toBe(502);
      const json: any = await res.json();
      const message = json.error?.message ?? "";
      expect(message).toMatch(/malformed|unreadable/);
      await fx.flush();
      expect((await userRow(fx, user.id)).quota).toBe(10_000_000);
      const logs = await logsOf(fx, user.id);
      expect(logs.every((l) => l.quota === 0)).toBe(true);
      expect(logs.some((l) => l.type === 5)).toBe(true);
    });
});
