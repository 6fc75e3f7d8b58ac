// OpenAI-format /v1/embeddings on a Gemini channel: batchEmbedContents returns no usage, so the
// gateway counts the input, reports it to the client and bills the same count.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { relayFixture, logsOf, userRow, type RelayFixture } from "../relay/fixtures.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { countTokens } from "../../server/relay/tokenizer.ts";

let fx: RelayFixture;
let gemini: MockUpstream;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  gemini = startGeminiUpstream();
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: ["text-embedding-004"] });
  await fx.option("ModelRatio", JSON.stringify({ "text-embedding-004": 2 }));
});

afterAll(async () => {
  gemini.stop();
  await fx.close();
});

test("the client sees the counted prompt tokens, and the log and bill use the same count", async () => {
  const user = await fx.user(10_000_000);
  const token = await fx.token(user.id);
  const input = ["Gemini embeddings report no usage of their own.", "So the gateway counts every input text."];
  const res = await fx.call("/v1/embeddings", token.key, { model: "text-embedding-004", input });
  expect(res.status).toBe(200);
  const body: any = await res.json();
  expect(body.data).toHaveLength(2);
  const n = (await countTokens(input[0]!)) + (await countTokens(input[1]!));
  expect(body.usage).toEqual({ prompt_tokens: n, total_tokens: n });
  await fx.flush();
  const [log] = await logsOf(fx, user.id);
  expect([log.prompt_tokens, log.completion_tokens]).toEqual([n, 0]);
  expect(log.quota).toBe(2 * n);
  expect((await userRow(fx, user.id)).quota).toBe(10_000_000 - log.quota);
});
