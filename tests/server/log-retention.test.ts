// LogRetentionDays: consume and error logs older than that many days are deleted in small batches in the
// background (0 keeps everything); top-up, management and system logs are kept whatever their age.
import { describe, expect, test } from "bun:test";
import { testContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";
import { pruneLogs, RETENTION_BATCH } from "../../server/jobs/log-retention.ts";
import { insertRows } from "../../db/bulk.ts";

const DAY = 86_400;

for (const kind of storageKinds()) {
  describe(`log retention on ${kind}`, () => {
    test("deletes only old consume and error logs, in batches, and nothing when 0", async () => {
      const ctx = await testContext({ kind });
      const db = ctx.deps.db;
      try {
        const now = Math.floor(Date.now() / 1000);
        const old = now - 40 * DAY;
        const rows = [];
        for (let i = 0; i < RETENTION_BATCH * 2 + 7; i++) {
          rows.push({
            user_id: 1,
            created_at: old,
            type: i % 2 ? LOG_TYPE.consume : LOG_TYPE.error,
            content: "",
            username: "u",
            quota: 1,
          });
          // Kept rows among the deleted ones, inside a batch's range of ids: a batch deletes by its condition
          // up to its last id, never the whole range.
          if (i === 300)
            for (const type of [LOG_TYPE.topup, LOG_TYPE.manage, LOG_TYPE.system])
              rows.push({ user_id: 1, created_at: old, type, content: "kept", username: "u", quota: 0 });
        }
        rows.push({
          user_id: 1,
          created_at: now - 2 * DAY,
          type: LOG_TYPE.consume,
          content: "recent",
          username: "u",
          quota: 1,
        });
        await insertRows(db, "logs", rows);
        const count = async () =>
          Number(
            (
              await db
                .selectFrom("logs")
                .select((eb) => eb.fn.countAll().as("n"))
                .executeTakeFirstOrThrow()
            ).n,
          );
        const total = await count();

        expect(await pruneLogs(ctx.deps, now)).toBe(0);
        expect(await count()).toBe(total);

        await ctx.deps.options.set("LogRetentionDays", "30");
        const batches: number[] = [];
        expect(await pruneLogs(ctx.deps, now, (n) => void batches.push(n))).toBe(RETENTION_BATCH * 2 + 7);
        expect(batches).toEqual([RETENTION_BATCH, RETENTION_BATCH, 7]);
        const left = await db.selectFrom("logs").select(["type", "content"]).orderBy("id").execute();
        expect(left.map((l) => l.content)).toEqual(["kept", "kept", "kept", "recent"]);
      } finally {
        await ctx.close();
      }
    }, 60_000);
  });
}

test("LogRetentionDays is a whole number of days, 0 or more", async () => {
  const ctx = await testContext();
  try {
    const root = await ctx.user(100);
    for (const bad of ["-1", "1.5", "x"]) {
      const r = await ctx.request("PUT", "/api/option/", { as: root, body: { key: "LogRetentionDays", value: bad } });
      expect(r.body.success).toBe(false);
    }
    const ok = await ctx.request("PUT", "/api/option/", { as: root, body: { key: "LogRetentionDays", value: "90" } });
    expect(ok.body.success).toBe(true);
  } finally {
    await ctx.close();
  }
});
