import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { hashPassword } from "../../server/modules/user/password.ts";
import { LIMITS } from "../../server/http/ratelimit.ts";

let ctx: TestContext;
beforeAll(async () => (ctx = await testContext()));
afterAll(() => ctx.close());

describe("register", () => {
  test("validates and creates a normal user", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ username: "", password: "password1" }, "username and password cannot be empty"],
      [{ username: "bob", password: "" }, "username and password cannot be empty"],
      [{ username: "bob", password: "short" }, "password length must not be less than 8"],
      [{ username: "bob", password: "password1", password2: "password2" }, "the two passwords do not match"],
      [{ username: "averyveryverylongname", password: "password1" }, "username must be at most 12 characters"],
    ];
    for (const [body, message] of cases) {
      const r = await ctx.request("POST", "/api/user/register", { body });
      expect(r.body).toEqual({ success: false, message });
    }
    const okR = await ctx.request("POST", "/api/user/register", {
      body: { username: "bob", password: "password1", password2: "password1" },
    });
    expect(okR.body).toMatchObject({ success: true });
    const dup = await ctx.request("POST", "/api/user/register", { body: { username: "bob", password: "password1" } });
    expect(dup.body).toEqual({ success: false, message: "username is already taken" });
    const bob = await ctx.deps.db
      .selectFrom("users")
      .selectAll()
      .where("username", "=", "bob")
      .executeTakeFirstOrThrow();
    expect(bob.role).toBe(1);
    expect(bob.password.startsWith("$2a$")).toBe(true);
  });

  test("with email verification on, the address must be well-formed", async () => {
    await ctx.deps.options.set("EmailVerificationEnabled", "true");
    try {
      for (const email of ["", "not-an-address", "a@b"]) {
        const r = await ctx.request("POST", "/api/user/register", {
          body: { username: "mailer", password: "password1", email, verification_code: "123456" },
        });
        expect(r.body).toEqual({ success: false, message: "invalid email address" });
      }
      expect(
        await ctx.deps.db.selectFrom("users").select("id").where("username", "=", "mailer").executeTakeFirst(),
      ).toBeUndefined();
    } finally {
      await ctx.deps.options.set("EmailVerificationEnabled", "false");
    }
  });

  test("closed registration and self-use mode refuse", async () => {
    await ctx.deps.options.set("RegisterEnabled", "false");
    const r = await ctx.request("POST", "/api/user/register", { body: { username: "carl", password: "password1" } });
    expect(r.body).toEqual({ success: false, message: "registration is closed by the administrator" });
    await ctx.deps.options.set("RegisterEnabled", "true");
    await ctx.deps.options.set("SelfUseModeEnabled", "true");
    const r2 = await ctx.request("POST", "/api/user/register", { body: { username: "carl", password: "password1" } });
    expect(r2.body.success).toBe(false);
    await ctx.deps.options.set("SelfUseModeEnabled", "false");
  });

  test("invite rewards: new-user quota, invitee bonus, pending inviter earnings", async () => {
    await ctx.deps.options.set("QuotaForNewUser", "1000");
    await ctx.deps.options.set("QuotaForInvitee", "200");
    await ctx.deps.options.set("QuotaForInviter", "300");
    const inviter = await ctx.user(1);
    const code = (await ctx.request("GET", "/api/user/aff", { as: inviter })).body.data;
    expect(code).toMatch(/^[A-Za-z0-9]{4,}$/);
    await ctx.request("POST", "/api/user/register", {
      body: { username: "invitee", password: "password1", aff_code: code },
    });
    const invitee = await ctx.deps.db
      .selectFrom("users")
      .selectAll()
      .where("username", "=", "invitee")
      .executeTakeFirstOrThrow();
    expect(invitee.quota).toBe(1200);
    expect(invitee.inviter_id).toBe(inviter.id);
    const me = (await ctx.request("GET", "/api/user/self", { as: inviter })).body.data;
    expect(me).toMatchObject({ aff_count: 1, aff_quota: 300, aff_history_quota: 300 });
    for (const k of ["QuotaForNewUser", "QuotaForInvitee", "QuotaForInviter"]) await ctx.deps.options.set(k, "0");
  });
});

