// Password hashes new-api can verify by default (bcrypt, as its Go library writes them), argon2id only when the
// operator opts in, and hashes of the other kind replaced at the next sign-in.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { loadConfig } from "../../server/config.ts";
import { ARGON2ID, BCRYPT_COST, hashPassword, passwordTooLong } from "../../server/modules/user/password.ts";

const storedHash = async (ctx: TestContext, username: string) =>
  (await ctx.deps.db.selectFrom("users").select("password").where("username", "=", username).executeTakeFirstOrThrow())
    .password;

describe("default: bcrypt", () => {
  let ctx: TestContext;
  beforeAll(async () => (ctx = await testContext({ setup: false })));
  afterAll(() => ctx.close());

  test("setup, registration and a password change write $2a$ bcrypt at the documented cost, and it signs in", async () => {
    expect(
      (
        await ctx.request("POST", "/api/setup", {
          body: { username: "root", password: "rootpass1", confirmPassword: "rootpass1" },
        })
      ).body.success,
    ).toBe(true);
    const bcrypt = new RegExp(`^\\$2a\\$${String(BCRYPT_COST).padStart(2, "0")}\\$[./A-Za-z0-9]{53}$`);
    expect(await storedHash(ctx, "root")).toMatch(bcrypt);
    expect(
      (
        await ctx.request("POST", "/api/user/register", {
          body: { username: "newcomer", password: "newpass12", password2: "newpass12" },
        })
      ).body.success,
    ).toBe(true);
    const hash = await storedHash(ctx, "newcomer");
    expect(hash).toMatch(bcrypt);
    // The bytes after the prefix are the same algorithm's whatever the minor letter, so Go's $2a$ reader matches them.
    expect(await Bun.password.verify("newpass12", "$2b$" + hash.slice(4))).toBe(true);
    const s = await ctx.login("newcomer", "newpass12");
    expect(
      (
        await ctx.request("PUT", "/api/user/self", {
          as: s,
          body: { original_password: "newpass12", password: "changed123" },
        })
      ).body.success,
    ).toBe(true);
    expect(await storedHash(ctx, "newcomer")).toMatch(bcrypt);
    await ctx.login("newcomer", "changed123");
  });

  test("a bcrypt hash as Go's library writes it verifies", async () => {
    // The openwall test vector for "U*U".
    expect(await Bun.password.verify("U*U", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW")).toBe(true);
  });

  test("an argon2id hash keeps signing in and is replaced by bcrypt at that sign-in", async () => {
    const s = await ctx.user(1);
    const argon = await Bun.password.hash(s.password, ARGON2ID);
    await ctx.deps.db.updateTable("users").set({ password: argon }).where("id", "=", s.id).execute();
    await ctx.login(s.username, s.password);
    const after = await storedHash(ctx, s.username);
    expect(after).toStartWith("$2a$");
    expect(await Bun.password.verify(s.password, after)).toBe(true);
    // A wrong password changes nothing.
    await ctx.deps.db.updateTable("users").set({ password: argon }).where("id", "=", s.id).execute();
    expect(
      (await ctx.request("POST", "/api/user/login", { body: { username: s.username, password: "wrong-one" } })).body
        .success,
    ).toBe(false);
    expect(await storedHash(ctx, s.username)).toBe(argon);
  });

  test("the longest password the length rule allows fits bcrypt's 72 bytes; a longer byte string is refused for bcrypt only", async () => {
    const widest = "密".repeat(20); // 20 characters of 3 bytes: the most bytes the rule lets through
    expect(
      (await ctx.request("POST", "/api/user/register", { body: { username: "cjkuser", password: widest } })).body
        .success,
    ).toBe(true);
    await ctx.login("cjkuser", widest);
    expect(passwordTooLong("🔑".repeat(19), "bcrypt")).toBe(true);
    expect(passwordTooLong("a".repeat(72), "bcrypt")).toBe(false);
    expect(passwordTooLong("🔑".repeat(19), "argon2id")).toBe(false);
  });
});

describe("PASSWORD_HASH=argon2id", () => {
  let ctx: TestContext;
  beforeAll(async () => (ctx = await testContext({ config: { passwordHash: "argon2id" } })));
  afterAll(() => ctx.close());

  test("new passwords are argon2id and a bcrypt hash is upgraded at sign-in", async () => {
    expect(
      (await ctx.request("POST", "/api/user/register", { body: { username: "argonuser", password: "argonpass1" } }))
        .body.success,
    ).toBe(true);
    expect(await storedHash(ctx, "argonuser")).toStartWith("$argon2id$");
    const s = await ctx.user(1);
    await ctx.deps.db
      .updateTable("users")
      .set({ password: await hashPassword(s.password, "bcrypt") })
      .where("id", "=", s.id)
      .execute();
    await ctx.login(s.username, s.password);
    expect(await storedHash(ctx, s.username)).toStartWith("$argon2id$");
  });
});

test("PASSWORD_HASH reads bcrypt (the default) and argon2id, and refuses anything else", () => {
  const base = { SESSION_SECRET: "x", NODE_ENV: "test" };
  expect(loadConfig(base).passwordHash).toBe("bcrypt");
  expect(loadConfig({ ...base, PASSWORD_HASH: "Argon2id" }).passwordHash).toBe("argon2id");
  expect(() => loadConfig({ ...base, PASSWORD_HASH: "md5" })).toThrow("PASSWORD_HASH=md5");
});
