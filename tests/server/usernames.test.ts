// Usernames are read as people read them: look-alike, invisible and control characters are refused when a
// name is chosen, and "ROOT" is root's name on every database (a second account cannot take it, and signing in
// with it reaches root). Databases that already hold case-variant names still migrate and sign in predictably.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "kysely";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { up as usernameCaseIndex, USERNAME_LOWER_INDEX } from "../../db/migrations/0005_username_case.ts";
import { USERNAME_MSG } from "../../server/modules/user/username.ts";
import { hashPassword } from "../../server/modules/user/password.ts";
import { nowSeconds } from "../../db/index.ts";

const BAD: [string, string, string][] = [
  ["a Latin name with Cyrillic o's", "r\u043e\u043et", USERNAME_MSG.mixed],
  ["a Latin name with a Greek omicron", "r\u03bfot", USERNAME_MSG.mixed],
  ["a zero-width space", "root\u200b", USERNAME_MSG.invisible],
  ["a zero-width joiner", "ro\u200dot", USERNAME_MSG.invisible],
  ["a right-to-left override", "\u202etoor", USERNAME_MSG.invisible],
  ["a left-to-right isolate", "root\u2066", USERNAME_MSG.invisible],
  ["NUL", "root\u0000", USERNAME_MSG.invisible],
  ["a control character", "ro\u0007ot", USERNAME_MSG.invisible],
  ["a soft hyphen", "ro\u00adot", USERNAME_MSG.invisible],
  ["a Hangul filler", "root\u3164", USERNAME_MSG.invisible],
  ["a space inside", "ro ot", USERNAME_MSG.space],
  ["an all-Cyrillic look-alike of a Latin name", "\u0440\u043e\u0441", USERNAME_MSG.lookalike],
  ["an all-Greek look-alike of a Latin name", "\u03a4\u039f\u03a1", USERNAME_MSG.lookalike],
  ["full-width letters of a taken name (NFKC makes them root)", "\uff52\uff4f\uff4f\uff54", USERNAME_MSG.taken],
  ["another case of a taken name", "ROOT", USERNAME_MSG.taken],
  ["mathematical bold letters of a taken name", "\u{1d42b}\u{1d428}\u{1d428}\u{1d42d}", USERNAME_MSG.taken],
];

const GOOD = ["alice_01", "Вова", "Иван", "张三abc", "たなか", "日本語テスト", "Ελένη", "josé"];

