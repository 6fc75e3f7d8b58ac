// The ledger: SQLite reserves in memory and debits with the log; PostgreSQL and MySQL give calls quota from
// leases (quota_holds rows topped up ahead of the calls) and the write-behind moves each call's cost out of
// its lease row with the log. After a crash every unit that left a balance is in a log or in a lease row, and
// rows nobody renews go back: at once for the instance's own previous life, after the lease time for any
// other instance.
import { describe, expect, test } from "bun:test";
import { relayFixture, logsOf, userRow, tokenRow, type RelayFixture } from "./fixtures.ts";
import { storageKinds } from "../helpers/db.ts";
import { testContext } from "../helpers/app.ts";
import {
  BALANCE_ROW_TTL_MS,
  GIVE_BACK_CONCURRENCY,
  LEASE_IDLE_MS,
  openLedger,
} from "../../server/relay/core/ledger.ts";
import { WriteBehind } from "../../server/jobs/writebehind.ts";
import { invalidateRelayCaches, relayState } from "../../server/relay/state.ts";
import { authenticate } from "../../server/relay/auth.ts";
import { sql } from "kysely";
import { dialectOf, type Database } from "../../db/index.ts";

const policy = { enabled: () => false, intervalMs: () => 60_000 };
const entry = (userId: number, quota: number) => ({
  usage: {
    userId,
    username: "u",
    tokenId: 0,
    channelId: 0,
    model: "m",
    quota,
    tokens: 1,
    at: Math.floor(Date.now() / 1000),
  },
  log: { user_id: userId, created_at: Math.floor(Date.now() / 1000), type: 2, content: "", username: "u", quota },
});

async function holds(db: Database) {
  return db.selectFrom("quota_holds").selectAll().execute();
}

describe("relay calls of a well-funded user", () => {
  for (const kind of storageKinds())
    test(`${kind}: ${kind === "sqlite" ? "reserved in memory, debited with the log" : "given from a lease, settled with the log"}`, async () => {
      const fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 0 });
      try {
        await fx.option("ModelRatio", JSON.stringify({ "tb-m": 1 }));
        await fx.option("CompletionRatio", JSON.stringify({ "tb-m": 1 }));
        await fx.channel({ base_url: fx.mock.url, models: ["tb-m"] });
        const rich = 1_000_000_000;
        const user = await fx.user(rich);
        const token = await fx.token(user.id, { remain_quota: rich });
        // The hold is the prompt estimate + max_tokens (40); the mock reports 10 + 20 tokens at ratio 1: 30.
        const res = await fx.call("/v1/chat/completions", token.key, {
          model: "tb-m",
          messages: [{ role: "user", content: "hi" }],
          max_tokens: 40,
        });
        expect(res.status).toBe(200);
        await res.text();
        await Bun.sleep(50);
        const before = (await userRow(fx, user.id)).quota;
        if (kind === "sqlite") {
          expect(before).toBe(rich);
          expect(await holds(fx.ctx.deps.db)).toEqual([]);
        } else {
          expect(before).toBeLessThan(rich - 30);
          expect((await holds(fx.ctx.deps.db)).length).toBe(1);
        }
        await fx.flush();
        expect((await userRow(fx, user.id)).quota).toBe(rich - 30);
        expect((await tokenRow(fx, token.id)).remain_quota).toBe(rich - 30);
        expect((await logsOf(fx, user.id))[0].quota).toBe(30);
        expect(await holds(fx.ctx.deps.db)).toEqual([]);
      } finally {
        await fx.close();
      }
    });
});

