// The response cache (ResponseCacheEnabled): the same request from the same group is answered from the cache
// — the upstream is called once — with x-switchyard-cache: HIT, billed ResponseCacheBillingRatio × the
// original cost, and logged with other.cache_hit. Entries expire after their TTL (per request, per model or
// the default); Cache-Control no-store / no-cache and x-switchyard-cache: force-refresh are obeyed; another
// group never sees them; streams are replayed as SSE (read here by the openai SDK); broken answers are never
// kept. Storage: the database table on SQLite, PostgreSQL and MySQL, and Redis (two instances share hits).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { relayFixture, logsOf, userRow, leaveStreamAt, type RelayFixture } from "./fixtures.ts";
import { storageKinds } from "../helpers/db.ts";
import { responseCacheState } from "../../server/relay/cache/index.ts";
import { pruneResponseCache } from "../../server/jobs/response-cache-cleanup.ts";
import { createApp, type App } from "../../server/app.ts";
import type { AppDeps } from "../../server/deps.ts";
import { RedisCache } from "../../server/infra/cache.ts";
import { relayState } from "../../server/relay/state.ts";

const MODELS = ["rc-a", "rc-b", "rc-c", "rc-cut", "rc-fail-500", "rc-ttl0", "rc-long"];
const QUOTA = 10_000_000;

async function setup(fx: RelayFixture) {
  await fx.channel({ base_url: fx.mock.url, models: MODELS, groups: ["default", "vip"] });
  const each = (v: number) => JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, v])));
  await fx.option("ModelRatio", each(1.5));
  await fx.option("CompletionRatio", each(2));
  await fx.option("GroupRatio", JSON.stringify({ default: 1, vip: 1 }));
  await fx.option("ResponseCacheEnabled", "true");
}

async function caller(fx: RelayFixture, group = "") {
  const user = await fx.user(QUOTA);
  const token = await fx.token(user.id, { remain_quota: QUOTA, group });
  return { user, key: token.key };
}

const upstreamCalls = (fx: RelayFixture) => fx.mock.seen.filter((s) => s.path === "/v1/chat/completions").length;
let n = 0;
/** A chat body no other test sends. */
const chat = (model = "rc-a", extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: `question ${++n} ${Math.random()}` }],
  ...extra,
});

async function send(fx: RelayFixture, key: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fx.call("/v1/chat/completions", key, body, headers);
  return {
    status: res.status,
    cache: res.headers.get("x-switchyard-cache"),
    key: res.headers.get("x-switchyard-cache-key"),
    age: res.headers.get("age"),
    type: res.headers.get("content-type"),
    text: await res.text(),
  };
}

