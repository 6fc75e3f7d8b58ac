// Relay errors keep their machine-readable code in OpenAI format (clients branch on error.code), while
// Claude- and Gemini-format routes answer in their own error shapes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";

let fx: RelayFixture;
let key: string;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  await fx.channel({ base_url: fx.mock.url, models: ["error-codes-served"] });
  const user = await fx.user(10_000_000);
  key = (await fx.token(user.id)).key;
});
afterAll(() => fx.close());

const chat = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }] });

describe("OpenAI-format relay errors carry their code", () => {
  test("an unknown key is invalid_api_key", async () => {
    const res = await fx.call("/v1/chat/completions", "sk-doesnotexist", chat("error-codes-served"));
    expect(res.status).toBe(401);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({
      message: "invalid API key",
      type: "invalid_request_error",
      param: null,
      code: "invalid_api_key",
    });
  });

  test("a model no channel serves is model_not_found", async () => {
    const res = await fx.call("/v1/chat/completions", key, chat("error-codes-nobody-serves-this"));
    expect(res.status).toBe(404);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe("model_not_found");
    expect(body.error.message).toContain("error-codes-nobody-serves-this");
  });

  test("an unknown model on /v1/models/{model} is model_not_found", async () => {
    const res = await fx.ctx.app.handle(
      new Request("http://localhost/v1/models/error-codes-missing", { headers: { authorization: `Bearer ${key}` } }),
    );
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe("model_not_found");
  });

  test("a user without quota is insufficient_user_quota; an unpriced model is model_price_error", async () => {
    await fx.channel({ base_url: fx.mock.url, models: ["gpt-4o-mini"] });
    const broke = await fx.user(0);
    const brokeKey = (await fx.token(broke.id, { unlimited_quota: true })).key;
    const poor = await fx.call("/v1/chat/completions", brokeKey, chat("gpt-4o-mini"));
    expect(poor.status).toBe(403);
    expect(((await poor.json()) as any).error.code).toBe("insufficient_user_quota");
    const unpriced = await fx.call("/v1/chat/completions", key, chat("error-codes-served"));
    expect(unpriced.status).toBe(400);
    expect(((await unpriced.json()) as any).error.code).toBe("model_price_error");
  });

  test("errors without a code of their own still answer code null", async () => {
    const res = await fx.ctx.app.handle(
      new Request("http://localhost/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: "{not json",
      }),
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toHaveProperty("code", null);
  });
});

describe("native formats keep their own error shapes", () => {
  test("Claude /v1/messages: {type:error, error:{type,message}}", async () => {
    const res = await fx.call("/v1/messages", "sk-doesnotexist", {
      model: "error-codes-served",
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(401);
    const body = (await res.json()) as any;
    expect(body).toEqual({ type: "error", error: { type: "authentication_error", message: "invalid API key" } });
  });

  test("Gemini /v1beta: {error:{code:<status>, message, status}}", async () => {
    const res = await fx.ctx.app.handle(
      new Request("http://localhost/v1beta/models/error-codes-served:generateContent?key=sk-doesnotexist", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
      }),
    );
    expect(res.status).toBe(401);
    const body = (await res.json()) as any;
    expect(body).toEqual({ error: { code: 401, message: "invalid API key", status: "UNAUTHENTICATED" } });
  });

  test("Claude and Gemini formats also report an unknown model in their own shape", async () => {
    const claude = await fx.call("/v1/messages", key, {
      model: "error-codes-nobody",
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(claude.status).toBe(404);
    expect(((await claude.json()) as any).error.type).toBe("not_found_error");
    const gemini = await fx.ctx.app.handle(
      new Request(`http://localhost/v1beta/models/error-codes-nobody:generateContent`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": key },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
      }),
    );
    expect(gemini.status).toBe(404);
    expect(((await gemini.json()) as any).error).toMatchObject({ code: 404, status: "NOT_FOUND" });
  });
});