for (const kind of storageKinds().filter((k) => k !== "sqlite")) {
  describe(`leases on ${kind}`, () => {
    async function fixture(quota = 100_000) {
      const ctx = await testContext({ kind });
      const db = ctx.deps.db;
      const user = await ctx.user(1, { quota });
      const writer = new WriteBehind(db, 0, policy);
      return { ctx, db, user, writer };
    }
    /** A ledger of instance "a" over a fresh database with one user, stopped and closed after `run`. */
    async function withLedger(...args: [number, Run] | [Run]) {
      const [quota, run] = args.length === 2 ? args : [undefined, args[0]];
      const { ctx, db, user, writer } = await fixture(quota);
      const ledger = openLedger(db, dialectOf(db), writer, { instance: "a", leaseMs: 60_000 });
      try {
        await run({ ctx, db, user, writer, ledger });
      } finally {
        await ledger.stop();
        await ctx.close();
      }
    }
    type Run = (f: Awaited<ReturnType<typeof fixture>> & { ledger: ReturnType<typeof openLedger> }) => Promise<void>;
    const quotaOf = async (ctx: Awaited<ReturnType<typeof fixture>>["ctx"], id: number) =>
      (await userRow({ ctx } as RelayFixture, id)).quota;
    const amounts = async (db: Database) => (await holds(db)).map((r) => Number(r.amount));
    const payer = (userId: number) => ({ userId, tokenId: 0, unlimited: true });

    test("the first call tops a lease up (4× its hold, at most 1/8 of the balance beyond it); calls it covers touch no balance; a refused one changes nothing", async () => {
      await withLedger(async ({ ctx, db, user, writer, ledger }) => {
        // 4 × 3_000 = 12_000 wished; 1/8 of 100_000 = 12_500 allows it.
        const h1 = await ledger.take(payer(user.id), 3_000);
        expect([await quotaOf(ctx, user.id), await amounts(db)]).toEqual([88_000, [12_000]]);
        expect((await holds(db))[0].instance).toBe("a");
        const h2 = await ledger.take(payer(user.id), 9_000);
        expect([await quotaOf(ctx, user.id), await amounts(db)]).toEqual([88_000, [12_000]]);
        // Short by 2_000 a second later: twice the last top-up (24_000) is wished, 1/8 of 88_000 = 11_000 allowed.
        const h3 = await ledger.take(payer(user.id), 2_000);
        expect([await quotaOf(ctx, user.id), await amounts(db)]).toEqual([77_000, [23_000]]);
        await expect(ledger.take(payer(user.id), 90_000)).rejects.toThrow("user quota is not enough");
        expect([await quotaOf(ctx, user.id), await amounts(db)]).toEqual([77_000, [23_000]]);
        for (const h of [h1, h2, h3]) await ledger.giveBack(h);
        expect(await quotaOf(ctx, user.id)).toBe(77_000);
        await ledger.returnLeases!();
        expect([await quotaOf(ctx, user.id), await holds(db)]).toEqual([100_000, []]);
      });
    });

    test("stop() during a give-back already under way (the idle releaser's) waits for it: every lease is back when it returns", async () => {
      await withLedger(async ({ ctx, db, ledger }) => {
        const users = [];
        for (let i = 0; i < 6; i++) users.push((await ctx.user(1, { quota: 100_000 })).id);
        for (const id of users) await ledger.giveBack(await ledger.take(payer(id), 1_000));
        expect((await holds(db)).length).toBe(6);
        // As the releaser's timer does: not awaited, and stop() comes while it is on its first row.
        const releasing = ledger.returnLeases!();
        await ledger.stop();
        expect(await holds(db)).toEqual([]);
        for (const id of users) expect(await quotaOf(ctx, id)).toBe(100_000);
        await releasing;
      });
    });

    test(`leases go back ${GIVE_BACK_CONCURRENCY} at a time, users with several tokens included: every row gone, every balance whole`, async () => {
      await withLedger(async ({ ctx, db, ledger }) => {
        const now = Math.floor(Date.now() / 1000);
        const payers: { userId: number; tokenId: number; unlimited: boolean }[] = [];
        for (let i = 0; i < 5; i++) {
          const userId = (await ctx.user(1, { quota: 100_000 })).id;
          payers.push({ userId, tokenId: 0, unlimited: true });
          // Two tokens of the same user: two leases whose give-backs both lock that user's row.
          for (let t = 0; t < 2; t++) {
            const key = `gb${i}${t}`.padEnd(48, "k");
            await db
              .insertInto("tokens")
              .values({
                user_id: userId,
                key,
                name: "t",
                created_time: now,
                expired_time: -1,
                remain_quota: 50_000,
                unlimited_quota: false,
              })
              .execute();
            payers.push({
              userId,
              tokenId: Number(
                (await db.selectFrom("tokens").select("id").where("key", "=", key).executeTakeFirstOrThrow()).id,
              ),
              unlimited: false,
            });
          }
        }
        for (const p of payers) await ledger.giveBack(await ledger.take(p, 1_000));
        expect((await holds(db)).length).toBe(15);
        let running = 0;
        let most = 0;
        const refund = (ledger as any).refund.bind(ledger);
        (ledger as any).refund = async (...args: unknown[]) => {
          most = Math.max(most, ++running);
          try {
            return await refund(...args);
          } finally {
            running--;
          }
        };
        await ledger.stop();
        expect(most).toBe(GIVE_BACK_CONCURRENCY);
        expect(await holds(db)).toEqual([]);
        for (const p of payers) {
          expect(await quotaOf(ctx, p.userId)).toBe(100_000);
          if (p.tokenId)
            expect(
              Number(
                (
                  await db
                    .selectFrom("tokens")
                    .select("remain_quota")
                    .where("id", "=", p.tokenId)
                    .executeTakeFirstOrThrow()
                ).remain_quota,
              ),
            ).toBe(50_000);
        }
      });
    });

    test("a short balance still gives a call exactly what it needs: the last units of a balance can be spent", async () => {
      await withLedger(10_000, async ({ ctx, db, user, writer, ledger }) => {
        const h = await ledger.take(payer(user.id), 10_000);
        expect([await quotaOf(ctx, user.id), await amounts(db)]).toEqual([0, [10_000]]);
        await expect(ledger.take(payer(user.id), 1)).rejects.toThrow("user quota is not enough");
        expect(await ledger.settle(h, 10_000, (q) => entry(user.id, q))).toBe(10_000);
        await writer.flush(true);
        await ledger.returnLeases!();
        expect([await quotaOf(ctx, user.id), await holds(db)]).toEqual([0, []]);
      });
    });

    test("a token that has enough for a user who has not (or is banned) is not debited either; a short token names itself", async () => {
      await withLedger(async ({ ctx, db, user, writer, ledger }) => {
        const now = Math.floor(Date.now() / 1000);
        await db
          .insertInto("tokens")
          .values({
            user_id: user.id,
            key: "l".repeat(48),
            name: "t",
            created_time: now,
            expired_time: -1,
            remain_quota: 500_000,
            unlimited_quota: false,
          })
          .execute();
        const tokenId = Number(
          (await db.selectFrom("tokens").select("id").where("key", "=", "l".repeat(48)).executeTakeFirstOrThrow()).id,
        );
        const remain = async () =>
          Number(
            (await db.selectFrom("tokens").select("remain_quota").where("id", "=", tokenId).executeTakeFirstOrThrow())
              .remain_quota,
          );
        await expect(ledger.take({ userId: user.id, tokenId, unlimited: false }, 200_000)).rejects.toThrow(
          "user quota is not enough",
        );
        expect([await remain(), await quotaOf(ctx, user.id), (await holds(db)).length]).toEqual([500_000, 100_000, 0]);
        await db.updateTable("users").set({ status: 2 }).where("id", "=", user.id).execute();
        await expect(ledger.take({ userId: user.id, tokenId, unlimited: false }, 10)).rejects.toThrow("banned");
        expect([await remain(), (await holds(db)).length]).toEqual([500_000, 0]);
        await db.updateTable("users").set({ status: 1 }).where("id", "=", user.id).execute();
        await expect(ledger.take({ userId: user.id, tokenId, unlimited: false }, 600_000)).rejects.toThrow(
          "token quota is not enough",
        );
        // Wished 4 × 30_000; the user's 1/8 (12_500) caps it below the need, so the need it is.
        await ledger.take({ userId: user.id, tokenId, unlimited: false }, 30_000);
        expect([await remain(), await quotaOf(ctx, user.id)]).toEqual([470_000, 70_000]);
        expect(
          (await holds(db)).map((r) => [Number(r.user_id), Number(r.token_id), Number(r.amount), r.instance]),
        ).toEqual([[user.id, tokenId, 30_000, "a"]]);
      });
    });

    test("settling moves the cost out of the row in the same write as the log; the unused part stays in the lease until it goes back", async () => {
      await withLedger(async ({ ctx, db, user, writer, ledger }) => {
        const h = await ledger.take(payer(user.id), 3_000);
        expect(await ledger.settle(h, 1_200, (q) => entry(user.id, q))).toBe(1_200);
        expect(await amounts(db)).toEqual([12_000]);
        await writer.flush(true);
        expect(await amounts(db)).toEqual([10_800]);
        const row = await userRow({ ctx } as RelayFixture, user.id);
        expect([row.quota, row.used_quota]).toEqual([88_000, 1_200]);
        expect((await logsOf({ ctx } as RelayFixture, user.id)).map((l) => l.quota)).toEqual([1_200]);
        // The unused 1_800 went back to the lease: the next call of 10_000 needs no top-up.
        await ledger.take(payer(user.id), 10_000);
        expect(await amounts(db)).toEqual([10_800]);
        await ledger.returnLeases!();
        expect(await amounts(db)).toEqual([10_800]);
      });
    });

    test("an answer costing more than the hold is paid from the lease, then from the balance as far as it reaches", async () => {
      await withLedger(async ({ ctx, db, user, writer, ledger }) => {
        const small = await ledger.take(payer(user.id), 1_000);
        expect(await amounts(db)).toEqual([4_000]);
        expect(await ledger.settle(small, 3_500, (q) => entry(user.id, q))).toBe(3_500);
        expect([await quotaOf(ctx, user.id), await amounts(db)]).toEqual([96_000, [4_000]]);
        const big = await ledger.take(payer(user.id), 90_000);
        expect(await quotaOf(ctx, user.id)).toBe(6_500);
        expect(await ledger.settle(big, 250_000, (q) => entry(user.id, q))).toBe(96_500);
        await writer.flush(true);
        await ledger.returnLeases!();
        const row = await userRow({ ctx } as RelayFixture, user.id);
        expect([row.quota, row.used_quota, (await holds(db)).length]).toEqual([0, 100_000, 0]);
      });
    });

    test("a cost the hold and the lease's free quota cover settles at once; beyond them settleNow does nothing and settle() charges the balance", async () => {
      await withLedger(async ({ ctx, writer, user, ledger }) => {
        // The first top-up is 4 × 1_000: 3_000 free beside the hold.
        const h1 = await ledger.take(payer(user.id), 1_000);
        expect(ledger.settleNow!(h1, 3_500, (q) => entry(user.id, q))).toBe(3_500);
        expect(ledger.leased!(user.id, 0)).toBe(500);
        const h2 = await ledger.take(payer(user.id), 500);
        const backlog = writer.backlog();
        expect(ledger.settleNow!(h2, 2_000, (q) => entry(user.id, q))).toBeNull();
        expect([ledger.leased!(user.id, 0), writer.backlog()]).toEqual([0, backlog]);
        expect(await ledger.settle(h2, 2_000, (q) => entry(user.id, q))).toBe(2_000);
        await writer.flush(true);
        await ledger.returnLeases!();
        const row = await userRow({ ctx } as RelayFixture, user.id);
        expect([row.quota, row.used_quota]).toEqual([100_000 - 5_500, 5_500]);
        expect((await logsOf({ ctx } as RelayFixture, user.id)).map((l) => l.quota).sort((a, b) => a - b)).toEqual([
          2_000, 3_500,
        ]);
      });
    });

    test("calls arriving while a lease is topped up wait for that top-up; a burst needs a few top-ups, not one per call", async () => {
      await withLedger(10_000_000, async ({ ctx, db, user, writer, ledger }) => {
        const held = await Promise.all(Array.from({ length: 40 }, () => ledger.take(payer(user.id), 1_000)));
        // 4_000, then 8_000, 16_000, 32_000: each top-up within a second of the last asks for twice as much.
        expect(await amounts(db)).toEqual([60_000]);
        expect(await quotaOf(ctx, user.id)).toBe(10_000_000 - 60_000);
        for (const h of held) await ledger.settle(h, 500, (q) => entry(user.id, q));
        await writer.flush(true);
        await ledger.returnLeases!();
        const row = await userRow({ ctx } as RelayFixture, user.id);
        expect([row.quota, row.used_quota, (await holds(db)).length]).toEqual([10_000_000 - 20_000, 20_000, 0]);
      });
    });

    test(`a lease nothing uses goes back by itself after ${LEASE_IDLE_MS} ms; one with a call running does not`, async () => {
      await withLedger(async ({ ctx, db, user, writer, ledger }) => {
        await db
          .insertInto("tokens")
          .values({
            user_id: user.id,
            key: "i".repeat(48),
            name: "t",
            created_time: 1,
            expired_time: -1,
            remain_quota: 1_000_000,
            unlimited_quota: false,
          })
          .execute();
        const tokenId = Number(
          (await db.selectFrom("tokens").select("id").where("key", "=", "i".repeat(48)).executeTakeFirstOrThrow()).id,
        );
        const idle = await ledger.take(payer(user.id), 1_000);
        await ledger.settle(idle, 700, (q) => entry(user.id, q));
        await ledger.take({ userId: user.id, tokenId, unlimited: false }, 1_000);
        await writer.flush(true);
        expect((await holds(db)).length).toBe(2);
        // Idle for the lease time, then as long as the releaser takes (a loaded database server is slow): the
        // idle lease goes; the one whose call is still running stays, however long that took.
        await Bun.sleep(LEASE_IDLE_MS);
        for (let i = 0; i < 200 && (await holds(db)).length > 1; i++) await Bun.sleep(50);
        expect((await holds(db)).map((r) => Number(r.token_id))).toEqual([tokenId]);
        expect(await quotaOf(ctx, user.id)).toBe(100_000 - 700 - 4_000);
      });
    });

    test("a lease with a settled call not yet written is not given back, even after a free call on a placeholder copied from its hold", async () => {
      await withLedger(async ({ ctx, db, user, writer, ledger }) => {
        const h = await ledger.take(payer(user.id), 1_000);
        await ledger.settle(h, 500, (q) => entry(user.id, q));
        // A realtime session's next-turn placeholder: the same hold with nothing in it, settled free.
        await ledger.settle({ ...h, amount: 0 }, 0, (q) => entry(user.id, q));
        await writer.flush(true);
        const next = await ledger.take(payer(user.id), 100);
        await ledger.settle(next, 100, (q) => entry(user.id, q));
        await ledger.returnLeases!();
        expect(await amounts(db)).toEqual([3_500]);
        await writer.flush(true);
        await ledger.returnLeases!();
        const row = await userRow({ ctx } as RelayFixture, user.id);
        expect([row.quota, row.used_quota, (await holds(db)).length]).toEqual([99_400, 600, 0]);
      });
    });

    test("after a crash: the restarted instance refunds its previous life's leases at once; a live instance's are kept", async () => {
      const { ctx, db, user, writer } = await fixture();
      const crashed = openLedger(db, dialectOf(db), writer, { instance: "host-a", leaseMs: 60_000 });
      const other = openLedger(db, dialectOf(db), new WriteBehind(db, 0, policy), {
        instance: "host-b",
        leaseMs: 60_000,
      });
      let restarted: ReturnType<typeof openLedger> | null = null;
      try {
        await crashed.take(payer(user.id), 30_000);
        await other.take(payer(user.id), 20_000);
        expect(await quotaOf(ctx, user.id)).toBe(50_000);
        // kill -9: nothing is flushed or given back, the timers just stop.
        (crashed as any).returnLeases = async () => {};
        await crashed.stop();
        restarted = openLedger(db, dialectOf(db), new WriteBehind(db, 0, policy), {
          instance: "host-a",
          leaseMs: 60_000,
        });
        for (let i = 0; i < 100 && (await holds(db)).length > 1; i++) await Bun.sleep(20);
        expect((await holds(db)).map((r) => r.instance)).toEqual(["host-b"]);
        expect(await quotaOf(ctx, user.id)).toBe(80_000);
      } finally {
        await restarted?.stop();
        await other.stop();
        await ctx.close();
      }
    });

    test("leases nobody renews past the lease time are refunded by any instance, once; renewed ones are not", async () => {
      const { ctx, db, user, writer } = await fixture();
      const dead = openLedger(db, dialectOf(db), writer, { instance: "dead", leaseMs: 60_000 });
      const live = openLedger(db, dialectOf(db), new WriteBehind(db, 0, policy), { instance: "live", leaseMs: 2_000 });
      const sweeper = openLedger(db, dialectOf(db), new WriteBehind(db, 0, policy), {
        instance: "sweeper",
        leaseMs: 2_000,
      });
      try {
        await dead.take(payer(user.id), 10_000);
        await live.take(payer(user.id), 20_000);
        (dead as any).returnLeases = async () => {};
        await dead.stop();
        const old = Math.floor(Date.now() / 1000) - 3_600;
        await db
          .updateTable("quota_holds")
          .set({ renewed_at: old, created_at: old })
          .where("instance", "=", "dead")
          .execute();
        // "live" keeps renewing (every lease/4 = 500 ms); "dead" is refunded by whichever instance sweeps first.
        for (let i = 0; i < 300 && (await holds(db)).length > 1; i++) await Bun.sleep(20);
        await Bun.sleep(3_000);
        expect((await holds(db)).map((r) => r.instance)).toEqual(["live"]);
        expect(await quotaOf(ctx, user.id)).toBe(80_000);
      } finally {
        await live.stop();
        await sweeper.stop();
        await ctx.close();
      }
    });

    test("a call settled after its lease was refunded as abandoned is charged again, and the next call gets a new lease: the books still balance", async () => {
      const { ctx, db, user, writer } = await fixture();
      const ledger = openLedger(db, dialectOf(db), writer, { instance: "slow", leaseMs: 60_000 });
      try {
        const h = await ledger.take(payer(user.id), 3_000);
        const [first] = await holds(db);
        // Another instance decided this one was dead and refunded the row.
        await db.deleteFrom("quota_holds").execute();
        await db
          .updateTable("users")
          .set((eb) => ({ quota: eb("quota", "+", 12_000) }))
          .where("id", "=", user.id)
          .execute();
        await ledger.settle(h, 7_000, (q) => entry(user.id, q));
        await writer.flush(true);
        let row = await userRow({ ctx } as RelayFixture, user.id);
        expect([row.quota, row.used_quota]).toEqual([93_000, 7_000]);
        // What the lost lease had is not given again: a new one is topped up.
        const next = await ledger.take(payer(user.id), 1_000);
        const now = await holds(db);
        expect(now.length).toBe(1);
        expect(now[0].id).not.toBe(first.id);
        await ledger.giveBack(next);
        await ledger.returnLeases!();
        row = await userRow({ ctx } as RelayFixture, user.id);
        expect([row.quota, (await holds(db)).length]).toEqual([93_000, 0]);
      } finally {
        await ledger.stop();
        await ctx.close();
      }
    });
  });
}

