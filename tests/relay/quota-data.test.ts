// The hourly quota_data rows the dashboard reads come from one place: the relay's write-behind rollup.
// DataExportEnabled off records none; DataExportInterval (minutes) spaces their writes; a graceful
// shutdown (and flushRelayWrites) writes whatever is pending.
import { describe, expect, test } from "bun:test";
import { relayFixture, logsOf, type RelayFixture } from "./fixtures.ts";
import { storageKinds } from "../helpers/db.ts";
import { testContext } from "../helpers/app.ts";
import { WriteBehind } from "../../server/jobs/writebehind.ts";
import { dataExportPolicy } from "../../server/modules/dashboard/export.ts";

const chat = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 10 });

async function served(fx: RelayFixture, model: string) {
  await fx.option("ModelRatio", JSON.stringify({ ...fx.ctx.deps.options.json("ModelRatio", {}), [model]: 1 }));
  await fx.channel({ base_url: fx.mock.url, models: [model] });
  const user = await fx.user(1_000_000);
  const token = await fx.token(user.id);
  return { user, token };
}

function quotaRows(fx: RelayFixture, userId: number) {
  return fx.ctx.deps.db.selectFrom("quota_data").selectAll().where("user_id", "=", userId).execute();
}

for (const kind of storageKinds())
  describe(`quota_data from relay calls [${kind}]`, () => {
    test("DataExportEnabled off: the call is billed and logged but records no quota_data; on: one hourly row", async () => {
      const fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 0 });
      try {
        await fx.option("DataExportEnabled", "false");
        const off = await served(fx, "qd-off");
        expect((await fx.call("/v1/chat/completions", off.token.key, chat("qd-off"))).status).toBe(200);
        await fx.flush();
        expect(await logsOf(fx, off.user.id)).toHaveLength(1);
        expect(await quotaRows(fx, off.user.id)).toHaveLength(0);

        await fx.option("DataExportEnabled", "true");
        const on = await served(fx, "qd-on");
        for (let i = 0; i < 2; i++)
          expect((await fx.call("/v1/chat/completions", on.token.key, chat("qd-on"))).status).toBe(200);
        await fx.flush();
        const rows = await quotaRows(fx, on.user.id);
        expect(rows).toHaveLength(1);
        expect(rows[0]).toMatchObject({ model_name: "qd-on", username: on.user.username });
        expect([Number(rows[0].count), Number(rows[0].token_used), Number(rows[0].quota)]).toEqual([2, 60, 60]);
        expect(Number(rows[0].created_at) % 3600).toBe(0);
      } finally {
        await fx.close();
      }
    });

    test("DataExportInterval spaces the rollup writes: periodic flushes write logs at once, quota_data only when due", async () => {
      const fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 20 });
      try {
        await fx.option("DataExportInterval", "1");
        const { user, token } = await served(fx, "qd-interval");
        expect((await fx.call("/v1/chat/completions", token.key, chat("qd-interval"))).status).toBe(200);
        for (let i = 0; i < 100 && (await logsOf(fx, user.id)).length === 0; i++) await Bun.sleep(20);
        await Bun.sleep(100);
        expect(await logsOf(fx, user.id)).toHaveLength(1);
        expect(await quotaRows(fx, user.id)).toHaveLength(0);
        // flushRelayWrites (like a graceful shutdown) writes the pending rollup now.
        await fx.flush();
        expect((await quotaRows(fx, user.id)).map((r) => Number(r.count))).toEqual([1]);
      } finally {
        await fx.close();
      }
    });

    test("a graceful shutdown writes the pending rollup", async () => {
      const fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 0 });
      try {
        const { user, token } = await served(fx, "qd-shutdown");
        expect((await fx.call("/v1/chat/completions", token.key, chat("qd-shutdown"))).status).toBe(200);
        await Bun.sleep(30);
        // Run the shutdown hooks (as closeDeps does) while the database is still open, then read it.
        for (const hook of fx.ctx.deps.shutdownHooks) await hook();
        fx.ctx.deps.shutdownHooks.length = 0;
        expect((await quotaRows(fx, user.id)).map((r) => [r.model_name, Number(r.count), Number(r.quota)])).toEqual([
          ["qd-shutdown", 1, 30],
        ]);
      } finally {
        await fx.close();
      }
    });
  });

describe("write-behind rollup timing", () => {
  test("rollups wait for the export interval across periodic flushes, then land in one row", async () => {
    const ctx = await testContext({ setup: false });
    try {
      let intervalMs = 60_000;
      const writer = new WriteBehind(ctx.deps.db, 0, { enabled: () => true, intervalMs: () => intervalMs });
      const at = Math.floor(Date.now() / 1000);
      const use = (quota: number) =>
        writer.usage({ userId: 7, username: "u7", tokenId: 0, channelId: 0, model: "m", quota, tokens: 2, at });
      use(5);
      await writer.flush();
      use(6);
      await writer.flush();
      const rows = () => ctx.deps.db.selectFrom("quota_data").selectAll().where("user_id", "=", 7).execute();
      expect(await rows()).toHaveLength(0);
      intervalMs = 0;
      await writer.flush();
      expect((await rows()).map((r) => [Number(r.count), Number(r.quota), Number(r.token_used)])).toEqual([[2, 11, 4]]);
    } finally {
      await ctx.close();
    }
  });

  test("each (user, model, hour) gets its own row: models alternating, the hour turning, calls after a rollup write", async () => {
    const ctx = await testContext({ setup: false });
    try {
      let intervalMs = 0;
      const writer = new WriteBehind(ctx.deps.db, 0, { enabled: () => true, intervalMs: () => intervalMs });
      const hour = 3600 * Math.floor(Date.now() / 3_600_000);
      const use = (userId: number, model: string, at: number, quota: number) =>
        writer.usage({ userId, username: `u${userId}`, tokenId: 0, channelId: 0, model, quota, tokens: 1, at });
      use(8, "a", hour + 10, 1);
      use(8, "b", hour + 20, 2);
      use(9, "a", hour + 30, 4);
      use(8, "a", hour + 40, 8);
      use(8, "a", hour + 3600, 16); // the next hour
      use(8, "a", hour + 50, 32); // a late call of the earlier hour
      await writer.flush();
      use(8, "a", hour + 60, 64); // after the rollups were written: added to the stored row
      intervalMs = 0;
      await writer.flush();
      const rows = await ctx.deps.db
        .selectFrom("quota_data")
        .selectAll()
        .where("user_id", "in", [8, 9])
        .orderBy("user_id")
        .orderBy("model_name")
        .orderBy("created_at")
        .execute();
      expect(
        rows.map((r) => [
          Number(r.user_id),
          r.model_name,
          Number(r.created_at) - hour,
          Number(r.count),
          Number(r.quota),
        ]),
      ).toEqual([
        [8, "a", 0, 4, 1 + 8 + 32 + 64],
        [8, "a", 3600, 1, 16],
        [8, "b", 0, 1, 2],
        [9, "a", 0, 1, 4],
      ]);
    } finally {
      await ctx.close();
    }
  });

  test("the policy reads DataExportEnabled and DataExportInterval (minutes) live from the options", async () => {
    const ctx = await testContext({ setup: false });
    try {
      const policy = dataExportPolicy(ctx.deps.options);
      await ctx.deps.options.set("DataExportEnabled", "true");
      await ctx.deps.options.set("DataExportInterval", "3");
      expect([policy.enabled(), policy.intervalMs()]).toEqual([true, 180_000]);
      await ctx.deps.options.set("DataExportEnabled", "false");
      expect(policy.enabled()).toBe(false);
    } finally {
      await ctx.close();
    }
  });
});
