// Claude streams that end before message_delta (the upstream breaks off, or the client goes away)
// carry only message_start's placeholder output_tokens. The gateway bills what was generated,
// thinking included, counted from the text.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { relayFixture, logsOf, userRow, type RelayFixture } from "../relay/fixtures.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { countTokens } from "../../server/relay/tokenizer.ts";

const thinkingDeltas = Array.from({ length: 30 }, (_, i) => ` thought${i} leads on`);
const textDeltas = Array.from({ length: 40 }, (_, i) => ` word${i}`);
const models = ["claude-x-cut", "claude-x-slow"];

let fx: RelayFixture;
let claude: ReturnType<typeof startClaudeUpstream>;
let server: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream({ thinkingDeltas, textDeltas, slowMs: 25 });
  await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models });
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
  await fx.option("CompletionRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
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

test("an upstream cut before message_delta bills the counted text and thinking (OpenAI client)", async () => {
  const { user, token } = await freshUser();
  const res = await fx.call("/v1/chat/completions", token.key, {
    model: "claude-x-cut",
    stream: true,
    thinking: { type: "enabled", budget_tokens: 1024 },
    max_tokens: 4096,
    messages: [{ role: "user", content: "think, then count" }],
  });
  expect(res.status).toBe(200);
  const text = await res.text().catch(() => "");
  expect(text).toContain("word39");
  await fx.flush();
  const [log] = await logsOf(fx, user.id);
  expect(log).toBeDefined();
  const counted = await countTokens(thinkingDeltas.join("") + textDeltas.join(""));
  expect(log.completion_tokens).toBe(counted);
  // Input side as message_start reported it: 12 plain + 3 cache reads + 2 cache writes.
  expect(log.prompt_tokens).toBe(17);
  expect(log.quota).toBeGreaterThanOrEqual(counted);
  expect((await userRow(fx, user.id)).quota).toBe(10_000_000 - log.quota);
});

test("a client that goes away mid-stream pays for what had been generated (Claude client)", async () => {
  const { user, token } = await freshUser();
  const abort = new AbortController();
  const res = await fetch(`http://127.0.0.1:${server.port}/v1/messages`, {
    method: "POST",
    signal: abort.signal,
    headers: { "x-api-key": token.key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({
      model: "claude-x-slow",
      stream: true,
      max_tokens: 4096,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: "think, then count" }],
    }),
  });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let received = "";
  while (!received.includes('word4"')) received += dec.decode((await reader.read()).value!, { stream: true });
  abort.abort();
  await reader.cancel().catch(() => {});
  for (let i = 0; i < 100 && claude.cancelled === 0; i++) await Bun.sleep(20);
  expect(claude.cancelled).toBe(1);
  await Bun.sleep(50);
  await fx.flush();
  const [log] = await logsOf(fx, user.id);
  expect(log).toBeDefined();
  const seen = await countTokens(thinkingDeltas.join("") + textDeltas.slice(0, 5).join(""));
  const full = await countTokens(thinkingDeltas.join("") + textDeltas.join(""));
  expect(log.completion_tokens).toBeGreaterThanOrEqual(seen);
  expect(log.completion_tokens).toBeLessThan(full);
  expect(log.prompt_tokens).toBe(17);
  expect((await userRow(fx, user.id)).quota).toBe(10_000_000 - log.quota);
}, 20_000);
