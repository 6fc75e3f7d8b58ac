// The write-behind's journal: what was settled and not yet written survives the process (replayed at the next
// start), and a replay never bills twice — a batch the database committed before the crash is recognised by
// its receipt and skipped, on every database. Segments go once their batches are in.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storageKinds } from "../helpers/db.ts";
import { testContext, type TestContext } from "../helpers/app.ts";
import { WriteBehind } from "../../server/jobs/writebehind.ts";
import { Journal, readJournal, replayJournal } from "../../server/jobs/journal.ts";
import { dataExportPolicy } from "../../server/modules/dashboard/export.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";

const CALLS = 40;
const COST = 7;

function settleCalls(writer: WriteBehind, userId: number, username: string, from: number) {
  for (let i = from; i < from + CALLS; i++) {
    const at = Math.floor(Date.now() / 1000);
    writer.settled({ lease: null, userId, tokenId: 0, amount: 0 }, COST, {
      usage: { userId, username, tokenId: 0, channelId: 0, model: "m", quota: COST, tokens: 3, at },
      log: {
        user_id: userId,
        created_at: at,
        type: LOG_TYPE.consume,
        content: `call ${i} "quoted" \\ ✓`,
        username,
        model_name: "m",
        quota: COST,
        prompt_tokens: 1,
        completion_tokens: 2,
      } as any,
    });
  }
}

async function books(ctx: TestContext, userId: number) {
  const u = await ctx.deps.db
    .selectFrom("users")
    .select(["quota", "used_quota"])
    .where("id", "=", userId)
    .executeTakeFirstOrThrow();
  const logs = await ctx.deps.db
    .selectFrom("logs")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("user_id", "=", userId)
    .executeTakeFirstOrThrow();
  return { quota: Number(u.quota), used: Number(u.used_quota), logs: Number(logs.n) };
}

for (const kind of storageKinds())
  describe(`the write-behind journal on ${kind}`, () => {
    let work: string;
    let ctx: TestContext;
    beforeAll(async () => {
      work = mkdtempSync(join(tmpdir(), "sy-journal-"));
      ctx = await testContext({ kind });
    }, 30_000);
    afterAll(async () => {
      await ctx.close();
      rmSync(work, { recursive: true, force: true });
    });

    test("calls settled and never written are replayed at the next start, once; the journal is gone after", async () => {
      const user = await ctx.user(1, { quota: 10_000 });
      const config = { journalDir: join(work, "a"), instanceId: "inst/a" };
      const dir = join(config.journalDir, "inst_a");
      const journal = new Journal(dir);
      // The life that crashes: it settles, its journal has the lines, its database never hears of them.
      const crashed = new WriteBehind(ctx.deps.db, 0, dataExportPolicy(ctx.deps.options), journal);
      settleCalls(crashed, user.id, user.username, 0);
      journal.write();
      expect(readJournal(dir).records).toHaveLength(CALLS);
      expect(await books(ctx, user.id)).toEqual({ quota: 10_000, used: 0, logs: 0 });

      await replayJournal(ctx.deps.db, config, dataExportPolicy(ctx.deps.options));
      expect(await books(ctx, user.id)).toEqual({ quota: 10_000 - CALLS * COST, used: CALLS * COST, logs: CALLS });
      expect(readdirSync(dir)).toEqual([]);
      // A second start finds nothing to do.
      await replayJournal(ctx.deps.db, config, dataExportPolicy(ctx.deps.options));
      expect(await books(ctx, user.id)).toEqual({ quota: 10_000 - CALLS * COST, used: CALLS * COST, logs: CALLS });
      const logs = await ctx.deps.db
        .selectFrom("logs")
        .select("content")
        .where("user_id", "=", user.id)
        .orderBy("id")
        .execute();
      expect(logs[0].content).toBe(`call 0 "quoted" \\ ✓`);
    });

    test("a batch committed just before the crash (its segment not yet deleted) is skipped by the replay: billed once", async () => {
      const user = await ctx.user(1, { quota: 10_000 });
      const config = { journalDir: join(work, "b"), instanceId: "b" };
      const dir = join(config.journalDir, "b");
      const journal = new Journal(dir);
      const writer = new WriteBehind(ctx.deps.db, 0, dataExportPolicy(ctx.deps.options), journal);
      settleCalls(writer, user.id, user.username, 0);
      journal.write();
      // The segment as it was on disk before the batch was committed.
      const saved = join(work, "b-saved");
      cpSync(dir, saved, { recursive: true });
      await writer.flush(true);
      // Committed: its segment is gone.
      expect(readJournal(dir).records).toHaveLength(0);
      expect(await books(ctx, user.id)).toEqual({ quota: 10_000 - CALLS * COST, used: CALLS * COST, logs: CALLS });

      // The process died after the commit and before the delete: the segment is still there at the next start,
      // beside one batch that was never written.
      cpSync(saved, dir, { recursive: true });
      const next = new Journal(dir);
      const second = new WriteBehind(ctx.deps.db, 0, dataExportPolicy(ctx.deps.options), next);
      settleCalls(second, user.id, user.username, CALLS);
      next.write();
      await replayJournal(ctx.deps.db, config, dataExportPolicy(ctx.deps.options));
      expect(await books(ctx, user.id)).toEqual({
        quota: 10_000 - 2 * CALLS * COST,
        used: 2 * CALLS * COST,
        logs: 2 * CALLS,
      });
      expect(readdirSync(dir)).toEqual([]);
    });
  });
