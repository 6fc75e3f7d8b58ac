// Sign-in is throttled per account, not per address: wrong passwords spread over many (forwarded) addresses lock
// the account, the right password included, until the lock expires; every route that checks a password counts
// against the same account, on every instance sharing the cache. An unknown name is checked against a dummy hash
// like a wrong password, so neither answer nor work tells them apart. Logout needs the user-id header or a POST.
import { afterAll, afterEach, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { openCache } from "../../server/infra/cache.ts";
import { createApp } from "../../server/app.ts";
import { BCRYPT_COST, dummyHash } from "../../server/modules/user/password.ts";
import { MSG } from "../../server/modules/user/service.ts";
import * as twofa from "../../server/modules/twofa/service.ts";
import { MAX_FAILED_ATTEMPTS, totpCode } from "../../server/modules/twofa/totp.ts";

const MAX = 10;
const LOCKED =
  /^too many failed sign-in attempts for this account; try again in \d+ (minute|second)s? \(at \d{4}-\d\d-\d\dT/;

const login = (ctx: TestContext, username: string, password: string, ip: string) =>
  ctx.request("POST", "/api/user/login", { body: { username, password }, headers: { "x-forwarded-for": ip } });
/** A new address each call, so the per-address limit (20 sign-ins per 20 minutes) never answers first. */
let n = 0;
const fresh = () => `10.${(++n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

describe("per-account sign-in throttling", () => {
  let ctx: TestContext;
  beforeAll(async () => {
    // Per-address limits on, behind a trusted proxy: 200 addresses each stay far below theirs.
    ctx = await testContext({
      config: { trustProxy: true, rateLimitEnabled: true, signin: { maxFailures: MAX, lockoutSeconds: 600 } },
    });
  });
  afterAll(() => ctx.close());

  test("200 wrong passwords from 200 forwarded addresses: the first ten are wrong-password answers, the rest 429, and then the right password is refused too", async () => {
    const victim = await ctx.user(1, { username: "victim" });
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await login(ctx, "victim", `guess-${i}`, `198.51.${i >> 8}.${i & 255}`);
      statuses.push(r.status);
      if (r.status === 429) {
        expect(r.body.success).toBe(false);
        expect(r.body.message).toMatch(LOCKED);
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
      } else {
        expect(r.body).toEqual({ success: false, message: MSG.badLogin });
      }
    }
    expect(statuses.filter((s) => s === 400)).toHaveLength(MAX);
    expect(statuses.slice(MAX).every((s) => s === 429)).toBe(true);
    // Locked for the right password, from a fresh address, and in another letter case.
    for (const name of ["victim", "VICTIM"]) {
      const right = await login(ctx, name, victim.password, "203.0.113.7");
      expect(right.status).toBe(429);
      expect(right.body.message).toMatch(LOCKED);
    }
    // Another account is not affected.
    const other = await ctx.user(1, { username: "bystander" });
    expect((await login(ctx, "bystander", other.password, "198.51.0.1")).status).toBe(200);
  }, 30_000);

  test("concurrent guesses cannot all slip in before the lock: at most the limit are checked", async () => {
    await ctx.user(1, { username: "burst" });
    const replies = await Promise.all(Array.from({ length: 60 }, (_, i) => login(ctx, "burst", `x${i}`, fresh())));
    expect(replies.filter((r) => r.status === 400).length).toBeLessThanOrEqual(MAX);
    expect(replies.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(60 - MAX);
  });

  test("a name nobody holds locks the same way, so the answers do not tell it from a real account", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < MAX + 2; i++) statuses.push((await login(ctx, "nobody-here", `p${i}`, fresh())).status);
    expect(statuses).toEqual([...Array(MAX).fill(400), 429, 429]);
  });

  test("a right password clears the count", async () => {
    const s = await ctx.user(1, { username: "forgetful" });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < MAX - 1; i++) expect((await login(ctx, "forgetful", "wrong-one", fresh())).status).toBe(400);
      expect((await login(ctx, "forgetful", s.password, fresh())).status).toBe(200);
    }
  }, 30_000);

  test("wrong original passwords, secure-verification passwords and reset tokens count against the account too", async () => {
    const s = await ctx.user(1, { username: "changer", email: "changer@example.com" });
    for (let i = 0; i < 4; i++) {
      const r = await ctx.request("PUT", "/api/user/self", {
        as: s,
        body: { original_password: `nope-${i}`, password: "newpassword1" },
      });
      expect(r.body).toEqual({ success: false, message: "the original password is wrong" });
    }
    for (let i = 0; i < 4; i++) {
      const r = await ctx.request("POST", "/api/verify", {
        as: s,
        body: { method: "password", password: `nope-${i}` },
      });
      expect(r.status).toBe(403);
    }
    for (let i = 0; i < 2; i++) expect((await login(ctx, "changer", "nope", fresh())).status).toBe(400);
    const change = await ctx.request("PUT", "/api/user/self", {
      as: s,
      body: { original_password: s.password, password: "newpassword1" },
    });
    expect(change.status).toBe(429);
    expect(change.body.message).toMatch(LOCKED);
    expect((await login(ctx, "changer", s.password, fresh())).status).toBe(429);

    for (let i = 0; i < MAX; i++) {
      const r = await ctx.request("POST", "/api/user/reset", {
        body: { email: "reset-target@example.com", token: `t${i}` },
        headers: { "x-forwarded-for": fresh() },
      });
      expect(r.status).toBe(400);
    }
    const r = await ctx.request("POST", "/api/user/reset", {
      body: { email: "reset-target@example.com", token: "t-last" },
      headers: { "x-forwarded-for": fresh() },
    });
    expect(r.status).toBe(429);
  }, 30_000);
});

describe("the second factor", () => {
  test("wrong codes from many addresses lock two-factor sign-in for the account, the right code included", async () => {
    const ctx = await testContext({ config: { trustProxy: true, rateLimitEnabled: true } });
    try {
      const s = await ctx.user(1, { username: "twofactor" });
      const user = await ctx.deps.db.selectFrom("users").selectAll().where("id", "=", s.id).executeTakeFirstOrThrow();
      const { secret } = await twofa.setupTwoFA(ctx.deps, user);
      await twofa.enableTwoFA(ctx.deps, user, totpCode(secret));
      const step = async (code: string) => {
        const first = await login(ctx, "twofactor", s.password, fresh());
        expect(first.body.data.require_2fa).toBe(true);
        return ctx.request("POST", "/api/user/login/2fa", {
          body: { flow_token: first.body.data.flow_token, code },
          headers: { "x-forwarded-for": fresh() },
        });
      };
      const right = totpCode(secret, Date.now() + 30_000);
      const wrong = right === "123456" ? "654321" : "123456";
      for (let i = 1; i < MAX_FAILED_ATTEMPTS; i++) expect((await step(wrong)).body.message).toBe(twofa.MSG.wrongCode);
      expect((await step(wrong)).body.message).toContain("locked until");
      const refused = await step(right);
      expect(refused.body.success).toBe(false);
      expect(refused.body.message).toContain("locked until");
    } finally {
      await ctx.close();
    }
  }, 30_000);
});

describe("the lock expires", () => {
  test("after SIGNIN_LOCKOUT_SECONDS the right password works again", async () => {
    const ctx = await testContext({ config: { signin: { maxFailures: 3, lockoutSeconds: 1 } } });
    try {
      const s = await ctx.user(1, { username: "patient" });
      for (let i = 0; i < 3; i++) expect((await login(ctx, "patient", "wrong", "x")).status).toBe(400);
      expect((await login(ctx, "patient", s.password, "x")).status).toBe(429);
      // Wait for the lock to lapse (polling, not timing: the assertion is only that it does).
      let status = 429;
      for (let i = 0; i < 40 && status === 429; i++) {
        await Bun.sleep(100);
        const locked = await ctx.deps.cache.get("signin:lock:u" + s.id);
        if (!locked) status = (await login(ctx, "patient", s.password, "x")).status;
      }
      expect(status).toBe(200);
    } finally {
      await ctx.close();
    }
  });
});

if (process.env.REDIS_CONN_STRING) {
  test("a lock made on one instance holds on another sharing the Redis cache", async () => {
    const prefix = `sytest:signin:${Math.random().toString(36).slice(2)}:`;
    const a = await testContext({ config: { signin: { maxFailures: 3, lockoutSeconds: 600 } } });
    const mine = await openCache(process.env.REDIS_CONN_STRING!, prefix);
    const theirs = await openCache(process.env.REDIS_CONN_STRING!, prefix);
    await a.deps.cache.close();
    a.deps.cache = mine;
    // A second instance: its own app and its own Redis connection, nothing in memory shared with the first.
    const b = createApp({ ...a.deps, cache: theirs });
    try {
      const s = await a.user(1, { username: "roamer" });
      for (let i = 0; i < 3; i++) expect((await login(a, "roamer", "wrong", "x")).status).toBe(400);
      const there = await b.handle(
        new Request("http://localhost/api/user/login", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "roamer", password: s.password }),
        }),
      );
      expect(there.status).toBe(429);
      expect(((await there.json()) as any).message).toMatch(LOCKED);
    } finally {
      await a.close();
      await theirs.close();
    }
  }, 30_000);
}

describe("unknown names are checked against a dummy hash", () => {
  let ctx: TestContext;
  let verify: ReturnType<typeof spyOn>;
  beforeAll(async () => {
    ctx = await testContext();
  });
  afterEach(() => verify?.mockRestore());
  afterAll(() => ctx.close());

  test("an unknown name, an account without a password and a wrong password each run one hash check of the same cost", async () => {
    const dummy = await dummyHash(ctx.deps.config.passwordHash);
    await ctx.user(1, { username: "realuser" });
    await ctx.user(1, { username: "oauthonly", password: "" }).catch(() => {});
    const real = (
      await ctx.deps.db
        .selectFrom("users")
        .select("password")
        .where("username", "=", "realuser")
        .executeTakeFirstOrThrow()
    ).password;
    verify = spyOn(Bun.password, "verify");
    const cases: [string, string][] = [
      ["nobody", dummy],
      ["oauthonly", dummy],
      ["realuser", real],
    ];
    for (const [name, hash] of cases) {
      verify.mockClear();
      const r = await ctx.request("POST", "/api/user/login", { body: { username: name, password: "wrong-password" } });
      expect(r.body).toEqual({ success: false, message: MSG.badLogin });
      expect(verify).toHaveBeenCalledTimes(1);
      expect(verify.mock.calls[0][1]).toBe(hash);
    }
    // The dummy is a hash of the configured kind with the cost real ones have.
    expect(dummy.slice(0, 7)).toBe(real.slice(0, 7));
    expect(real.slice(0, 7)).toBe(`$2a$${BCRYPT_COST}$`);
  });
});

describe("logout needs the user-id header or a POST", () => {
  let ctx: TestContext;
  let root: Session;
  beforeAll(async () => {
    ctx = await testContext();
    root = await ctx.login("root", ROOT_PASSWORD);
  });
  afterAll(() => ctx.close());
  const self = (s: Session) => ctx.request("GET", "/api/user/self", { as: s });

  test("a cookie-only GET is refused and signs nobody out", async () => {
    const s = await ctx.user();
    const r = await ctx.request("GET", "/api/user/logout", { headers: { cookie: s.cookie } });
    expect(r.status).toBe(401);
    expect(r.body.success).toBe(false);
    expect(r.body.message).toContain("New-Api-User");
    expect(r.headers.get("set-cookie") ?? "").not.toContain("session=");
    expect((await self(s)).status).toBe(200);
    // Another user's id in the header is refused the same way.
    const wrong = await ctx.request("GET", "/api/user/logout", {
      headers: { cookie: s.cookie, "New-Api-User": String(root.id) },
    });
    expect(wrong.status).toBe(401);
    expect((await self(s)).status).toBe(200);
  });

  test("a GET with the header (as new-api's console sends it) signs out", async () => {
    const s = await ctx.user();
    expect((await ctx.request("GET", "/api/user/logout", { as: s })).body).toEqual({
      success: true,
      message: "logged out",
    });
    expect((await self(s)).status).toBe(401);
  });

  test("a POST with the cookie alone signs out", async () => {
    const s = await ctx.user();
    expect((await ctx.request("POST", "/api/user/logout", { headers: { cookie: s.cookie } })).body.success).toBe(true);
    expect((await self(s)).status).toBe(401);
  });

  test("without a valid cookie there is nothing to refuse", async () => {
    expect((await ctx.request("GET", "/api/user/logout")).body.success).toBe(true);
    expect(
      (await ctx.request("GET", "/api/user/logout", { headers: { cookie: "session=garbage" } })).body.success,
    ).toBe(true);
  });
});