for (const kind of storageKinds()) {
  describe(`usernames (${kind})`, () => {
    let ctx: TestContext;
    let root: Session;
    const userCount = async () =>
      Number(
        (
          await ctx.deps.db
            .selectFrom("users")
            .select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      );

    beforeAll(async () => {
      ctx = await testContext({ kind });
      root = await ctx.login("root", ROOT_PASSWORD);
    }, 30_000);
    afterAll(() => ctx.close());

    test("registration refuses every look-alike, invisible and control class with a 400 naming the field, storing nothing", async () => {
      const before = await userCount();
      for (const [what, name, message] of BAD) {
        const r = await ctx.request("POST", "/api/user/register", {
          body: { username: name, password: "password123" },
        });
        expect({ what, status: r.status, body: r.body }).toEqual({
          what,
          status: 400,
          body: { success: false, message },
        });
        expect(message.startsWith("username")).toBe(true);
      }
      expect(await userCount()).toBe(before);
    });

    test("an admin's create and rename, and a rename of one's own, refuse them too", async () => {
      const before = await userCount();
      const created = await ctx.request("POST", "/api/user/", {
        as: root,
        body: { username: "ad\u200bmin", password: "password123" },
      });
      expect(created.body).toEqual({ success: false, message: USERNAME_MSG.invisible });
      const bob = await ctx.user(1, { username: "bob" });
      const renamed = await ctx.request("PUT", "/api/user/", { as: root, body: { id: bob.id, username: "R\u043eOT" } });
      expect(renamed.body).toEqual({ success: false, message: USERNAME_MSG.mixed });
      const taken = await ctx.request("PUT", "/api/user/", { as: root, body: { id: bob.id, username: "Root" } });
      expect(taken.body).toEqual({ success: false, message: USERNAME_MSG.taken });
      const self = await ctx.request("PUT", "/api/user/self", { as: bob, body: { username: "ROOT" } });
      expect(self.body).toEqual({ success: false, message: USERNAME_MSG.taken });
      expect(await userCount()).toBe(before + 1);
      const row = await ctx.deps.db
        .selectFrom("users")
        .select("username")
        .where("id", "=", bob.id)
        .executeTakeFirstOrThrow();
      expect(row.username).toBe("bob");
      // A name stored before these rules (an imported one with a space) is no rename when sent back unchanged.
      const old = await ctx.user(1, { username: "old name" });
      expect(
        (
          await ctx.request("PUT", "/api/user/", {
            as: root,
            body: { id: old.id, username: "old name", display_name: "Old" },
          })
        ).body.success,
      ).toBe(true);
      expect(
        (await ctx.request("PUT", "/api/user/self", { as: old, body: { username: "old name", display_name: "Old" } }))
          .body.success,
      ).toBe(true);
      // Renaming to another case of one's own name is a rename, not a clash.
      expect((await ctx.request("PUT", "/api/user/self", { as: bob, body: { username: "Bob" } })).body.success).toBe(
        true,
      );
    });

    test("names of other scripts, and of CJK writing mixed with Latin, are accepted and stored NFKC-normalised", async () => {
      for (const name of GOOD) {
        const r = await ctx.request("POST", "/api/user/", {
          as: root,
          body: { username: name, password: "password123" },
        });
        expect({ name, body: r.body }).toEqual({ name, body: { success: true, message: "user created" } });
      }
      const r = await ctx.request("POST", "/api/user/", {
        as: root,
        body: { username: "\uff43\uff41\uff52\uff4c", password: "password123" },
      });
      expect(r.body.success).toBe(true);
      expect(
        await ctx.deps.db.selectFrom("users").select("id").where("username", "=", "carl").executeTakeFirst(),
      ).toBeTruthy();
      // Another case of a non-ASCII name is the same name.
      const again = await ctx.request("POST", "/api/user/", {
        as: root,
        body: { username: "ИВАН", password: "password123" },
      });
      expect(again.body).toEqual({ success: false, message: USERNAME_MSG.taken });
    });

    test('"ROOT" signs in as root, and the database itself refuses a second "Root"', async () => {
      const s = await ctx.login("ROOT", ROOT_PASSWORD);
      expect(s.id).toBe(root.id);
      const insert = ctx.deps.db
        .insertInto("users")
        .values({
          username: "Root",
          password: await hashPassword("password123", ctx.deps.config.passwordHash),
          display_name: "x",
          role: 1,
          status: 1,
          group: "default",
          aff_code: "clash-aff",
          created_time: nowSeconds(),
          setting: "",
        } as any)
        .execute();
      await expect(insert).rejects.toThrow();
      expect(
        await ctx.deps.db.selectFrom("users").select("id").where("aff_code", "=", "clash-aff").executeTakeFirst(),
      ).toBeUndefined();
    });

    if (kind !== "mysql") {
      // MySQL's case-insensitive collation cannot hold such a pair in the first place.
      test("a database already holding names that differ only in case migrates, and sign-in picks deterministically", async () => {
        const db = ctx.deps.db;
        await sql.raw(`drop index ${USERNAME_LOWER_INDEX}`).execute(db);
        const hash = async (p: string) => hashPassword(p, ctx.deps.config.passwordHash);
        const add = async (username: string, password: string) => {
          await db
            .insertInto("users")
            .values({
              username,
              password: await hash(password),
              display_name: username,
              role: 1,
              status: 1,
              group: "default",
              aff_code: `aff-${username}`,
              created_time: nowSeconds(),
              setting: "",
            } as any)
            .execute();
          return (await db.selectFrom("users").select("id").where("username", "=", username).executeTakeFirstOrThrow())
            .id;
        };
        const older = await add("Dup", "older-pass1");
        const newer = await add("dup", "newer-pass1");
        const quiet = console.warn;
        const warned: string[] = [];
        console.warn = (m: string) => void warned.push(String(m));
        try {
          await usernameCaseIndex(db);
        } finally {
          console.warn = quiet;
        }
        expect(warned.some((m) => m.includes("dup"))).toBe(true);
        // Exact spelling first, else the oldest account.
        expect((await ctx.login("dup", "newer-pass1")).id).toBe(newer);
        expect((await ctx.login("Dup", "older-pass1")).id).toBe(older);
        expect((await ctx.login("DUP", "older-pass1")).id).toBe(older);
        // A new name clashing with either is still refused by the service.
        expect(
          (await ctx.request("POST", "/api/user/", { as: root, body: { username: "dUP", password: "password123" } }))
            .body,
        ).toEqual({ success: false, message: USERNAME_MSG.taken });
        // Once the duplicate is renamed, the next start makes the index unique.
        await db.updateTable("users").set({ username: "dup2" }).where("id", "=", newer).execute();
        await usernameCaseIndex(db);
        const clash = db
          .insertInto("users")
          .values({
            username: "DUP",
            password: "x",
            display_name: "x",
            role: 1,
            status: 1,
            group: "default",
            aff_code: "aff-DUP",
            created_time: nowSeconds(),
            setting: "",
          } as any)
          .execute();
        await expect(clash).rejects.toThrow();
      });
    }
  });
}
