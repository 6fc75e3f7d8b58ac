// Options reach every instance through the same announcements as token and channel changes: a write on
// instance A is re-read by instance B (its own option store over the same database) as soon as B hears of it,
// not after SYNC_FREQUENCY (the test contexts run with SYNC_FREQUENCY=0: no periodic re-read at all).
// Over SQLite, and PostgreSQL/MySQL when PG_DSN/MYSQL_DSN are set. The cache is Redis when REDIS_CONN_STRING is set (B then has a Redis connection of its own), in-process
// otherwise. Instance C has a cache of its own (another deployment over the same database): it is not
// told, which shows that the news travels through the cache alone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { createApp, type App } from "../../server/app.ts";
import type { AppDeps } from "../../server/deps.ts";
import { MemoryCache, RedisCache, type Cache } from "../../server/infra/cache.ts";
import { OptionStore } from "../../server/modules/option/store.ts";
import { followOptionChanges } from "../../server/modules/option/events.ts";
import { ROLE } from "../../server/catalogue/index.ts";
import { storageKinds } from "../helpers/db.ts";

const REDIS = !!process.env.REDIS_CONN_STRING;
let ctx: TestContext;
let root: Session;
let b: { app: App; deps: AppDeps };
let c: { app: App; deps: AppDeps };

async function instance(cache: Cache): Promise<{ app: App; deps: AppDeps }> {
  const options = new OptionStore(ctx.deps.db);
  await options.load();
  const deps: AppDeps = { ...ctx.deps, options, cache, shutdownHooks: [] };
  const app = createApp(deps);
  await followOptionChanges(deps).ready;
  return { app, deps };
}

async function put(key: string, value: string) {
  const r = await ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });
  expect(r.body).toMatchObject({ success: true });
}

const get = async (app: App, path: string) =>
  (await (await app.handle(new Request("http://localhost" + path))).json()) as any;

/** Asks `read` until it gives `expected` (a bounded number of times, 5 ms apart). With no periodic re-read in
 * the test contexts, only an announcement can bring a new value. */
async function heard(read: () => unknown, expected: unknown): Promise<void> {
  let value = await read();
  for (let i = 0; value !== expected && i < 1000; i++) value = await Bun.sleep(5).then(read);
  expect(value).toBe(expected);
}

for (const kind of storageKinds()) {
  describe(`option changes reach every instance at once [${kind}]`, () => {
    beforeAll(async () => {
      ctx = await testContext({ kind, redis: true });
      root = await ctx.user(ROLE.root);
      await followOptionChanges(ctx.deps).ready;
      const shared = ctx.deps.cache;
      const cache: Cache =
        shared instanceof RedisCache ? new RedisCache(process.env.REDIS_CONN_STRING!, shared.prefix) : shared;
      if (cache instanceof RedisCache) await cache.connect();
      b = await instance(cache);
      c = await instance(new MemoryCache());
    });

    afterAll(async () => {
      for (const i of [b, c]) {
        for (const hook of i.deps.shutdownHooks) await hook();
        if (i.deps.cache !== ctx.deps.cache) await i.deps.cache.close();
      }
      await ctx.close();
    });

    test(`the cache is ${REDIS ? "Redis" : "in memory"}`, () => {
      expect(ctx.deps.cache.kind).toBe(REDIS ? "redis" : "memory");
    });

    test("a site text saved on A is served by B once it hears the announcement; C, on another cache, still has the old one", async () => {
      expect((await get(b.app, "/api/notice")).data).toBe("");
      await put("Notice", "maintenance at noon");
      // In memory the announcement is heard before A's reply; B then re-reads the key from the database.
      await heard(async () => (await get(b.app, "/api/notice")).data, "maintenance at noon");
      expect((await get(c.app, "/api/notice")).data).toBe("");
    });

    test("a status field (SystemName) and a relay option (RetryTimes) reach B's store", async () => {
      await put("SystemName", "Gateway Two");
      await put("RetryTimes", "4");
      await heard(async () => (await get(b.app, "/api/status")).data.system_name, "Gateway Two");
      await heard(() => b.deps.options.number("RetryTimes"), 4);
      expect(c.deps.options.number("RetryTimes")).toBe(2);
    });

    test("a burst of writes to one key ends on the last value everywhere", async () => {
      for (let i = 1; i <= 20; i++) await put("TopUpLink", `https://shop.example.com/${i}`);
      await heard(() => b.deps.options.get("TopUpLink"), "https://shop.example.com/20");
      await Bun.sleep(REDIS ? 50 : 5);
      expect(b.deps.options.get("TopUpLink")).toBe("https://shop.example.com/20");
      expect(ctx.deps.options.get("TopUpLink")).toBe("https://shop.example.com/20");
    });

    test("restoring the default ratios is announced too", async () => {
      await put("ModelRatio", JSON.stringify({ "only-model": 3 }));
      await heard(() => b.deps.options.json<Record<string, number>>("ModelRatio", {})["only-model"], 3);
      const r = await ctx.request("POST", "/api/option/rest_model_ratio", { as: root });
      expect(r.body.success).toBe(true);
      await heard(() => b.deps.options.json<Record<string, number>>("ModelRatio", {})["only-model"], undefined);
      expect(Object.keys(b.deps.options.json<Record<string, number>>("ModelRatio", {})).length).toBeGreaterThan(10);
    });

    test("a write on B reaches A the same way", async () => {
      const rb = await b.app.handle(
        new Request("http://localhost/api/option/", {
          method: "PUT",
          headers: { ...root.headers, "content-type": "application/json" },
          body: JSON.stringify({ key: "About", value: "written on B" }),
        }),
      );
      expect(((await rb.json()) as any).success).toBe(true);
      await heard(async () => (await get(ctx.app, "/api/about")).data, "written on B");
    });
  });
}