describe("response cache (SQLite, database store)", () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    await setup(fx);
  });
  afterAll(() => fx.close());

  test("a miss calls the upstream; the same request then hits without calling it", async () => {
    const { key } = await caller(fx);
    const body = chat();
    const before = upstreamCalls(fx);
    const first = await send(fx, key, body);
    expect(first.status).toBe(200);
    expect(first.cache).toBe("MISS");
    await fx.flush();
    const second = await send(fx, key, { ...body, user: "someone-else", metadata: { trace: "x" } });
    expect(second.status).toBe(200);
    expect(second.cache).toBe("HIT");
    expect(second.text).toBe(first.text);
    expect(second.type).toContain("application/json");
    expect(second.key).toMatch(/^[0-9a-f]{64}$/);
    expect(second.key).toBe(first.key);
    expect(upstreamCalls(fx) - before).toBe(1);
    // Key order does not matter; a changed parameter is another request.
    const reordered = await send(fx, key, { messages: body.messages, model: body.model });
    expect(reordered.cache).toBe("HIT");
    const other = await send(fx, key, { ...body, temperature: 0.3 });
    expect(other.cache).toBe("MISS");
    expect(upstreamCalls(fx) - before).toBe(2);
  });

  test("entries expire after the default TTL, a model's TTL, or the request's max-age", async () => {
    const st = responseCacheState(fx.ctx.deps);
    let shift = 0;
    st.now = () => Date.now() + shift;
    try {
      await fx.option("ResponseCacheTTLSeconds", "60");
      const { key } = await caller(fx);
      const body = chat();
      const before = upstreamCalls(fx);
      expect((await send(fx, key, body)).cache).toBe("MISS");
      await fx.flush();
      shift = 59_000;
      const aged = await send(fx, key, body);
      expect(aged.cache).toBe("HIT");
      expect(aged.age).toBe("59");
      // max-age: the client accepts answers up to N seconds old.
      expect((await send(fx, key, body, { "cache-control": "max-age=30" })).cache).toBe("MISS");
      await fx.flush();
      shift = 59_000 + 61_000;
      const expired = await send(fx, key, body);
      expect(expired.cache).toBe("MISS");
      expect(upstreamCalls(fx) - before).toBe(3);

      // Per model: rc-long keeps an hour, rc-ttl0 nothing.
      await fx.option("ResponseCacheModelTTL", JSON.stringify({ "rc-long": 3600, "rc-ttl0": 0 }));
      shift = 0;
      const long = chat("rc-long");
      await send(fx, key, long);
      await fx.flush();
      shift = 3000_000;
      expect((await send(fx, key, long)).cache).toBe("HIT");
      shift = 3601_000;
      expect((await send(fx, key, long)).cache).toBe("MISS");
      const never = chat("rc-ttl0");
      await send(fx, key, never);
      await fx.flush();
      expect((await send(fx, key, never)).cache).toBe("MISS");
      const neverStream = await send(fx, key, { ...never, stream: true });
      expect(neverStream.cache).toBe("MISS");
      expect(neverStream.text).toContain("data: [DONE]");

      // x-switchyard-cache-ttl sets this answer's TTL.
      shift = 0;
      const short = chat();
      await send(fx, key, short, { "x-switchyard-cache-ttl": "5" });
      await fx.flush();
      shift = 4_000;
      expect((await send(fx, key, short)).cache).toBe("HIT");
      shift = 6_000;
      expect((await send(fx, key, short)).cache).toBe("MISS");
    } finally {
      st.now = () => Date.now();
      await fx.option("ResponseCacheTTLSeconds", "3600");
      await fx.option("ResponseCacheModelTTL", "{}");
    }
  });

  test("Cache-Control: no-store neither looks up nor keeps; no-cache and force-refresh skip the lookup but keep", async () => {
    const { key } = await caller(fx);
    const body = chat();
    const before = upstreamCalls(fx);
    expect((await send(fx, key, body, { "cache-control": "no-store" })).cache).toBeNull();
    await fx.flush();
    expect((await send(fx, key, body)).cache).toBe("MISS");
    await fx.flush();
    expect((await send(fx, key, body)).cache).toBe("HIT");
    expect((await send(fx, key, body, { "Cache-Control": "no-store" })).cache).toBeNull();
    expect(upstreamCalls(fx) - before).toBe(3);

    // Refreshes: the upstream is called and its (new) answer replaces the stored one.
    fx.mock.options.chunks = ["Fresh", " answer"];
    const refreshed = await send(fx, key, body, { "cache-control": "no-cache" });
    expect(refreshed.cache).toBe("MISS");
    await fx.flush();
    const after = await send(fx, key, body);
    expect(after.cache).toBe("HIT");
    expect(after.text).toBe(refreshed.text);
    expect((await send(fx, key, body, { "x-switchyard-cache": "force-refresh" })).cache).toBe("MISS");
    expect((await send(fx, key, body, { "x-portkey-cache-force-refresh": "true" })).cache).toBe("MISS");
    fx.mock.options.chunks = undefined;
    expect(upstreamCalls(fx) - before).toBe(6);

    // A namespace partitions the cache: another namespace misses, the same one hits.
    const spaced = chat();
    await send(fx, key, spaced, { "x-switchyard-cache-namespace": "team-a" });
    await fx.flush();
    expect((await send(fx, key, spaced)).cache).toBe("MISS");
    expect((await send(fx, key, spaced, { "x-switchyard-cache-namespace": "team-b" })).cache).toBe("MISS");
    await fx.flush();
    expect((await send(fx, key, spaced, { "x-switchyard-cache-namespace": "team-a" })).cache).toBe("HIT");
    expect((await send(fx, key, { ...spaced, cache: { namespace: "team-b" } })).cache).toBe("HIT");

    // LiteLLM's body field is obeyed and never sent upstream.
    const lite = chat();
    await send(fx, key, { ...lite, cache: { "no-store": true } });
    expect(fx.mock.seen.at(-1)!.body.cache).toBeUndefined();
    await fx.flush();
    expect((await send(fx, key, lite)).cache).toBe("MISS");
  });

  test("another group never sees a group's entries", async () => {
    const a = await caller(fx);
    const vip = await caller(fx, "vip");
    const body = chat();
    const before = upstreamCalls(fx);
    await send(fx, a.key, body);
    await fx.flush();
    expect((await send(fx, vip.key, body)).cache).toBe("MISS");
    // Another user of the same group shares it.
    const b = await caller(fx);
    expect((await send(fx, b.key, body)).cache).toBe("HIT");
    expect(upstreamCalls(fx) - before).toBe(2);
  });

  test("ResponseCacheScope user or token: a caller is served only its own earlier answers", async () => {
    const a = await caller(fx);
    const aOther = await fx.token(a.user.id, { remain_quota: QUOTA });
    const b = await caller(fx);
    try {
      await fx.option("ResponseCacheScope", "user");
      const body = chat();
      await send(fx, a.key, body);
      await fx.flush();
      expect((await send(fx, b.key, body)).cache).toBe("MISS");
      expect((await send(fx, aOther.key, body)).cache).toBe("HIT");
      await fx.option("ResponseCacheScope", "token");
      const body2 = chat();
      await send(fx, a.key, body2);
      await fx.flush();
      expect((await send(fx, aOther.key, body2)).cache).toBe("MISS");
      expect((await send(fx, a.key, body2)).cache).toBe("HIT");
    } finally {
      await fx.option("ResponseCacheScope", "group");
    }
  });

  test("the console's playground never uses the cache", async () => {
    const user = await fx.user(QUOTA);
    const body = chat();
    const before = upstreamCalls(fx);
    for (let i = 0; i < 2; i++) {
      const r = await fx.ctx.request("POST", "/pg/chat/completions", { as: user, body });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-switchyard-cache")).toBeNull();
      await fx.flush();
    }
    expect(upstreamCalls(fx) - before).toBe(2);
  });

  for (const ratio of [0, 0.5])
    test(`a hit costs ResponseCacheBillingRatio (${ratio}) × the original cost, logged with cache_hit and the usage`, async () => {
      await fx.option("ResponseCacheBillingRatio", String(ratio));
      try {
        fx.mock.options.usage = { prompt_tokens: 11, completion_tokens: 7 };
        const first = await caller(fx);
        const body = chat();
        await send(fx, first.key, body);
        fx.mock.options.usage = undefined;
        await fx.flush();
        const [orig] = await logsOf(fx, first.user.id);
        // 1.5 × (11 + 7 × 2) = 37.5 → 38
        expect(orig.quota).toBe(38);
        expect(JSON.parse(orig.other ?? "{}").cache_hit).toBeUndefined();

        const { user, key } = await caller(fx);
        expect((await send(fx, key, body)).cache).toBe("HIT");
        await fx.flush();
        const [log] = await logsOf(fx, user.id);
        const expected = Math.round(38 * ratio);
        expect(log.quota).toBe(expected);
        expect(log.prompt_tokens).toBe(11);
        expect(log.completion_tokens).toBe(7);
        expect(log.channel_id).toBe(0);
        const other = JSON.parse(log.other ?? "{}");
        expect(other.cache_hit).toBe(true);
        expect(other.response_cache.billing_ratio).toBe(ratio);
        expect((await userRow(fx, user.id)).quota).toBe(QUOTA - expected);
      } finally {
        await fx.option("ResponseCacheBillingRatio", "0");
      }
    });

  test("a hit is admitted like any call: a token not allowed the model is refused", async () => {
    const { key } = await caller(fx);
    const body = chat();
    await send(fx, key, body);
    await fx.flush();
    const user = await fx.user(QUOTA);
    const limited = await fx.token(user.id, { remain_quota: QUOTA, model_limits: ["rc-b"] });
    const res = await send(fx, limited.key, body);
    expect(res.status).toBe(403);
  });

  test("streams are kept as the frames sent and replayed as SSE (openai SDK); a JSON request does not get them", async () => {
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
    try {
      const { key } = await caller(fx);
      const client = new OpenAI({
        apiKey: key,
        baseURL: `http://127.0.0.1:${server.port}/v1`,
        maxRetries: 0,
        dangerouslyAllowBrowser: true,
      });
      const body = chat("rc-b");
      const before = upstreamCalls(fx);
      const read = async () => {
        const { data, response } = await client.chat.completions
          .create({ ...body, stream: true, stream_options: { include_usage: true } } as any)
          .withResponse();
        let text = "";
        let usage: any = null;
        for await (const c of data as any) {
          text += c.choices[0]?.delta?.content ?? "";
          if (c.usage) usage = c.usage;
        }
        return {
          text,
          usage,
          cache: response.headers.get("x-switchyard-cache"),
          type: response.headers.get("content-type"),
        };
      };
      const first = await read();
      expect(first.cache).toBe("MISS");
      expect(first.text).toBe("Hello world!");
      await fx.flush();
      const second = await read();
      expect(second.cache).toBe("HIT");
      expect(second.type).toContain("text/event-stream");
      expect(second.text).toBe(first.text);
      expect(second.usage).toEqual(first.usage);
      expect(upstreamCalls(fx) - before).toBe(1);
      // The same question without stream is another entry.
      expect((await send(fx, key, body)).cache).toBe("MISS");
      expect(upstreamCalls(fx) - before).toBe(2);
    } finally {
      server.stop(true);
    }
  });

  test("broken answers are never kept: a cut stream, an upstream error", async () => {
    const { key } = await caller(fx);
    const cut = chat("rc-cut", { stream: true });
    const before = upstreamCalls(fx);
    const a = await send(fx, key, cut);
    expect(a.text).toContain("stream_interrupted");
    await fx.flush();
    expect((await send(fx, key, cut)).cache).toBe("MISS");
    const failing = chat("rc-fail-500");
    expect((await send(fx, key, failing)).status).toBeGreaterThanOrEqual(500);
    await fx.flush();
    expect((await send(fx, key, failing)).status).toBeGreaterThanOrEqual(500);
    expect(upstreamCalls(fx) - before).toBeGreaterThanOrEqual(4);
  });

  test("a new ResponseCacheGeneration (the console's Clear the cache) leaves every stored answer unreachable", async () => {
    const { key } = await caller(fx);
    const body = chat();
    await send(fx, key, body);
    await fx.flush();
    expect((await send(fx, key, body)).cache).toBe("HIT");
    await fx.ctx.request("PUT", "/api/option/", {
      as: await fx.ctx.login("root", "rootpass123"),
      body: { key: "ResponseCacheGeneration", value: String(Date.now()) },
    });
    expect((await send(fx, key, body)).cache).toBe("MISS");
    await fx.flush();
    expect((await send(fx, key, body)).cache).toBe("HIT");
  });

  test("options are validated: ratio 0–1, whole seconds, a model → seconds object", async () => {
    const root = await fx.ctx.login("root", "rootpass123");
    const put = async (key: string, value: string) =>
      (await fx.ctx.request("PUT", "/api/option/", { as: root, body: { key, value } })).body;
    expect((await put("ResponseCacheBillingRatio", "1.5")).success).toBe(false);
    expect((await put("ResponseCacheBillingRatio", "-0.1")).success).toBe(false);
    expect((await put("ResponseCacheTTLSeconds", "1.5")).success).toBe(false);
    expect((await put("ResponseCacheMaxEntryBytes", "0")).success).toBe(false);
    const bad = await put("ResponseCacheModelTTL", '{"gpt-4o": -1}');
    expect(bad.success).toBe(false);
    expect(bad.message).toContain("gpt-4o");
    expect((await put("ResponseCacheModelTTL", "[]")).success).toBe(false);
    expect((await put("ResponseCacheScope", "everyone")).success).toBe(false);
    expect((await put("ResponseCacheBillingRatio", "0.25")).success).toBe(true);
    expect((await put("ResponseCacheBillingRatio", "0")).success).toBe(true);
  });

  test("a request whose text exceeds 1 MiB is not cached (its key would hold the event loop too long)", async () => {
    const { key } = await caller(fx);
    const body = chat("rc-a", { messages: [{ role: "user", content: "x".repeat(1024 * 1024 + 1) }] });
    const before = upstreamCalls(fx);
    for (let i = 0; i < 2; i++) {
      const r = await send(fx, key, body);
      expect(r.status).toBe(200);
      expect(r.cache).toBeNull();
      await fx.flush();
    }
    expect(upstreamCalls(fx) - before).toBe(2);
  });

  test("an answer served by a fallback model is not kept for the requested model", async () => {
    await fx.option("ModelFallbacks", JSON.stringify({ "rc-fail-500": ["rc-a"] }));
    try {
      const { key } = await caller(fx);
      const body = chat("rc-fail-500");
      const before = upstreamCalls(fx);
      for (let i = 0; i < 2; i++) {
        const r = await send(fx, key, body);
        expect(r.status).toBe(200);
        expect(r.cache).toBe("MISS");
        await fx.flush();
      }
      // Each call: the failing model, then its fallback.
      expect(upstreamCalls(fx) - before).toBeGreaterThanOrEqual(4);
    } finally {
      await fx.option("ModelFallbacks", "{}");
    }
  });

  test("off: no header, nothing stored, the upstream is called every time", async () => {
    await fx.option("ResponseCacheEnabled", "false");
    try {
      const { key } = await caller(fx);
      const body = chat();
      const before = upstreamCalls(fx);
      expect((await send(fx, key, body)).cache).toBeNull();
      await fx.flush();
      expect((await send(fx, key, body)).cache).toBeNull();
      expect(upstreamCalls(fx) - before).toBe(2);
    } finally {
      await fx.option("ResponseCacheEnabled", "true");
    }
  });
});

