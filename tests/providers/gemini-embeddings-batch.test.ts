// Gemini's batchEmbedContents takes at most 100 requests per call (the mock refuses more, like the real
// API). Larger OpenAI embeddings inputs are sent as several upstream calls whose embeddings come back
// in input order with their own index, billed once for the whole input; a failed part fails the call.
import { expect, test } from "bun:test";
import { callAsNewUser, NEW_USER_QUOTA, ratios, sharedRelayFixture, userRow } from "../relay/fixtures.ts";
import { EMBED_BATCH_MAX, startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { countTokensNow } from "../../server/relay/tokenizer.ts";

const model = "text-embedding-004";
const relay = sharedRelayFixture(async (fx) => {
  const gemini = startGeminiUpstream();
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: [model] });
  await ratios(fx, [model], 2);
  return { gemini };
});

const texts = (n: number) => Array.from({ length: n }, (_, i) => `#${i}`);
const sentTexts = (rec: { body: any }) => rec.body.requests.map((r: any) => r.content.parts[0].text);

async function embed(input: unknown) {
  const before = relay.gemini.requests.length;
  const { status, text, user, logs } = await callAsNewUser(relay.fx, "/v1/embeddings", { model, input });
  return { status, body: JSON.parse(text), user, upstream: relay.gemini.requests.slice(before), logs };
}

test("the mock refuses a batch of more than 100, as Gemini does", async () => {
  const requests = texts(EMBED_BATCH_MAX + 1).map((text) => ({
    model: `models/${model}`,
    content: { parts: [{ text }] },
  }));
  const res = await fetch(`${relay.gemini.url}/v1beta/models/${model}:batchEmbedContents`, {
    method: "POST",
    headers: { "x-goog-api-key": "gemini-key", "content-type": "application/json" },
    body: JSON.stringify({ requests }),
  });
  expect(res.status).toBe(400);
});

test("250 inputs go up as batches of 100, 100 and 50 and come back in order, billed once", async () => {
  const input = texts(250);
  const { status, body, user, upstream, logs } = await embed(input);
  expect(status).toBe(200);
  expect(upstream.map((r) => r.body.requests.length)).toEqual([100, 100, 50]);
  expect(upstream.flatMap(sentTexts).sort()).toEqual([...input].sort());
  expect(body.data).toHaveLength(250);
  body.data.forEach((d: any, i: number) => {
    expect(d.index).toBe(i);
    expect(d.embedding[0]).toBe(i);
  });
  const n = input.reduce((sum, t) => sum + countTokensNow(t), 0);
  expect(body.usage).toEqual({ prompt_tokens: n, total_tokens: n });
  expect(logs).toHaveLength(1);
  expect([logs[0]!.prompt_tokens, logs[0]!.quota]).toEqual([n, 2 * n]);
  expect((await userRow(relay.fx, user.id)).quota).toBe(NEW_USER_QUOTA - 2 * n);
});

test("100 inputs are still one call", async () => {
  const { status, body, upstream } = await embed(texts(100));
  expect(status).toBe(200);
  expect(upstream).toHaveLength(1);
  expect(body.data.map((d: any) => d.embedding[0])).toEqual(texts(100).map((_, i) => i));
});

test("token-array inputs are split the same way and billed by their length", async () => {
  const input = Array.from({ length: 150 }, () => [9906, 1917]);
  const { status, body, upstream, logs } = await embed(input);
  expect(status).toBe(200);
  expect(upstream.map((r) => r.body.requests.length)).toEqual([100, 50]);
  expect(body.data.map((d: any) => d.index)).toEqual(input.map((_, i) => i));
  expect(logs[0]!.prompt_tokens).toBe(300);
});

test("a failed batch fails the call: the upstream's error, nothing billed", async () => {
  const input = texts(230);
  input[150] = "#fail";
  const { status, body, user, logs } = await embed(input);
  expect(status).toBe(500);
  expect(body.error.message).toContain("Internal error");
  expect(logs.filter((l) => l.type === 2)).toHaveLength(0);
  expect((await userRow(relay.fx, user.id)).quota).toBe(NEW_USER_QUOTA);
});
