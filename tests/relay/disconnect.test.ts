// A client that disconnects mid-stream: the upstream call is stopped, and the user pays for what had
// been generated up to that moment (counted, since no usage chunk ever arrived).
import { expect, test } from "bun:test";
import { relayFixture, logsOf, userRow, leaveStreamAt } from "./fixtures.ts";
import { countTokens } from "../../server/relay/tokenizer.ts";

test("disconnecting mid-stream stops the upstream and bills what was produced", async () => {
  const chunks = Array.from({ length: 40 }, (_, i) => ` word${i}`);
  const fx = await relayFixture("sqlite", { slowMs: 40, chunks });
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  try {
    await fx.option("ModelRatio", JSON.stringify({ "dc-slow": 1 }));
    await fx.option("CompletionRatio", JSON.stringify({ "dc-slow": 1 }));
    await fx.channel({ base_url: fx.mock.url, models: ["dc-slow"] });
    const user = await fx.user(1_000_000);
    const token = await fx.token(user.id);
    const abort = new AbortController();
    const res = await fetch(`http://127.0.0.1:${app.server!.port}/v1/chat/completions`, {
      method: "POST",
      signal: abort.signal,
      headers: { authorization: `Bearer ${token.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "dc-slow",
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "count" }],
      }),
    });
    expect(res.status).toBe(200);
    // The gateway notices, stops the upstream, and settles.
    await leaveStreamAt(fx, res, abort, "word4");
    expect(fx.mock.cancelled).toBe(1);
    await Bun.sleep(50);
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(log).toBeDefined();
    const full = await countTokens(chunks.join(""));
    expect(log.completion_tokens).toBeGreaterThanOrEqual(await countTokens(" word0 word1 word2 word3 word4"));
    expect(log.completion_tokens).toBeLessThan(full);
    expect(log.quota).toBe(log.prompt_tokens + log.completion_tokens);
    expect((await userRow(fx, user.id)).quota).toBe(1_000_000 - log.quota);
  } finally {
    await app.stop(true);
    await fx.close();
  }
}, 20_000);

test("a client that leaves a JSON call still waiting for its upstream: the upstream request is stopped, nothing is billed", async () => {
  // The gateway listens for its client only once a call has waited a while (exchange.ts LISTEN_AFTER_MS),
  // then notices a client already gone at once.
  const fx = await relayFixture("sqlite", { slowMs: 2500 });
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  try {
    await fx.option("ModelRatio", JSON.stringify({ "dc-json-slow": 1 }));
    await fx.channel({ base_url: fx.mock.url, models: ["dc-json-slow"] });
    const user = await fx.user(1_000_000);
    const token = await fx.token(user.id);
    const abort = new AbortController();
    const call = fetch(`http://127.0.0.1:${app.server!.port}/v1/chat/completions`, {
      method: "POST",
      signal: abort.signal,
      headers: { authorization: `Bearer ${token.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "dc-json-slow", messages: [{ role: "user", content: "take your time" }] }),
    }).catch((e) => e);
    await Bun.sleep(200);
    abort.abort();
    expect(await call).toBeInstanceOf(Error);
    for (let i = 0; i < 200 && fx.mock.abandoned === 0; i++) await Bun.sleep(20);
    expect(fx.mock.abandoned).toBe(1);
    await fx.flush();
    expect(await logsOf(fx, user.id)).toHaveLength(0);
    expect((await userRow(fx, user.id)).quota).toBe(1_000_000);
  } finally {
    await app.stop(true);
    await fx.close();
  }
}, 20_000);

test("a RELAY_TIMEOUT longer than the listening delay still ends the wait for a slow upstream (504, nothing billed)", async () => {
  const fx = await relayFixture("sqlite", { slowMs: 3000 }, { relayTimeoutMs: 1300 });
  try {
    await fx.option("ModelRatio", JSON.stringify({ "dc-timeout-slow": 1 }));
    await fx.channel({ base_url: fx.mock.url, models: ["dc-timeout-slow"] });
    const user = await fx.user(1_000_000);
    const token = await fx.token(user.id);
    const r = await fx.call("/v1/chat/completions", token.key, {
      model: "dc-timeout-slow",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(r.status).toBe(504);
    await fx.flush();
    expect((await userRow(fx, user.id)).quota).toBe(1_000_000);
  } finally {
    await fx.close();
  }
}, 20_000);