// A token whose row reads 0 because this instance's lease holds the rest is still usable here.
for (const kind of storageKinds().filter((k) => k !== "sqlite"))
  test(`${kind}: a token whose remaining quota is all in this instance's lease is not refused as exhausted`, async () => {
    const ctx = await testContext({ kind });
    try {
      const user = await ctx.user(1, { quota: 1_000_000 });
      const db = ctx.deps.db;
      await db
        .insertInto("tokens")
        .values({
          user_id: user.id,
          key: "e".repeat(48),
          name: "t",
          created_time: 1,
          expired_time: -1,
          remain_quota: 5_000,
          unlimited_quota: false,
        })
        .execute();
      const tokenId = Number(
        (await db.selectFrom("tokens").select("id").where("key", "=", "e".repeat(48)).executeTakeFirstOrThrow()).id,
      );
      const { ledger, writer } = relayState(ctx.deps);
      const h = await ledger.take({ userId: user.id, tokenId, unlimited: false }, 5_000);
      await ledger.settle(h, 100, (q) => entry(user.id, q));
      expect(
        Number(
          (await db.selectFrom("tokens").select("remain_quota").where("id", "=", tokenId).executeTakeFirstOrThrow())
            .remain_quota,
        ),
      ).toBe(0);
      invalidateRelayCaches(ctx.deps);
      expect((await authenticate(ctx.deps, "sk-" + "e".repeat(48), "127.0.0.1")).tokenId).toBe(tokenId);
      // A call bigger than the lease is refused, but the token is not marked exhausted: its 4_900 come back.
      await expect(ledger.take({ userId: user.id, tokenId, unlimited: false }, 6_000)).rejects.toMatchObject({
        code: "insufficient_token_quota",
      });
      expect(
        (await db.selectFrom("tokens").select("status").where("id", "=", tokenId).executeTakeFirstOrThrow()).status,
      ).toBe(1);
      // Once the lease is back in the row, and spent there, the token is exhausted again.
      await writer.flush(true);
      await ledger.returnLeases!();
      await db.updateTable("tokens").set({ remain_quota: 0 }).where("id", "=", tokenId).execute();
      invalidateRelayCaches(ctx.deps);
      await expect(authenticate(ctx.deps, "sk-" + "e".repeat(48), "127.0.0.1")).rejects.toMatchObject({
        status: 403,
        code: "insufficient_token_quota",
      });
    } finally {
      await ctx.close();
    }
  });

