// The relay's token read (one statement of fixed text, server/relay/token-load.ts) gives exactly what reading
// the token and its user through Kysely gives, on every database; a deleted token or a missing user is no token.
import { expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { testContext } from "../helpers/app.ts";
import { dialectOf } from "../../db/index.ts";
import { loadToken } from "../../server/relay/token-load.ts";

for (const kind of storageKinds()) {
  test(`${kind}: the token and its user as Kysely reads them; deleted token or missing user: null`, async () => {
    const ctx = await testContext({ kind });
    try {
      const db = ctx.deps.db;
      const dialect = dialectOf(db);
      const user = await ctx.user(1, { quota: 12_345, group: "vip", setting: '{"a":1}' });
      const now = Math.floor(Date.now() / 1000);
      const add = async (key: string, userId: number, fields: Record<string, unknown> = {}) => {
        await db
          .insertInto("tokens")
          .values({
            user_id: userId,
            key,
            name: "n",
            created_time: now,
            expired_time: -1,
            remain_quota: 77,
            unlimited_quota: false,
            group: "g1",
            allow_ips: "10.0.0.0/8",
            ...fields,
          } as any)
          .execute();
      };
      const key = "k".repeat(48);
      await add(key, user.id, { model_limits_enabled: true, model_limits: "m1,m2", rpm_limit: 5 });
      const got = await loadToken(db, dialect, key);
      const token = await db
        .selectFrom("tokens")
        .selectAll()
        .where("key", "=", key)
        .where("deleted_at", "is", null)
        .executeTakeFirstOrThrow();
      const userRow = await db
        .selectFrom("users")
        .select(["id", "username", "role", "status", "group", "setting", "deleted_at", "quota"])
        .where("id", "=", user.id)
        .executeTakeFirstOrThrow();
      expect(got).toEqual({ token, user: userRow });
      expect(Object.keys(got!.token).sort()).toEqual(Object.keys(token).sort());

      expect(await loadToken(db, dialect, "n".repeat(48))).toBeNull();
      await add("d".repeat(48), user.id, { deleted_at: new Date().toISOString().slice(0, 19).replace("T", " ") });
      expect(await loadToken(db, dialect, "d".repeat(48))).toBeNull();
      await add("o".repeat(48), 987_654);
      expect(await loadToken(db, dialect, "o".repeat(48))).toBeNull();
    } finally {
      await ctx.close();
    }
  });
}
