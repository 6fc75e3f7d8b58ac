// Cache pub/sub, which carries token and user changes to every instance: delivered to each subscriber
// of the channel (and only that channel) until it unsubscribes. Redis runs when REDIS_CONN_STRING is set.
import { expect, test } from "bun:test";
import { MemoryCache, RedisCache, type Cache } from "../../server/infra/cache.ts";

/** Waits for a delivery: asks again, a bounded number of times, 5 ms apart (the assertions after it decide). */
async function until(cond: () => boolean) {
  for (let i = 0; !cond() && i < 1000; i++) await Bun.sleep(5);
}

const kinds: [string, () => Promise<[Cache, Cache]>][] = [
  [
    "memory",
    async () => {
      const c = new MemoryCache();
      return [c, c];
    },
  ],
];
if (process.env.REDIS_CONN_STRING)
  kinds.push([
    "redis",
    async () => {
      const prefix = `sytest:${Math.random().toString(36).slice(2)}:`;
      const a = new RedisCache(process.env.REDIS_CONN_STRING!, prefix);
      const b = new RedisCache(process.env.REDIS_CONN_STRING!, prefix);
      await a.connect();
      await b.connect();
      return [a, b];
    },
  ]);

for (const [kind, open] of kinds)
  test(`${kind}: a message reaches every subscriber of its channel until it unsubscribes`, async () => {
    const [a, b] = await open();
    try {
      const gotA: string[] = [];
      const gotB: string[] = [];
      const other: string[] = [];
      const offA = await a.subscribe("ch", (m) => gotA.push(m));
      await b.subscribe("ch", (m) => gotB.push(m));
      await b.subscribe("other", (m) => other.push(m));
      await a.publish("ch", "one");
      await until(() => gotA.length === 1 && gotB.length === 1);
      expect([gotA, gotB, other]).toEqual([["one"], ["one"], []]);
      await offA();
      await b.publish("ch", "two");
      await until(() => gotB.length === 2);
      await Bun.sleep(20);
      expect([gotA, gotB]).toEqual([["one"], ["one", "two"]]);
    } finally {
      await a.close();
      if (b !== a) await b.close();
    }
  });
