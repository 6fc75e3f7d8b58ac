// OpenAI's /v1/embeddings takes four input forms: a string, an array of strings, one token array
// (number[]) and an array of token arrays (number[][]). On a Gemini channel every form gives one
// embedding per text or per token array, as OpenAI would; token arrays (tiktoken and LangChain send
// them for OpenAI's embedding models, so in cl100k_base) are decoded to the text Gemini needs and
// billed by their length. Anything else is refused with a 400 in OpenAI format before the upstream.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { Tiktoken } from "js-tiktoken/lite";
import { relayFixture, logsOf, userRow, type RelayFixture } from "../relay/fixtures.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { countTokens } from "../../server/relay/tokenizer.ts";

const MODEL = "text-embedding-004";
const cl100k = new Tiktoken(require("js-tiktoken/ranks/cl100k_base"));
const first = "The quick brown fox jumps over the lazy dog.";
const second = "Token arrays are decoded before they reach Gemini.";

let fx: RelayFixture;
let gemini: MockUpstream;
let server: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  gemini = startGeminiUpstream();
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: [MODEL] });
  await fx.option("ModelRatio", JSON.stringify({ [MODEL]: 2 }));
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
});

afterAll(async () => {
  server.stop(true);
  gemini.stop();
  await fx.close();
});

async function freshUser() {
  const user = await fx.user(10_000_000);
  const token = await fx.token(user.id, { remain_quota: 10_000_000 });
  return { user, token };
}

/** Embeds `input` and returns the texts Gemini was asked for, the client's body and the consume log. */
async function embed(input: unknown) {
  const { user, token } = await freshUser();
  const before = gemini.requests.length;
  const res = await fx.call("/v1/embeddings", token.key, { model: MODEL, input });
  expect(res.status).toBe(200);
  const body: any = await res.json();
  expect(gemini.requests.length).toBe(before + 1);
  const texts = gemini.last().body.requests.map((r: any) => r.content.parts.map((p: any) => p.text).join(""));
  await fx.flush();
  const [log] = await logsOf(fx, user.id);
  expect(log).toBeDefined();
  expect(log.quota).toBe(2 * log.prompt_tokens);
  expect((await userRow(fx, user.id)).quota).toBe(10_000_000 - log.quota);
  return { texts, body, log };
}

describe("the four input forms", () => {
  test("a string is one text", async () => {
    const { texts, body, log } = await embed(first);
    expect(texts).toEqual([first]);
    expect(body.data).toHaveLength(1);
    expect(log.prompt_tokens).toBe(await countTokens(first));
  });

  test("an array of strings is one text each", async () => {
    const { texts, body } = await embed([first, second]);
    expect(texts).toEqual([first, second]);
    expect(body.data.map((d: any) => d.index)).toEqual([0, 1]);
  });

  test("one token array is one text, decoded, billed by its length", async () => {
    const ids = cl100k.encode(first);
    const { texts, body, log } = await embed(ids);
    expect(texts).toEqual([first]);
    expect(body.data).toHaveLength(1);
    expect(body.usage).toEqual({ prompt_tokens: ids.length, total_tokens: ids.length });
    expect(log.prompt_tokens).toBe(ids.length);
  });

  test("an array of token arrays is one text per array", async () => {
    const ids = [cl100k.encode(first), cl100k.encode(second)];
    const { texts, body, log } = await embed(ids);
    expect(texts).toEqual([first, second]);
    expect(body.data.map((d: any) => d.index)).toEqual([0, 1]);
    expect(log.prompt_tokens).toBe(ids[0]!.length + ids[1]!.length);
  });
});

describe("inputs OpenAI would refuse", () => {
  const bad: [string, unknown][] = [
    ["missing", undefined],
    ["an empty string", ""],
    ["an empty array", []],
    ["an empty token array", [[]]],
    ["an object", { text: first }],
    ["strings mixed with numbers", [first, 1]],
    ["token arrays mixed with strings", [[1, 2], "x"]],
    ["a fractional token", [1.5]],
    ["a negative token", [-1]],
    ["a token outside the vocabulary", [[15339, 999_999_999]]],
    ["a nested array too deep", [[[1]]]],
    ["an empty string among strings", [first, ""]],
  ];
  for (const [name, input] of bad) {
    test(`${name}: 400 in OpenAI format, nothing sent upstream or charged`, async () => {
      const { user, token } = await freshUser();
      const before = gemini.requests.length;
      const res = await fx.call("/v1/embeddings", token.key, { model: MODEL, input });
      expect(res.status).toBe(400);
      const body: any = await res.json();
      expect(body.error.type).toBe("invalid_request_error");
      expect(body.error.message).toContain("input");
      expect(gemini.requests.length).toBe(before);
      await fx.flush();
      expect((await userRow(fx, user.id)).quota).toBe(10_000_000);
      expect(await logsOf(fx, user.id)).toHaveLength(0);
    });
  }
});

describe("the official openai client", () => {
  test("its default base64 encoding decodes to Gemini's values", async () => {
    const { token } = await freshUser();
    const client = new OpenAI({
      apiKey: token.key,
      baseURL: `http://127.0.0.1:${server.port}/v1`,
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
    });
    const res = await client.embeddings.create({ model: MODEL, input: [first, second] });
    expect(res.data).toHaveLength(2);
    expect(res.data[1]!.embedding).toHaveLength(3);
    expect(res.data[1]!.embedding[0]).toBeCloseTo(0.2, 6);
    expect(res.data[0]!.embedding[2]).toBeCloseTo(0.3, 6);
    const floats = await client.embeddings.create({ model: MODEL, input: first, encoding_format: "float" });
    expect(floats.data[0]!.embedding).toEqual([0.1, 0.2, 0.3]);
  });

  test("token arrays through the client", async () => {
    const { token } = await freshUser();
    const client = new OpenAI({
      apiKey: token.key,
      baseURL: `http://127.0.0.1:${server.port}/v1`,
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
    });
    const res = await client.embeddings.create({
      model: MODEL,
      input: [cl100k.encode(first)],
      encoding_format: "float",
    });
    expect(res.data).toHaveLength(1);
    expect(gemini.last().body.requests[0].content.parts[0].text).toBe(first);
  });
});
