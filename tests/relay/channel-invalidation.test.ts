// The relay keeps its routing table (enabled channels × abilities) in memory for a few seconds. A channel
// change — status, priority (abilities), deletion, an automatic disable — must reach it at once: on the
// instance that made the change before the reply goes out, and on every other instance sharing the cache
// through the cache's pub/sub (Redis with REDIS_CONN_STRING, in-process otherwise), never after the TTL.
// Two channels serve one model: "x" (priority 10, preferred) and "y" (priority 0); the mock upstream tells
// which one a call went to by the key it was sent. Instance B is a second app over the same database and
// the same cache (its own Redis connection, same keyspace). Instance C sits on a cache of its own (another
// deployment): it is not told, which shows that the announcements travel through the cache alone.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { ROLE } from "../../server/catalogue/index.ts";
import type { Session } from "../helpers/app.ts";
import type { AppDeps } from "../../server/deps.ts";
import { createApp, type App } from "../../server/app.ts";
import { MemoryCache, RedisCache, type Cache } from "../../server/infra/cache.ts";
import { relayState } from "../../server/relay/state.ts";

const MODEL = "route-m";
const REDIS = !!process.env.REDIS_CONN_STRING;
let fx: RelayFixture;
let admin: Session;
let key: string;
let x: number;
let a: App;
let b: App;
let bDeps: AppDeps;
let c: App;
let cDeps: AppDeps;

async function instance(cache: Cache): Promise<{ app: App; deps: AppDeps }> {
  const deps: AppDeps = { ...fx.ctx.deps, cache, shutdownHooks: [] };
  const app = createApp(deps);
  await relayState(deps).routing.listening;
  return { app, deps };
}

beforeAll(async () => {
  fx = await relayFixture("sqlite", {}, {}, true);
  await fx.option("ModelRatio", JSON.stringify({ [MODEL]: 1 }));
  admin = await fx.user(0, { role: ROLE.admin });
  const user = await fx.user(1_000_000_000_000);
  key = (await fx.token(user.id, { remain_quota: 1_000_000_000_000 })).key;
  a = fx.ctx.app;
  await relayState(fx.ctx.deps).routing.listening;
  const shared = fx.ctx.deps.cache;
  const cache: Cache =
    shared instanceof RedisCache ? new RedisCache(process.env.REDIS_CONN_STRING!, shared.prefix) : shared;
  if (cache instanceof RedisCache) await cache.connect();
  ({ app: b, deps: bDeps } = await instance(cache));
  ({ app: c, deps: cDeps } = await instance(new MemoryCache()));
});

afterAll(async () => {
  for (const deps of [bDeps, cDeps]) {
    for (const hook of deps.shutdownHooks) await hook();
    if (deps.cache !== fx.ctx.deps.cache) await deps.cache.close();
  }
  await fx.close();
});

beforeEach(async () => {
  await fx.ctx.deps.db.deleteFrom("abilities").execute();
  await fx.ctx.deps.db.deleteFrom("channels").execute();
  x = await fx.channel({ name: "x", key: "sk-x", base_url: fx.mock.url, models: [MODEL], priority: 10 });
  await fx.channel({ name: "y", key: "sk-y", base_url: fx.mock.url, models: [MODEL], priority: 0 });
  for (const deps of [bDeps, cDeps]) relayState(deps).routing.clear();
  // Every instance holds a table in which "x" serves the model.
  for (const app of [a, b, c]) expect(await servedBy(app)).toBe("x");
  // From here on the clock stands still, so no table can reach its TTL: whatever changes an instance's routing
  // is an announcement.
  const frozen = realNow();
  Date.now = () => frozen;
});

const realNow = Date.now;
afterEach(() => {
  Date.now = realNow;
});

/** Which channel answered one chat call through `app`. */
async function servedBy(app: App): Promise<string> {
  const res = await app.handle(
    new Request("http://localhost/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 5 }),
    }),
  );
  expect(res.status).toBe(200);
  await res.text();
  return fx.mock.seen.at(-1)!.authorization!.replace("Bearer sk-", "");
}

async function api(method: string, path: string, body?: unknown) {
  const r = await fx.ctx.request(method, path, { as: admin, body });
  expect(r.body.success).toBe(true);
  return r.body;
}

/** B's routing after an announcement: at once in memory (delivered before the change's reply); Redis delivers
 * asynchronously, so B is asked again until it has heard (the clock is stopped: its TTL cannot do it instead). */
async function servedByBOnceHeard(expected: string): Promise<string> {
  let served = await servedBy(b);
  for (let i = 0; REDIS && served !== expected && i < 500; i++) served = await Bun.sleep(10).then(() => servedBy(b));
  return served;
}

/** The changing instance routes on fresh data at once, B as soon as the announcement reaches it. */
async function everywhere(expected: string) {
  expect(await servedBy(a)).toBe(expected);
  expect(await servedByBOnceHeard(expected)).toBe(expected);
  // C shares the database but not the cache: no announcement reaches it, and its table is still the old one.
  expect(await servedBy(c)).toBe("x");
}

describe("relay routing cache invalidation across instances", () => {
  test(`the cache is ${REDIS ? "Redis" : "in memory"}`, () => {
    expect(fx.ctx.deps.cache.kind).toBe(REDIS ? "redis" : "memory");
  });

  test("disabling a channel on A: B stops routing to it at once", async () => {
    await api("PUT", "/api/channel/", { id: x, status: 2 });
    await everywhere("y");
  });

  test("enabling it again: B routes to it again at once", async () => {
    await api("PUT", "/api/channel/", { id: x, status: 2 });
    await everywhere("y");
    await api("PUT", "/api/channel/", { id: x, status: 1 });
    expect(await servedBy(a)).toBe("x");
    expect(await servedByBOnceHeard("x")).toBe("x");
  });

  test("lowering its priority (the abilities change)", async () => {
    await api("PUT", "/api/channel/", { id: x, priority: -5 });
    await everywhere("y");
  });

  test("deleting it", async () => {
    await api("DELETE", `/api/channel/${x}/`);
    await everywhere("y");
  });

  test("disabling the channels of its tag", async () => {
    await api("POST", "/api/channel/batch/tag", { ids: [x], tag: "tx" });
    await api("POST", "/api/channel/tag/disabled", { tag: "tx" });
    await everywhere("y");
  });

  test("automatic disabling: a test of the channel on A that fails authentication", async () => {
    await fx.option("AutomaticDisableChannelEnabled", "true");
    try {
      // The mock answers 401 for models named "-fail-401".
      const r = await fx.ctx.request("GET", `/api/channel/test/${x}?model=${MODEL}-fail-401`, { as: admin });
      expect(r.body.success).toBe(false);
      const row = await fx.ctx.deps.db
        .selectFrom("channels")
        .select("status")
        .where("id", "=", x)
        .executeTakeFirstOrThrow();
      expect(row.status).toBe(3);
      await everywhere("y");
    } finally {
      await fx.option("AutomaticDisableChannelEnabled", "false");
    }
  });
});
