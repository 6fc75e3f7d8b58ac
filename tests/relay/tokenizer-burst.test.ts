// A burst of counts (a crowd of clients leaving their streams at once: each cut stream counts its prompt and
// its text) is counted in the counting worker, never by loading the rank tables on the event loop (100-250 ms
// of a stalled loop). Run in a child process: this file's own process may have loaded the tables already.
import { expect, test } from "bun:test";
import { join } from "node:path";

const TOKENIZER = join(import.meta.dir, "../../server/relay/tokenizer.ts");

/** A fresh-process script's set-up: a gateway fixture on SQLite (`fx`), the tokenizer (`t`), the mock upstreams'
 * starters, and a funded user with an unlimited token (`user`, `key`); then `body`. */
const withGateway = (body: string) => `
  const { relayFixture, ratios, logsOf } = await import(${JSON.stringify(join(import.meta.dir, "fixtures.ts"))});
  const { startClaudeUpstream, CLAUDE_USAGE } = await import(${JSON.stringify(join(import.meta.dir, "../mocks/claude-upstream.ts"))});
  const { startGeminiUpstream } = await import(${JSON.stringify(join(import.meta.dir, "../mocks/gemini-upstream.ts"))});
  const t = await import(${JSON.stringify(TOKENIZER)});
  const fx = await relayFixture("sqlite");
  const user = await fx.user(1e9);
  const key = (await fx.token(user.id, { unlimited_quota: true })).key;
  ${body}
`;

/** Runs a script in a fresh process (no rank tables loaded yet) and answers the JSON its last line prints. */
async function runFresh(script: string): Promise<any> {
  const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  expect(await proc.exited).toBe(0);
  return JSON.parse(out.trim().split("\n").pop()!);
}

test("300 counts at once are all exact, and the event loop never loads the tables for them", async () => {
  const script = `
    const t = await import(${JSON.stringify(TOKENIZER)});
    const texts = Array.from({ length: 300 }, (_, i) => "a client left its stream number " + i + " after these words");
    const counts = await Promise.all(texts.map((x) => t.countTokens(x)));
    const loaded = t.o200kLoaded();
    const exact = texts.map((x) => t.countTextsNow([x]));
    console.log(JSON.stringify({ loaded, same: counts.every((n, i) => n === exact[i]), n: counts.length }));
  `;
  expect(await runFresh(script)).toEqual({ loaded: false, same: true, n: 300 });
}, 60_000);

test("an answer without usage shows and bills the worker's count; the event loop never loads the tables for it", async () => {
  // A Claude client on an OpenAI channel whose answer has no usage: the gateway writes the usage it bills.
  const script = withGateway(`
    await ratios(fx, ["plain-nousage"], 1, 1);
    await fx.channel({ base_url: fx.mock.url, models: ["plain-nousage"] });
    const res = await fx.call("/v1/messages", key, { model: "plain-nousage", max_tokens: 64, messages: [{ role: "user", content: "count these words for me, please" }] });
    const body = await res.json();
    const loaded = t.o200kLoaded();
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    await fx.close();
    console.log(JSON.stringify({ status: res.status, loaded, shown: body.usage, billed: { input_tokens: log.prompt_tokens, output_tokens: log.completion_tokens } }));
  `);
  const r = await runFresh(script);
  expect(r.status).toBe(200);
  expect(r.loaded).toBe(false);
  expect(r.shown.output_tokens).toBeGreaterThan(0);
  expect({ input_tokens: r.shown.input_tokens, output_tokens: r.shown.output_tokens }).toEqual(r.billed);
}, 60_000);

test("a Claude stream cut before its output count bills the text counted in the worker; the event loop never loads the tables", async () => {
  const script = withGateway(`
    const textDeltas = Array.from({ length: 40 }, (_, i) => " word" + i);
    const claude = startClaudeUpstream({ textDeltas });
    await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: ["claude-x-cut"] });
    await fx.option("ModelRatio", JSON.stringify({ "claude-x-cut": 1 }));
    const res = await fx.call("/v1/chat/completions", key, { model: "claude-x-cut", stream: true, max_tokens: 1000, messages: [{ role: "user", content: "count" }] });
    await res.text().catch(() => "");
    await fx.flush();
    const loaded = t.o200kLoaded();
    const [log] = await logsOf(fx, user.id);
    claude.stop();
    await fx.close();
    console.log(JSON.stringify({ loaded, billed: log.completion_tokens, counted: t.countTextsNow([textDeltas.join("")]) }));
  `);
  const r = await runFresh(script);
  expect(r.loaded).toBe(false);
  expect(r.billed).toBe(r.counted);
}, 60_000);

test("Gemini embeddings are counted in the worker while the upstream answers; the event loop never loads the tables", async () => {
  const script = withGateway(`
    const gemini = startGeminiUpstream();
    await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: ["text-embedding-004"] });
    await fx.option("ModelRatio", JSON.stringify({ "text-embedding-004": 1 }));
    const input = ["The quick brown fox jumps over the lazy dog.", "Counted off the event loop."];
    const res = await fx.call("/v1/embeddings", key, { model: "text-embedding-004", input });
    const body = await res.json();
    const loaded = t.o200kLoaded();
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    gemini.stop();
    await fx.close();
    console.log(JSON.stringify({ status: res.status, loaded, shown: body.usage.prompt_tokens, billed: log.prompt_tokens, counted: t.countTextsNow(input) }));
  `);
  const r = await runFresh(script);
  expect(r.status).toBe(200);
  expect(r.loaded).toBe(false);
  expect(r.shown).toBe(r.counted);
  expect(r.billed).toBe(r.counted);
}, 60_000);

test("a Claude answer without its output count bills the text counted in the worker; the event loop never loads the tables", async () => {
  const script = withGateway(`
    const claude = startClaudeUpstream();
    await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: ["claude-x-nooutputcount"] });
    await fx.option("ModelRatio", JSON.stringify({ "claude-x-nooutputcount": 1 }));
    const res = await fx.call("/v1/messages", key, { model: "claude-x-nooutputcount", max_tokens: 64, messages: [{ role: "user", content: "say something" }] });
    const body = await res.json();
    const loaded = t.o200kLoaded();
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    claude.stop();
    await fx.close();
    const text = body.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    console.log(JSON.stringify({ status: res.status, loaded, billed: [log.prompt_tokens, log.completion_tokens], expected: [CLAUDE_USAGE.input_tokens, t.countTextsNow([text])] }));
  `);
  const r = await runFresh(script);
  expect(r.status).toBe(200);
  expect(r.loaded).toBe(false);
  expect(r.billed).toEqual(r.expected);
  expect(r.billed[1]).toBeGreaterThan(0);
}, 60_000);