// PostgreSQL tops leases up on a pool of its own that commits without waiting for the WAL flush; everything
// else (refunds, settlements, logs) stays on the synchronous pool. A top-up lost with an unflushed commit (the
// server crashed) takes its debit with it, and the settlements find the row short or gone and charge in full.
if (storageKinds().includes("postgres"))
  test("postgres: the relay's ledger tops leases up on an async-commit pool; the main pool stays synchronous", async () => {
    const ctx = await testContext({ kind: "postgres" });
    try {
      const { ledger } = relayState(ctx.deps);
      const topUpDb = (ledger as any).opts.topUpDb as typeof ctx.deps.db;
      expect(topUpDb).toBeDefined();
      const setting = async (d: typeof ctx.deps.db) =>
        (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(d)).rows[0].synchronous_commit;
      expect(await setting(topUpDb)).toBe("off");
      expect(await setting(ctx.deps.db)).toBe("on");
      const user = await ctx.user(1, { quota: 50_000 });
      const h = await ledger.take({ userId: user.id, tokenId: 0, unlimited: true }, 20_000);
      expect(
        Number(
          (await ctx.deps.db.selectFrom("users").select("quota").where("id", "=", user.id).executeTakeFirstOrThrow())
            .quota,
        ),
      ).toBe(30_000);
      await ledger.giveBack(h);
      await ledger.returnLeases!();
      expect(
        Number(
          (await ctx.deps.db.selectFrom("users").select("quota").where("id", "=", user.id).executeTakeFirstOrThrow())
            .quota,
        ),
      ).toBe(50_000);
      // A token with enough for a user without: the statement undoes itself (division by zero) on this pool too.
      const token = await ctx.deps.db
        .insertInto("tokens")
        .values({
          user_id: user.id,
          key: "asyncpool" + "x".repeat(39),
          name: "t",
          created_time: 1,
          expired_time: -1,
          remain_quota: 1_000_000,
          unlimited_quota: false,
        } as any)
        .returning("id")
        .executeTakeFirstOrThrow();
      await expect(
        ledger.take({ userId: user.id, tokenId: Number(token.id), unlimited: false }, 60_000),
      ).rejects.toMatchObject({ status: 403, code: "insufficient_user_quota" });
      const t = await ctx.deps.db
        .selectFrom("tokens")
        .select("remain_quota")
        .where("id", "=", Number(token.id))
        .executeTakeFirstOrThrow();
      expect(Number(t.remain_quota)).toBe(1_000_000);
      expect(
        Number(
          (await ctx.deps.db.selectFrom("users").select("quota").where("id", "=", user.id).executeTakeFirstOrThrow())
            .quota,
        ),
      ).toBe(50_000);
      expect((await ctx.deps.db.selectFrom("quota_holds").select("id").execute()).length).toBe(0);
    } finally {
      await ctx.close();
    }
  });

