// "Trusted" billing (a well-funded call debited on the next write-behind flush instead of held) relies on
// one process seeing every spend. Only SQLite guarantees that; on PostgreSQL and MySQL several
// instances may share the database, so every call is held before it runs.
import { describe, expect, test } from "bun:test";
import { trusted, trustedBillingAllowed, TRUST_FACTOR } from "../../server/relay/billing.ts";
import { relayFixture, logsOf, userRow } from "./fixtures.ts";
import { storageKinds } from "../helpers/db.ts";

describe("trusted() by dialect", () => {
  const hold = 500;
  const rich = hold * TRUST_FACTOR * 1000;

  test("SQLite (one process) may skip the hold for a balance far above the call's cost", () => {
    expect(trustedBillingAllowed("sqlite")).toBe(true);
    expect(trusted("sqlite", hold, 0, rich, null)).toBe(true);
    expect(trusted("sqlite", hold, 0, rich, rich)).toBe(true);
    // still held when either balance is near the cost
    expect(trusted("sqlite", hold, 0, hold * TRUST_FACTOR - 1, null)).toBe(false);
    expect(trusted("sqlite", hold, 0, rich, hold)).toBe(false);
  });

  for (const dialect of ["postgres", "mysql"] as const) {
    test(`${dialect} (possibly shared by several instances) always holds`, () => {
      expect(trustedBillingAllowed(dialect)).toBe(false);
      expect(trusted(dialect, hold, 0, rich, null)).toBe(false);
      expect(trusted(dialect, hold, 0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)).toBe(false);
    });
  }
});

describe("relay calls of a well-funded user", () => {
  for (const kind of storageKinds()) test(`${kind}: ${kind === "sqlite" ? "debited on the next flush" : "held and settled before the flush"}`, async () => {
    const fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 0 });
    try {
      await fx.option("ModelRatio", JSON.stringify({ "tb-m": 1 }));
      await fx.option("CompletionRatio", JSON.stringify({ "tb-m": 1 }));
      await fx.channel({ base_url: fx.mock.url, models: ["tb-m"] });
      const rich = 1_000_000_000;
      const user = await fx.user(rich);
      const token = await fx.token(user.id, { remain_quota: rich });
      const res = await fx.call("/v1/chat/completions", token.key, { model: "tb-m", messages: [{ role: "user", content: "hi" }], max_tokens: 10 });
      expect(res.status).toBe(200);
      await res.text();
      await Bun.sleep(50);
      // The mock reports 10 + 20 tokens at ratio 1: 30 quota.
      const before = (await userRow(fx, user.id)).quota;
      expect(before).toBe(kind === "sqlite" ? rich : rich - 30);
      await fx.flush();
      expect((await userRow(fx, user.id)).quota).toBe(rich - 30);
      expect((await logsOf(fx, user.id))[0].quota).toBe(30);
    } finally {
      await fx.close();
    }
  });
});
