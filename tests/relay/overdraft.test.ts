// No overdraft, any K, any concurrency, any database: a balance worth exactly K calls at a fixed price, hit
// by 1000 simultaneous calls, serves exactly K of them, and the books balance to the unit:
// initial − final == used_quota == sum of the consume logs. K above the old "trusted" threshold (100 holds)
// is what used to overdraw on SQLite, where well-funded calls were debited in memory while the holds of
// the others read a database that did not show those debits yet.
import { describe, expect, test } from "bun:test";
import { storageKinds, tempDatabase } from "../helpers/db.ts";
import { relayFixture, logsOf, tokenRow, userRow, type RelayFixture } from "./fixtures.ts";
import { invalidateRelayCaches } from "../../server/relay/state.ts";

const CALLS = 1000;
const COST = 1000; // ModelPrice 0.002 × 500000

async function burst(fx: RelayFixture, key: string, model: string, calls: number, stream = false): Promise<number[]> {
  return Promise.all(
    Array.from({ length: calls }, () =>
      fx
        .call("/v1/chat/completions", key, { model, stream, messages: [{ role: "user", content: "hi" }] })
        .then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
    ),
  );
}

async function books(fx: RelayFixture, userId: number, tokenId: number) {
  await fx.flush();
  const logs = await logsOf(fx, userId);
  return {
    user: await userRow(fx, userId),
    token: await tokenRow(fx, tokenId),
    logs: logs.length,
    logged: logs.reduce((s, l) => s + l.quota, 0),
  };
}

for (const kind of storageKinds()) {
  describe(`no overdraft on ${kind}`, () => {
    for (const K of kind === "sqlite" ? [50, 150, 500] : [150, 500]) {
      test(`user balance worth ${K} calls, ${CALLS} at once: exactly ${K} served, books exact`, async () => {
        const fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 20 });
        try {
          await fx.option("ModelPrice", JSON.stringify({ "od-fixed": 0.002 }));
          await fx.channel({ base_url: fx.mock.url, models: ["od-fixed"] });
          const initial = K * COST;
          const user = await fx.user(initial);
          const token = await fx.token(user.id, { unlimited_quota: true });
          const results = await burst(fx, token.key, "od-fixed", CALLS);
          const ok = results.filter((s) => s === 200).length;
          expect(results.every((s) => s === 200 || s === 403)).toBe(true);
          expect(ok).toBe(K);
          const b = await books(fx, user.id, token.id);
          expect(b.user.quota).toBe(0);
          expect(initial - b.user.quota).toBe(b.user.used_quota);
          expect(b.logs).toBe(ok);
          expect(b.logged).toBe(b.user.used_quota);
          expect(fx.mock.seen.length).toBe(K);
        } finally {
          await fx.close();
        }
      }, 120_000);
    }

    test(`token worth 150 calls on a rich user, ${CALLS} at once, half streaming: exactly 150 served`, async () => {
      const fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 20 });
      try {
        await fx.option("ModelPrice", JSON.stringify({ "od-fixed": 0.002 }));
        await fx.channel({ base_url: fx.mock.url, models: ["od-fixed"] });
        const rich = 1_000_000_000;
        const user = await fx.user(rich);
        const token = await fx.token(user.id, { remain_quota: 150 * COST });
        const results = (
          await Promise.all([
            burst(fx, token.key, "od-fixed", CALLS / 2),
            burst(fx, token.key, "od-fixed", CALLS / 2, true),
          ])
        ).flat();
        expect(results.filter((s) => s === 200).length).toBe(150);
        const b = await books(fx, user.id, token.id);
        expect(b.token.remain_quota).toBe(0);
        expect(b.token.used_quota).toBe(150 * COST);
        expect(rich - b.user.quota).toBe(b.user.used_quota);
        expect(b.logged).toBe(150 * COST);
      } finally {
        await fx.close();
      }
    }, 120_000);

    test("per-token prices whose answer costs more than the hold: never more than the balance, books exact", async () => {
      const fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 20 });
      try {
        // 10 prompt + 20 completion tokens at ratio 1 = 30 per call, but max_tokens 5 holds far less.
        await fx.option("ModelRatio", JSON.stringify({ "od-ratio": 1 }));
        await fx.option("CompletionRatio", JSON.stringify({ "od-ratio": 1 }));
        await fx.channel({ base_url: fx.mock.url, models: ["od-ratio"] });
        const initial = 30 * 300;
        const user = await fx.user(initial);
        const token = await fx.token(user.id, { unlimited_quota: true });
        const results = await Promise.all(
          Array.from({ length: 600 }, () =>
            fx
              .call("/v1/chat/completions", token.key, {
                model: "od-ratio",
                max_tokens: 5,
                messages: [{ role: "user", content: "hi" }],
              })
              .then(async (r) => (await r.arrayBuffer(), r.status)),
          ),
        );
        const ok = results.filter((s) => s === 200).length;
        expect(ok).toBeGreaterThan(0);
        const b = await books(fx, user.id, token.id);
        expect(b.user.quota).toBeGreaterThanOrEqual(0);
        expect(initial - b.user.quota).toBe(b.user.used_quota);
        expect(b.logged).toBe(b.user.used_quota);
        expect(b.logs).toBe(ok);
      } finally {
        await fx.close();
      }
    }, 120_000);
  });
}

// Instances sharing a database each pay their calls from leases of their own: together they never serve more
// than the balance pays for, and once both have given their leases back the books balance to the unit.
for (const kind of storageKinds().filter((k) => k !== "sqlite")) {
  test(`${kind}: two instances, one user worth 200 calls, ${CALLS} at once across both: at most 200 served, books exact`, async () => {
    const database = await tempDatabase(kind);
    const a = await relayFixture(kind, {}, { batchUpdateIntervalMs: 20, instanceId: "od-a" }, false, database);
    const b = await relayFixture(kind, {}, { batchUpdateIntervalMs: 20, instanceId: "od-b" }, false, database);
    try {
      for (const fx of [a, b]) await fx.option("ModelPrice", JSON.stringify({ "od-two": 0.002 }));
      await a.channel({ base_url: a.mock.url, models: ["od-two"] });
      invalidateRelayCaches(b.ctx.deps);
      const K = 200;
      const user = await a.user(K * COST);
      const token = await a.token(user.id, { remain_quota: 10 * K * COST });
      const results = (
        await Promise.all([burst(a, token.key, "od-two", CALLS / 2), burst(b, token.key, "od-two", CALLS / 2, true)])
      ).flat();
      const ok = results.filter((s) => s === 200).length;
      expect(results.every((s) => s === 200 || s === 403)).toBe(true);
      expect(ok).toBeLessThanOrEqual(K);
      expect(ok).toBeGreaterThan(K / 2);
      await b.flush();
      const books_ = await books(a, user.id, token.id);
      expect(books_.user.quota).toBe(K * COST - ok * COST);
      expect(books_.user.used_quota).toBe(ok * COST);
      expect(books_.token.remain_quota).toBe(10 * K * COST - ok * COST);
      expect([books_.logs, books_.logged]).toEqual([ok, ok * COST]);
      expect(
        Number(
          (
            await a.ctx.deps.db
              .selectFrom("quota_holds")
              .select((eb) => eb.fn.countAll().as("n"))
              .executeTakeFirstOrThrow()
          ).n,
        ),
      ).toBe(0);
    } finally {
      await b.close();
      await a.close();
      await database.drop();
    }
  }, 120_000);
}