describe("database store on every database", () => {
  for (const kind of storageKinds())
    test(`${kind}: a hit comes from the response_cache table; expired rows are pruned`, async () => {
      const fx = await relayFixture(kind);
      try {
        await setup(fx);
        const { key } = await caller(fx);
        const body = chat();
        const before = upstreamCalls(fx);
        expect((await send(fx, key, body)).cache).toBe("MISS");
        await fx.flush();
        const hit = await send(fx, key, body);
        expect(hit.cache).toBe("HIT");
        expect(upstreamCalls(fx) - before).toBe(1);
        // A stored answer larger than MySQL's text (64 KiB) fits too.
        fx.mock.options.chunks = ["x".repeat(100_000)];
        const big = chat();
        const bigFirst = await send(fx, key, big);
        fx.mock.options.chunks = undefined;
        await fx.flush();
        const bigHit = await send(fx, key, big);
        expect(bigHit.cache).toBe("HIT");
        expect(bigHit.text).toBe(bigFirst.text);
        const rows = await fx.ctx.deps.db.selectFrom("response_cache").selectAll().execute();
        expect(rows.length).toBe(2);
        const now = Math.floor(Date.now() / 1000);
        expect(await pruneResponseCache(fx.ctx.deps, now)).toBe(0);
        expect(await pruneResponseCache(fx.ctx.deps, now + 3601)).toBe(2);
        expect((await fx.ctx.deps.db.selectFrom("response_cache").selectAll().execute()).length).toBe(0);
        expect((await send(fx, key, body)).cache).toBe("MISS");
      } finally {
        await fx.close();
      }
    }, 30_000);
});

