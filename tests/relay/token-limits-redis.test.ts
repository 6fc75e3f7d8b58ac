// Per-token limits across instances: two gateways over one database (PostgreSQL when PG_DSN is set) and one Redis
// (REDIS_CONN_STRING) share a token's requests per minute, tokens per minute, calls in flight and its budget —
// the budget exact under concurrent calls spread over both. A slot whose instance died (its lease no longer
// renewed) frees itself. Without Redis each instance counts in its own memory, which the last test states.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, logsOf, tokenRow, type RelayFixture } from "./fixtures.ts";
import { tempDatabase, type TempDb } from "../helpers/db.ts";
import { createApp, type App } from "../../server/app.ts";
import { openDatabase } from "../../db/index.ts";
import { RedisCache, type Cache } from "../../server/infra/cache.ts";
import type { AppDeps } from "../../server/deps.ts";
import { limitsRuntime, takeTokenLimits, tokenLimits, LEASE_MS } from "../../server/modules/token/limits.ts";
import { setLimits, status } from "./token-limits-fixtures.ts";

const REDIS = process.env.REDIS_CONN_STRING;
const KIND = process.env.PG_DSN ? "postgres" : "sqlite";
const chat = (extra: Record<string, unknown> = {}) => ({
  model: "tlr-fixed",
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});

interface Instance {
  app: App;
  deps: AppDeps;
  call(key: string, body: unknown): Promise<Response>;
  close(): Promise<void>;
}