describe("memory holds on SQLite", () => {
  test("reservations count against the balance until the debit is written, including while it is being written", async () => {
    const ctx = await testContext();
    const db = ctx.deps.db;
    const user = await ctx.user(1, { quota: 10_000 });
    const writer = new WriteBehind(db, 0, policy);
    const ledger = openLedger(db, "sqlite", writer, { instance: "x", leaseMs: 60_000 });
    try {
      const payer = { userId: user.id, tokenId: 0, unlimited: true };
      const a = await ledger.take(payer, 6_000);
      await expect(ledger.take(payer, 6_000)).rejects.toThrow("user quota is not enough");
      await ledger.settle(a, 6_000, (q) => entry(user.id, q));
      await expect(ledger.take(payer, 6_000)).rejects.toThrow("user quota is not enough");
      const flushing = writer.flush(true);
      // Mid-write the debit is still counted (the reader may or may not see the transaction's update yet).
      await expect(ledger.take(payer, 6_000)).rejects.toThrow("user quota is not enough");
      await flushing;
      expect((await userRow({ ctx } as RelayFixture, user.id)).quota).toBe(4_000);
      const b = await ledger.take(payer, 4_000);
      await ledger.giveBack(b);
      expect(writer.unsettled("user", user.id)).toBe(0);
    } finally {
      await ctx.close();
    }
  });
});

