// Redis goes away and comes back, through a TCP proxy of the test's own (the shared server is never touched).
// Commands fail at once with CacheUnavailableError instead of waiting, a Redis that stops answering costs one
// command timeout and then the circuit refuses without waiting; counters go on in this process's memory; the
// relay serves tokens from its cache and limited tokens under per-instance counts; management calls go on.
// Once Redis answers again the connections come back, the subscriptions are on the new connection, an
// announcement that could not be published is published, and a listener that may have missed some re-reads.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CacheUnavailableError, RedisCache } from "../../server/infra/cache.ts";
import { notifyTokenChanged, onTokenChanged, type TokenChange } from "../../server/modules/token/events.ts";
import type { AppDeps } from "../../server/deps.ts";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";
import { relayFixture, type RelayFixture } from "../relay/fixtures.ts";
import { setLimits } from "../relay/token-limits-fixtures.ts";

const REDIS = process.env.REDIS_CONN_STRING;
const FAST = { connectMs: 500, commandMs: 300, circuitFailures: 3, circuitOpenMs: 200 };

/** Waits (a bounded number of short pauses) until `ok` holds; false when it never did. */
async function until(ok: () => boolean | Promise<boolean>, tries = 200): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await ok()) return true;
    await Bun.sleep(25);
  }
  return false;
}

const unavailable = (p: Promise<unknown>) =>
  p.then(
    () => "answered",
    (e) => (e instanceof CacheUnavailableError ? "unavailable" : `other: ${e}`),
  );