/** A second gateway: its own database connection, its own Redis connection on the same keys, its own name. */
async function secondInstance(fx: RelayFixture, tmp: TempDb): Promise<Instance> {
  const a = fx.ctx.deps;
  const cache: Cache = a.cache instanceof RedisCache ? new RedisCache(REDIS!, a.cache.prefix) : a.cache;
  if (cache instanceof RedisCache) await cache.connect();
  const db =
    KIND === "sqlite"
      ? a.db
      : await openDatabase({ kind: tmp.kind, url: tmp.url, sqlitePath: tmp.sqlitePath, poolSize: 20 });
  const deps: AppDeps = {
    ...a,
    db,
    cache,
    config: { ...a.config, instanceId: `${a.config.instanceId}-b` },
    shutdownHooks: [],
  };
  const app = createApp(deps);
  return {
    app,
    deps,
    call: (key, body) =>
      app.handle(
        new Request("http://localhost/v1/chat/completions", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      ),
    async close() {
      for (const hook of deps.shutdownHooks) await hook();
      if (cache !== a.cache) await cache.close();
      if (db !== a.db) await db.destroy();
    },
  };
}

if (REDIS) {
  describe(`token limits shared by two instances on Redis and ${KIND}`, () => {
    let tmp: TempDb;
    let fx: RelayFixture;
    let b: Instance;
    let userId: number;
    const a = (key: string, body: unknown) => fx.call("/v1/chat/completions", key, body);
    beforeAll(async () => {
      tmp = await tempDatabase(KIND);
      fx = await relayFixture(KIND, {}, {}, true, KIND === "sqlite" ? undefined : tmp);
      await fx.option("ModelPrice", JSON.stringify({ "tlr-fixed": 0.002 }));
      await fx.channel({ base_url: fx.mock.url, models: ["tlr-fixed"] });
      userId = (await fx.user(100_000_000)).id;
      b = await secondInstance(fx, tmp);
    });
    afterAll(async () => {
      await b.close();
      await fx.close();
      if (KIND !== "sqlite") await tmp.drop();
    });
    const token = async (fields: Record<string, number | string>) => {
      const t = await fx.token(userId, { unlimited_quota: true });
      await setLimits(fx, t.id, fields);
      return t;
    };

    /** Both instances' clocks at the same moment, early in a minute (counters are per clock minute). */
    const atMinute = (ms: number) => {
      for (const deps of [fx.ctx.deps, b.deps]) limitsRuntime(deps).clock = () => ms;
    };
    const realClock = () => {
      for (const deps of [fx.ctx.deps, b.deps]) limitsRuntime(deps).clock = () => Date.now();
    };

    test("requests per minute are counted once for both instances", async () => {
      atMinute(Date.UTC(2026, 10, 24, 10, 0, 20));
      const t = await token({ rpm_limit: 4 });
      const got = [];
      for (let i = 0; i < 6; i++) got.push(await status(await (i % 2 ? b.call(t.key, chat()) : a(t.key, chat()))));
      expect(got).toEqual([200, 200, 200, 200, 429, 429]);
      const res = await b.call(t.key, chat());
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("40");
      realClock();
    });

    test("tokens per minute settled on one instance refuse on the other", async () => {
      atMinute(Date.UTC(2026, 10, 24, 10, 5, 0));
      const t = await token({ tpm_limit: 30 });
      expect(await status(await a(t.key, chat()))).toBe(200);
      await fx.flush();
      const res = await b.call(t.key, chat());
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("60");
      realClock();
    });

    test("a call in flight on one instance takes the token's only slot on the other", async () => {
      const t = await token({ concurrency_limit: 1 });
      const streaming = await a(t.key, chat({ stream: true }));
      expect(streaming.status).toBe(200);
      const refused = await b.call(t.key, chat());
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      await streaming.text();
      await fx.flush();
      expect(await status(await b.call(t.key, chat()))).toBe(200);
    });

    test("a slot held by an instance that died is free once its lease runs out", async () => {
      const t = await token({ concurrency_limit: 1 });
      const row = await tokenRow(fx, t.id);
      await takeTokenLimits(fx.ctx.deps, t.id, tokenLimits(row)!, 0);
      limitsRuntime(fx.ctx.deps).live.clear(); // instance A is gone: nobody renews its lease
      expect((await b.call(t.key, chat())).status).toBe(429);
      const rt = limitsRuntime(b.deps);
      rt.clock = () => Date.now() + LEASE_MS + 1000;
      try {
        expect(await status(await b.call(t.key, chat()))).toBe(200);
      } finally {
        rt.clock = () => Date.now();
      }
    });

    test("the budget is exact under 160 concurrent calls spread over both instances", async () => {
      const K = 17;
      const t = await token({ budget_quota: K * 1000, budget_period: "monthly" });
      const results = await Promise.all(
        Array.from({ length: 160 }, (_, i) =>
          (i % 2 ? b.call(t.key, chat({ stream: i % 4 === 1 })) : a(t.key, chat())).then(status),
        ),
      );
      expect(results.filter((s) => s === 200).length).toBe(K);
      expect(results.every((s) => s === 200 || s === 429)).toBe(true);
      await fx.flush();
      const { flushRelayWrites } = await import("../../server/relay/state.ts");
      await flushRelayWrites(b.deps);
      const row = await tokenRow(fx, t.id);
      const logs = (await logsOf(fx, userId)).filter((l) => l.token_id === t.id);
      expect(logs.length).toBe(K);
      expect(Number(row.budget_used)).toBe(K * 1000);
      expect(logs.reduce((s, l) => s + l.quota, 0)).toBe(K * 1000);
      // The token list, read on either instance, shows the same usage.
      expect(Number(row.budget_reset_at)).toBeGreaterThan(Date.now() / 1000);
    }, 60_000);
  });
} else {
  describe("token limits without Redis", () => {
    let fx: RelayFixture;
    beforeAll(async () => {
      fx = await relayFixture("sqlite");
      await fx.option("ModelPrice", JSON.stringify({ "tlr-fixed": 0.002 }));
      await fx.channel({ base_url: fx.mock.url, models: ["tlr-fixed"] });
    });
    afterAll(() => fx.close());

    test("each instance counts requests per minute in its own memory; the budget, in the database, is shared", async () => {
      const user = await fx.user(100_000_000);
      const t = await fx.token(user.id, { unlimited_quota: true });
      await setLimits(fx, t.id, { rpm_limit: 1, budget_quota: 2000, budget_period: "daily" });
      const b = await secondInstance(fx, null as any);
      try {
        expect(await status(await fx.call("/v1/chat/completions", t.key, chat()))).toBe(200);
        expect(await status(await b.call(t.key, chat()))).toBe(200);
        expect(await status(await fx.call("/v1/chat/completions", t.key, chat()))).toBe(429);
        await fx.flush();
        expect(Number((await tokenRow(fx, t.id)).budget_used)).toBe(2000);
      } finally {
        await b.close();
      }
    });
  });
}
