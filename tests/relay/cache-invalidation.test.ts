// The relay caches tokens with their user for a few seconds; a management write that takes a token or
// user out of service (ban, delete, disable, quota, expiry) must reach it at once, not after the TTL.
// Every case warms the cache with a served call, makes the change through /api, and expects the very
// next call to be refused. Users are rich enough for SQLite's trusted billing, so no conditional hold in
// the database can refuse the call on the cache's behalf: only the cache's own view decides.
// With REDIS_CONN_STRING set the cache is Redis, and the last case runs two instances over it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { ROLE } from "../../server/catalogue/index.ts";
import type { Session } from "../helpers/app.ts";
import type { AppDeps } from "../../server/deps.ts";
import { createApp } from "../../server/app.ts";
import { MemoryCache, RedisCache, type Cache } from "../../server/infra/cache.ts";

const RICH = 1_000_000_000_000;
const realNow = Date.now;
const MODEL = "inv-m";
let fx: RelayFixture;
let admin: Session;

beforeAll(async () => {
  fx = await relayFixture("sqlite", {}, {}, true);
  await fx.option("ModelRatio", JSON.stringify({ [MODEL]: 1 }));
  await fx.channel({ base_url: fx.mock.url, models: [MODEL] });
  admin = await fx.user(0, { role: ROLE.admin });
});
afterAll(() => fx.close());

// A bound above the mock's answer: a call in flight when the ban lands never needs its hold extended (an
// extension for a banned user is refused with the over-the-bound error, not the ban).
const chat = { model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 64 };

async function warmed(app = fx.ctx.app) {
  const user = await fx.user(RICH);
  const token = await fx.token(user.id, { remain_quota: RICH });
  const call = () =>
    app.handle(
      new Request("http://localhost/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${token.key}`, "content-type": "application/json" },
        body: JSON.stringify(chat),
      }),
    );
  const first = await call();
  expect(first.status).toBe(200);
  await first.text();
  return { user, token, call };
}

async function refused(res: Response, status: number, message: string) {
  expect(res.status).toBe(status);
  expect(((await res.json()) as any).error.message).toBe(message);
}

async function api(method: string, path: string, as: Session, body?: unknown) {
  const r = await fx.ctx.request(method, path, { as, body });
  expect(r.body.success).toBe(true);
}

describe("relay token/user cache invalidation", () => {
  test(`the cache is ${process.env.REDIS_CONN_STRING ? "Redis" : "in memory"}`, () => {
    expect(fx.ctx.deps.cache.kind).toBe(process.env.REDIS_CONN_STRING ? "redis" : "memory");
  });

  test("banning the user (manage disable)", async () => {
    const { user, call } = await warmed();
    await api("POST", "/api/user/manage", admin, { id: user.id, action: "disable" });
    await refused(await call(), 403, "user has been banned");
  });

  test("deleting the user", async () => {
    const { user, call } = await warmed();
    await api("DELETE", `/api/user/${user.id}`, admin);
    await refused(await call(), 403, "user has been banned");
  });

  test("the user deleting their own account", async () => {
    const { user, call } = await warmed();
    await api("DELETE", "/api/user/self", user);
    await refused(await call(), 403, "user has been banned");
  });

  test("deleting the token", async () => {
    const { user, token, call } = await warmed();
    await api("DELETE", `/api/token/${token.id}`, user);
    await refused(await call(), 401, "invalid API key");
  });

  test("disabling the token (status_only)", async () => {
    const { user, token, call } = await warmed();
    await api("PUT", "/api/token/?status_only=true", user, { id: token.id, status: 2 });
    await refused(await call(), 401, "this token has been disabled");
  });

  test("setting the token's quota to zero", async () => {
    const { user, token, call } = await warmed();
    await api("PUT", "/api/token/", user, { id: token.id, name: "t", remain_quota: 0, expired_time: -1 });
    await refused(await call(), 403, "this token's quota is exhausted");
  });

  test("moving the token's expiry into the past", async () => {
    const { user, token, call } = await warmed();
    await api("PUT", "/api/token/", user, {
      id: token.id,
      name: "t",
      remain_quota: RICH,
      expired_time: Math.floor(Date.now() / 1000) - 60,
    });
    await refused(await call(), 401, "this token has expired");
  });

  test("a second instance sharing the database and the cache hears about a ban", async () => {
    const shared = fx.ctx.deps.cache;
    // Memory: one process, so both instances hold the same cache; Redis: a client of its own, same keyspace.
    const cache: Cache =
      shared instanceof RedisCache ? new RedisCache(process.env.REDIS_CONN_STRING!, shared.prefix) : shared;
    if (cache instanceof RedisCache) await cache.connect();
    const other: AppDeps = { ...fx.ctx.deps, cache, shutdownHooks: [] };
    try {
      const { user, call } = await warmed(createApp(other));
      // The clock stands still from here, so the cached token cannot reach its TTL: only the announcement can
      // take it out of the second instance's cache.
      const frozen = realNow();
      Date.now = () => frozen;
      await api("POST", "/api/user/manage", admin, { id: user.id, action: "disable" });
      // In memory the announcement is delivered before the ban's reply: the very next call is refused. Redis
      // delivers it asynchronously, so the call is made again until the second instance has heard.
      let res = await call();
      let retries = 0;
      for (; res.status === 200 && retries < 500; retries++) res = await Bun.sleep(10).then(call);
      await refused(res, 403, "user has been banned");
      if (cache instanceof MemoryCache) expect(retries).toBe(0);
    } finally {
      Date.now = realNow;
      for (const hook of other.shutdownHooks) await hook();
      if (cache !== shared) await cache.close();
    }
  });
});