if (REDIS) {
  const target = new URL(REDIS);
  const viaProxy = (proxy: TcpProxy) => {
    const u = new URL(REDIS);
    u.port = String(proxy.port);
    return u.toString();
  };
  const prefix = () => `sytest:${Math.random().toString(36).slice(2)}:`;

  describe("a Redis outage", () => {
    test("commands fail at once, counters go on locally, the circuit opens and closes; a silent Redis costs one timeout", async () => {
      const proxy = startTcpProxy(target.hostname, Number(target.port || 6379));
      const cache = new RedisCache(viaProxy(proxy), prefix(), FAST);
      try {
        await cache.connect();
        await cache.set("k", "v", 60);
        expect(await cache.get("k")).toBe("v");
        expect(await cache.incr("n", 60)).toBe(1);

        proxy.refuse(true);
        proxy.cut();
        expect(await until(() => unavailable(cache.get("k")).then((r) => r === "unavailable"))).toBe(true);
        expect(await unavailable(cache.setNx("lock", "1", 10))).toBe("unavailable");
        expect(await unavailable(cache.publish("ch", "x"))).toBe("unavailable");
        // Counters from this process's memory while Redis cannot be asked.
        expect(await cache.incr("n", 60)).toBe(1);
        expect(await cache.incr("n", 60)).toBe(2);
        expect(await cache.count("n")).toBe(2);
        expect(cache.available).toBe(false);

        proxy.refuse(false);
        expect(
          await until(() =>
            cache.get("k").then(
              (v) => v === "v",
              () => false,
            ),
          ),
        ).toBe(true);
        expect(cache.available).toBe(true);
        // Redis's own counter again, which the outage did not touch.
        expect(await cache.incr("n", 60)).toBe(2);

        // Connected and answering nothing: each command waits its bound, then the circuit refuses at once.
        proxy.hang(true);
        const results = [];
        for (let i = 0; i < FAST.circuitFailures; i++) results.push(await unavailable(cache.get("k")));
        expect(results).toEqual(Array(FAST.circuitFailures).fill("unavailable"));
        expect(cache.available).toBe(false);
        expect(await unavailable(cache.get("k"))).toBe("unavailable");
        proxy.hang(false);
        expect(
          await until(() =>
            cache.get("k").then(
              (v) => v === "v",
              () => false,
            ),
          ),
        ).toBe(true);
      } finally {
        await cache.close();
        proxy.stop();
      }
    });

    test("subscriptions come back on the new connection; an unsent announcement is sent; listeners re-read what they missed", async () => {
      const pa = startTcpProxy(target.hostname, Number(target.port || 6379));
      const pb = startTcpProxy(target.hostname, Number(target.port || 6379));
      const p = prefix();
      const a = new RedisCache(viaProxy(pa), p, FAST);
      const b = new RedisCache(viaProxy(pb), p, FAST);
      // The announcer needs only the cache of each instance.
      const depsA = { cache: a } as unknown as AppDeps;
      const depsB = { cache: b } as unknown as AppDeps;
      try {
        await a.connect();
        await b.connect();
        const heard: TokenChange[] = [];
        const sub = onTokenChanged(depsB, (c) => heard.push(c));
        await sub.ready;
        await notifyTokenChanged(depsA, { key: "before" });
        expect(await until(() => heard.length === 1)).toBe(true);

        for (const px of [pa, pb]) {
          px.refuse(true);
          px.cut();
        }
        // Made while neither instance can reach Redis: this instance's own listeners hear it at once; the
        // other instance gets it once Redis is back.
        await notifyTokenChanged(depsA, { key: "during" });
        for (const px of [pa, pb]) px.refuse(false);

        expect(await until(() => heard.some((c) => "key" in c && c.key === "during"))).toBe(true);
        // B lost its subscription meanwhile: its listener was told to re-read everything.
        expect(heard).toContainEqual({ all: true });
        await notifyTokenChanged(depsA, { key: "after" });
        expect(await until(() => heard.some((c) => "key" in c && c.key === "after"))).toBe(true);
        expect(heard.filter((c) => "key" in c).map((c) => (c as { key: string }).key)).toEqual([
          "before",
          "during",
          "after",
        ]);
        await sub.unsubscribe();
      } finally {
        await a.close();
        await b.close();
        pa.stop();
        pb.stop();
      }
    });

    describe("the gateway while Redis is down", () => {
      let proxy: TcpProxy;
      let fx: RelayFixture;
      beforeAll(async () => {
        proxy = startTcpProxy(target.hostname, Number(target.port || 6379));
        const cache = new RedisCache(viaProxy(proxy), prefix(), FAST);
        await cache.connect();
        fx = await relayFixture("sqlite", {}, { rateLimitEnabled: true }, false, undefined, cache);
        await fx.channel({ base_url: fx.mock.url, models: ["gpt-4o-mini"] });
      });
      afterAll(async () => {
        await fx.close();
        proxy.stop();
      });

      test("tokens are checked from the local cache, limited tokens count per instance, the console answers", async () => {
        const user = await fx.user(100_000_000);
        const plain = await fx.token(user.id, { unlimited_quota: true });
        const limited = await fx.token(user.id, { unlimited_quota: true });
        await setLimits(fx, limited.id, { rpm_limit: 3, concurrency_limit: 2 });
        const chat = { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };
        const session = await fx.ctx.user(1);
        expect((await fx.call("/v1/chat/completions", plain.key, chat)).status).toBe(200);

        proxy.refuse(true);
        proxy.cut();
        expect((await fx.call("/v1/chat/completions", plain.key, chat)).status).toBe(200);
        // rpm 3 counted in this process: three pass, the fourth is refused with the usual 429.
        const statuses = [];
        for (let i = 0; i < 4; i++) {
          const res = await fx.call("/v1/chat/completions", limited.key, chat);
          await res.arrayBuffer();
          statuses.push(res.status);
        }
        expect(statuses).toEqual([200, 200, 200, 429]);
        // Management calls: their per-address limit counts here too.
        const self = await fx.ctx.request("GET", "/api/user/self", { as: session });
        expect(self.status).toBe(200);
        expect(self.body.success).toBe(true);
        proxy.refuse(false);
      });
    });
  });
}