describe("kept balance rows on SQLite", () => {
  test("a balance changed outside the ledger (a top-up, a ban) is seen within BALANCE_ROW_TTL_MS; its own debits at once", async () => {
    const ctx = await testContext();
    const db = ctx.deps.db;
    const user = await ctx.user(1, { quota: 1_000 });
    const writer = new WriteBehind(db, 0, policy);
    const ledger = openLedger(db, "sqlite", writer, { instance: "x", leaseMs: 60_000 });
    try {
      const payer = { userId: user.id, tokenId: 0, unlimited: true };
      await ledger.settle(await ledger.take(payer, 1_000), 1_000, (q) => entry(user.id, q));
      await writer.flush(true);
      // The debit was written and the kept row dropped with it: the empty balance shows at once.
      await expect(ledger.take(payer, 1)).rejects.toThrow("user quota is not enough");
      await db.updateTable("users").set({ quota: 5_000 }).where("id", "=", user.id).execute();
      await Bun.sleep(BALANCE_ROW_TTL_MS + 50);
      const h = await ledger.take(payer, 5_000);
      await ledger.giveBack(h);
      await db.updateTable("users").set({ status: 2 }).where("id", "=", user.id).execute();
      await Bun.sleep(BALANCE_ROW_TTL_MS + 50);
      await expect(ledger.take(payer, 1)).rejects.toThrow("banned");
    } finally {
      await ctx.close();
    }
  });
});