describe.if(!!process.env.REDIS_CONN_STRING)("Redis store", () => {
  let fx: RelayFixture;
  let b: App;
  let bDeps: AppDeps;
  beforeAll(async () => {
    fx = await relayFixture("sqlite", {}, {}, true);
    await setup(fx);
    // A second instance: same database, its own Redis connection to the same keyspace.
    const shared = fx.ctx.deps.cache as RedisCache;
    const cache = new RedisCache(process.env.REDIS_CONN_STRING!, shared.prefix);
    await cache.connect();
    bDeps = { ...fx.ctx.deps, cache, shutdownHooks: [] };
    b = createApp(bDeps);
    await relayState(bDeps).routing.listening;
  });
  afterAll(async () => {
    for (const hook of bDeps.shutdownHooks) await hook();
    await bDeps.cache.close();
    await fx.close();
  });

  test("an answer kept by one instance is a hit on the other; nothing goes to the table", async () => {
    const { key } = await caller(fx);
    const body = chat();
    const before = upstreamCalls(fx);
    expect((await send(fx, key, body)).cache).toBe("MISS");
    await fx.flush();
    const res = await b.handle(
      new Request("http://localhost/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    expect(res.headers.get("x-switchyard-cache")).toBe("HIT");
    await res.text();
    expect(upstreamCalls(fx) - before).toBe(1);
    expect((await fx.ctx.deps.db.selectFrom("response_cache").selectAll().execute()).length).toBe(0);
  });
});

test("a client that leaves mid-stream: the upstream is stopped, what it got is billed, nothing is kept", async () => {
  const chunks = Array.from({ length: 40 }, (_, i) => ` word${i}`);
  const fx = await relayFixture("sqlite", { slowMs: 40, chunks });
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  try {
    await setup(fx);
    await fx.channel({ base_url: fx.mock.url, models: ["rc-slow"] });
    await fx.option("ModelRatio", JSON.stringify({ "rc-slow": 1 }));
    const { user, key } = await caller(fx);
    const body = JSON.stringify({ model: "rc-slow", stream: true, messages: [{ role: "user", content: "count" }] });
    const abort = new AbortController();
    const res = await fetch(`http://127.0.0.1:${app.server!.port}/v1/chat/completions`, {
      method: "POST",
      signal: abort.signal,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body,
    });
    expect(res.headers.get("x-switchyard-cache")).toBe("MISS");
    await leaveStreamAt(fx, res, abort, "word4");
    expect(fx.mock.cancelled).toBe(1);
    await Bun.sleep(50);
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(log.quota).toBeGreaterThan(0);
    expect(log.quota).toBe(log.prompt_tokens + log.completion_tokens);
    expect((await fx.ctx.deps.db.selectFrom("response_cache").selectAll().execute()).length).toBe(0);
  } finally {
    await app.stop(true);
    await fx.close();
  }
}, 20_000);

describe("native client formats", () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    await setup(fx);
  });
  afterAll(() => fx.close());

  const post = async (path: string, key: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fx.ctx.app.handle(
      new Request("http://localhost" + path, {
        method: "POST",
        headers: { "x-api-key": key, "x-goog-api-key": key, "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      }),
    );
    return {
      status: res.status,
      cache: res.headers.get("x-switchyard-cache"),
      type: res.headers.get("content-type"),
      text: await res.text(),
    };
  };

  test("Claude /v1/messages, JSON and stream, each replayed in Claude's shape", async () => {
    const { key } = await caller(fx);
    const body = { model: "rc-c", max_tokens: 50, messages: [{ role: "user", content: `claude ${Math.random()}` }] };
    const before = upstreamCalls(fx);
    const json1 = await post("/v1/messages", key, body);
    expect(json1.status).toBe(200);
    expect(json1.cache).toBe("MISS");
    await fx.flush();
    const json2 = await post("/v1/messages", key, body);
    expect(json2.cache).toBe("HIT");
    expect(JSON.parse(json2.text)).toEqual(JSON.parse(json1.text));
    expect(JSON.parse(json2.text).type).toBe("message");
    const s1 = await post("/v1/messages", key, { ...body, stream: true });
    expect(s1.cache).toBe("MISS");
    await fx.flush();
    const s2 = await post("/v1/messages", key, { ...body, stream: true });
    expect(s2.cache).toBe("HIT");
    expect(s2.type).toContain("text/event-stream");
    expect(s2.text).toBe(s1.text);
    expect(s2.text).toContain("event: message_stop");
    expect(upstreamCalls(fx) - before).toBe(2);
  });

  test("Gemini generateContent and streamGenerateContent?alt=sse; the same question on the OpenAI route is another entry", async () => {
    const { key } = await caller(fx);
    const text = `gemini ${Math.random()}`;
    const body = { contents: [{ role: "user", parts: [{ text }] }] };
    const before = upstreamCalls(fx);
    const g1 = await post("/v1beta/models/rc-c:generateContent", key, body);
    expect(g1.status).toBe(200);
    await fx.flush();
    const g2 = await post("/v1beta/models/rc-c:generateContent", key, body);
    expect(g2.cache).toBe("HIT");
    expect(g2.text).toBe(g1.text);
    const s1 = await post("/v1beta/models/rc-c:streamGenerateContent?alt=sse", key, body);
    expect(s1.cache).toBe("MISS");
    await fx.flush();
    const s2 = await post("/v1beta/models/rc-c:streamGenerateContent?alt=sse", key, body);
    expect(s2.cache).toBe("HIT");
    expect(s2.text).toBe(s1.text);
    expect((await send(fx, key, { model: "rc-c", messages: [{ role: "user", content: text }] })).cache).toBe("MISS");
    expect(upstreamCalls(fx) - before).toBe(3);
  });
});