describe("login and sessions", () => {
  test("login sets an HttpOnly SameSite cookie and returns the user without secrets", async () => {
    const res = await ctx.request("POST", "/api/user/login", { body: { username: "root", password: "rootpass123" } });
    expect(res.body.success).toBe(true);
    expect(res.body.data.username).toBe("root");
    expect(res.body.data.password).toBeUndefined();
    expect(res.body.data.access_token).toBeUndefined();
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toMatch(/session=/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
  });

  test("a bcrypt hash from a one-api database still logs in", async () => {
    const s = await ctx.user(1);
    const bcrypt = await Bun.password.hash(s.password, { algorithm: "bcrypt", cost: 4 });
    expect(bcrypt).toMatch(/^\$2[aby]\$/);
    await ctx.deps.db.updateTable("users").set({ password: bcrypt }).where("id", "=", s.id).execute();
    const ok = await ctx.request("POST", "/api/user/login", { body: { username: s.username, password: s.password } });
    expect(ok.body).toMatchObject({ success: true, data: { id: s.id } });
    const wrong = await ctx.request("POST", "/api/user/login", {
      body: { username: s.username, password: s.password + "x" },
    });
    expect(wrong.body.success).toBe(false);
  });

  test("wrong credentials and empty fields", async () => {
    expect(
      (await ctx.request("POST", "/api/user/login", { body: { username: "root", password: "nope" } })).body.success,
    ).toBe(false);
    expect((await ctx.request("POST", "/api/user/login", { body: { username: "", password: "" } })).body).toEqual({
      success: false,
      message: "please enter username and password",
    });
  });

  test("login with the default root password warns", async () => {
    const c2 = await testContext({ setup: false });
    try {
      await c2.request("POST", "/api/setup", {
        body: { username: "root", password: "123456xx", confirmPassword: "123456xx" },
      });
      await c2.deps.db
        .updateTable("users")
        .set({ password: await hashPassword("123456", c2.deps.config.passwordHash) })
        .where("username", "=", "root")
        .execute();
      const r = await c2.request("POST", "/api/user/login", { body: { username: "root", password: "123456" } });
      expect(r.body).toMatchObject({
        success: true,
        message: "you are using the default password, change it immediately",
      });
    } finally {
      await c2.close();
    }
  });

  test("New-Api-User header must be present, well-formed and match the session", async () => {
    const s = await ctx.user(1);
    const cookieOnly = { cookie: s.cookie };
    expect((await ctx.request("GET", "/api/user/self", { headers: cookieOnly })).status).toBe(401);
    const bad = await ctx.request("GET", "/api/user/self", { headers: { ...cookieOnly, "New-Api-User": "abc" } });
    expect(bad.status).toBe(401);
    expect(bad.body.message).toMatch(/malformed/);
    const other = await ctx.request("GET", "/api/user/self", {
      headers: { ...cookieOnly, "New-Api-User": String(s.id + 1000) },
    });
    expect(other.status).toBe(401);
    expect(other.body.message).toMatch(/does not match/);
    expect((await ctx.request("GET", "/api/user/self", { as: s })).body.data.id).toBe(s.id);
    const tampered = await ctx.request("GET", "/api/user/self", {
      headers: { cookie: s.cookie + "x", "New-Api-User": String(s.id) },
    });
    expect(tampered.status).toBe(401);
  });

  test("logout clears the cookie", async () => {
    const s = await ctx.user(1);
    const r = await ctx.request("GET", "/api/user/logout", { as: s });
    expect(r.body.success).toBe(true);
    expect(r.headers.get("set-cookie")).toMatch(/session=;|Max-Age=0|Expires=Thu, 01 Jan 1970/);
  });

  test("system access token works instead of a session", async () => {
    const s = await ctx.user(1);
    const token = (await ctx.request("GET", "/api/user/token", { as: s })).body.data;
    expect(token).toHaveLength(32);
    const r = await ctx.request("GET", "/api/user/self", { headers: { Authorization: token } });
    expect(r.body.data.id).toBe(s.id);
    const r2 = await ctx.request("GET", "/api/user/self", {
      headers: { Authorization: `Bearer ${token}`, "New-Api-User": String(s.id) },
    });
    expect(r2.body.data.id).toBe(s.id);
    expect((await ctx.request("GET", "/api/user/self", { headers: { Authorization: "wrong" } })).status).toBe(401);
    expect(
      (
        await ctx.request("GET", "/api/user/self", {
          headers: { Authorization: token, "New-Api-User": String(s.id + 1) },
        })
      ).status,
    ).toBe(401);
  });

  test("a banned user is refused everywhere, including an existing session and login", async () => {
    const s = await ctx.user(1);
    await ctx.deps.db.updateTable("users").set({ status: 2 }).where("id", "=", s.id).execute();
    const r = await ctx.request("GET", "/api/user/self", { as: s });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ success: false, message: "user has been banned" });
    const l = await ctx.request("POST", "/api/user/login", { body: { username: s.username, password: s.password } });
    expect(l.body).toEqual({ success: false, message: "user has been banned" });
  });

  test("password login can be switched off", async () => {
    await ctx.deps.options.set("PasswordLoginEnabled", "false");
    const r = await ctx.request("POST", "/api/user/login", { body: { username: "root", password: "rootpass123" } });
    expect(r.body).toEqual({ success: false, message: "login by password is disabled by the administrator" });
    await ctx.deps.options.set("PasswordLoginEnabled", "true");
  });
});

describe("rate limits", () => {
  test("login is limited per IP to 20 per 20 minutes, then 429", async () => {
    const c = await testContext({ config: { rateLimitEnabled: true, trustProxy: true } });
    try {
      // A different name each time: the per-account sign-in limit (tests/server/signin-throttle.test.ts) stays out of it.
      let n = 0;
      const hit = (ip: string) =>
        c.request("POST", "/api/user/login", {
          body: { username: `x${++n}`, password: "y" },
          headers: { "X-Forwarded-For": ip },
        });
      for (let i = 0; i < 20; i++) expect((await hit("10.0.0.1")).status).not.toBe(429);
      const blocked = await hit("10.0.0.1");
      expect(blocked.status).toBe(429);
      expect(blocked.body).toEqual({ success: false, message: "too many requests, please try again later" });
      expect((await hit("10.0.0.2")).status).not.toBe(429);
    } finally {
      await c.close();
    }
  }, 30_000);

  test(`other /api calls are limited per IP to ${LIMITS.api.count} per ${LIMITS.api.windowSeconds / 60} minutes, then 429`, async () => {
    const c = await testContext({ config: { rateLimitEnabled: true, trustProxy: true } });
    try {
      const hit = (ip: string) => c.request("GET", "/api/status", { headers: { "X-Forwarded-For": ip } });
      for (let i = 0; i < LIMITS.api.count; i++) expect((await hit("10.0.1.1")).status).toBe(200);
      const blocked = await hit("10.0.1.1");
      expect(blocked.status).toBe(429);
      expect(blocked.body).toEqual({ success: false, message: "too many requests, please try again later" });
      expect((await hit("10.0.1.2")).status).toBe(200);
    } finally {
      await c.close();
    }
  });
});
