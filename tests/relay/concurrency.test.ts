// No overdraft under concurrency: 200+ simultaneous calls against a token (or a user) worth exactly K
// calls. At most K succeed, balances never go negative, and the logs add up to the quota used.
import { describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { relayFixture, logsOf, tokenRow, userRow } from "./fixtures.ts";

const CALLS = 220;
const K = 25;

for (const kind of storageKinds()) {
  describe(`concurrency on ${kind}`, () => {
    test(`${CALLS} simultaneous calls on a token worth ${K} calls: at most ${K} succeed, nothing negative, logs add up`, async () => {
      const fx = await relayFixture(kind);
      try {
        // A fixed price makes the hold equal the cost, so exactly K calls fit the token.
        await fx.option("ModelPrice", JSON.stringify({ "cc-fixed": 0.002 }));
        const cost = 1000;
        await fx.channel({ base_url: fx.mock.url, models: ["cc-fixed"] });
        const user = await fx.user(10_000_000);
        const token = await fx.token(user.id, { remain_quota: K * cost });
        const results = await Promise.all(
          Array.from({ length: CALLS }, () =>
            fx
              .call("/v1/chat/completions", token.key, {
                model: "cc-fixed",
                messages: [{ role: "user", content: "hi" }],
              })
              .then(async (r) => {
                await r.arrayBuffer();
                return r.status;
              }),
          ),
        );
        const ok = results.filter((s) => s === 200).length;
        expect(ok).toBeLessThanOrEqual(K);
        expect(ok).toBeGreaterThan(0);
        expect(results.every((s) => s === 200 || s === 403)).toBe(true);
        await fx.flush();
        const t = await tokenRow(fx, token.id);
        const u = await userRow(fx, user.id);
        const logs = await logsOf(fx, user.id);
        const logged = logs.reduce((s, l) => s + l.quota, 0);
        expect(t.remain_quota).toBeGreaterThanOrEqual(0);
        expect(logs.length).toBe(ok);
        expect(logged).toBe(ok * cost);
        expect(t.used_quota).toBe(logged);
        expect(u.used_quota).toBe(logged);
        expect(t.remain_quota).toBe(K * cost - logged);
        expect(u.quota).toBe(10_000_000 - logged);
        expect(fx.mock.seen.length).toBe(ok);
      } finally {
        await fx.close();
      }
    }, 60_000);

    for (const [label, maxTokens] of [
      ["holds more than the cost (refund on settle)", 40],
      ["holds less than the cost (charge on settle)", 5],
    ] as const) {
      test(`per-token billing whose hold ${label}: the user's balance is the limit, never negative, logs equal used quota`, async () => {
        const fx = await relayFixture(kind);
        try {
          // 10 prompt + 20 completion tokens at ratio 1 = 30 per call; the hold is the prompt estimate + max_tokens.
          await fx.option("ModelRatio", JSON.stringify({ "cc-ratio": 1 }));
          await fx.option("CompletionRatio", JSON.stringify({ "cc-ratio": 1 }));
          await fx.channel({ base_url: fx.mock.url, models: ["cc-ratio"] });
          const user = await fx.user(30 * K);
          const token = await fx.token(user.id, { unlimited_quota: true });
          const results = await Promise.all(
            Array.from({ length: CALLS }, () =>
              fx
                .call("/v1/chat/completions", token.key, {
                  model: "cc-ratio",
                  max_tokens: maxTokens,
                  messages: [{ role: "user", content: "hi" }],
                })
                .then(async (r) => {
                  await r.arrayBuffer();
                  return r.status;
                }),
            ),
          );
          const ok = results.filter((s) => s === 200).length;
          // With a hold at least the cost, no more than K calls can be served; a smaller hold may serve more,
          // but the settle step never takes more than is left.
          if (maxTokens >= 30) expect(ok).toBeLessThanOrEqual(K);
          expect(ok).toBeGreaterThan(0);
          await fx.flush();
          const u = await userRow(fx, user.id);
          const logs = await logsOf(fx, user.id);
          const logged = logs.reduce((s, l) => s + l.quota, 0);
          expect(logs.length).toBe(ok);
          expect(u.quota).toBeGreaterThanOrEqual(0);
          expect(logged).toBeLessThanOrEqual(30 * K);
          if (maxTokens >= 30) expect(logged).toBe(ok * 30);
          expect(u.used_quota).toBe(logged);
          expect(u.quota).toBe(30 * K - logged);
          expect((await tokenRow(fx, token.id)).used_quota).toBe(logged);
        } finally {
          await fx.close();
        }
      }, 60_000);
    }
  });
}
