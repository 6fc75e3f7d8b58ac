// The write-behind's backlog is bounded: when the database writes slower than calls settle, new calls wait
// for the writer (WriteBehind.room, awaited by admission) instead of the gateway's memory growing without end.
// On PostgreSQL and MySQL a transaction carries SERVER_SLICE_RECORDS records, on SQLite SLICE_RECORDS.
import { expect, test } from "bun:test";
import { BACKLOG_LIMIT, WriteBehind } from "../../server/jobs/writebehind.ts";
import { relayState } from "../../server/relay/state.ts";
import { storageKinds } from "../helpers/db.ts";
import { testContext } from "../helpers/app.ts";
import { relayFixture, logsOf } from "./fixtures.ts";

const policy = { enabled: () => false, intervalMs: () => 60_000 };
const usage = (userId: number) => ({
  userId,
  username: "u",
  tokenId: 0,
  channelId: 0,
  model: "m",
  quota: 1,
  tokens: 1,
  at: Math.floor(Date.now() / 1000),
});

for (const kind of storageKinds()) {
  test(`${kind}: past ${BACKLOG_LIMIT} unwritten records a caller waits for the writer; once it has written, at once`, async () => {
    const ctx = await testContext({ kind });
    try {
      const user = await ctx.user(1, { quota: 1_000_000 });
      const writer = new WriteBehind(ctx.deps.db, 0, policy);
      for (let i = 0; i < BACKLOG_LIMIT - 1; i++) writer.usage(usage(user.id));
      expect(writer.room()).toBeNull();
      writer.usage(usage(user.id));
      const wait = writer.room();
      expect(wait).toBeInstanceOf(Promise);
      let through = false;
      void wait!.then(() => (through = true));
      await Bun.sleep(20);
      // The writer was asked to flush when the caller began to wait (no timer runs in this test).
      for (let i = 0; i < 200 && !through; i++) await Bun.sleep(25);
      expect(through).toBe(true);
      expect(writer.room()).toBeNull();
      await writer.flush(true);
      const row = await ctx.deps.db
        .selectFrom("users")
        .select(["used_quota", "request_count"])
        .where("id", "=", user.id)
        .executeTakeFirstOrThrow();
      expect([Number(row.used_quota), Number(row.request_count)]).toEqual([BACKLOG_LIMIT, BACKLOG_LIMIT]);
    } finally {
      await ctx.close();
    }
  }, 30_000);
}

test("sqlite: a relay call arriving at a full backlog waits for the writer, then is served and logged", async () => {
  const fx = await relayFixture("sqlite", {}, { batchUpdateIntervalMs: 0 });
  try {
    await fx.option("ModelRatio", JSON.stringify({ "bp-m": 1 }));
    await fx.channel({ base_url: fx.mock.url, models: ["bp-m"] });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id, { unlimited_quota: true });
    const { writer } = relayState(fx.ctx.deps);
    for (let i = 0; i < BACKLOG_LIMIT; i++) writer.usage(usage(0));
    expect(writer.room()).toBeInstanceOf(Promise);
    const res = await fx.call("/v1/chat/completions", token.key, {
      model: "bp-m",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(200);
    await res.text();
    expect(writer.room()).toBeNull();
    await fx.flush();
    expect((await logsOf(fx, user.id)).length).toBe(1);
  } finally {
    await fx.close();
  }
}, 30_000);

test("drain() waits for the open streams to close (each closer counts once), and at most maxWaitMs", async () => {
  const ctx = await testContext({ kind: "sqlite" });
  try {
    const writer = new WriteBehind(ctx.deps.db, 0, policy);
    await writer.drain(1000); // none open: at once
    const a = writer.streamOpened();
    const b = writer.streamOpened();
    let drained = false;
    const draining = writer.drain(5000).then(() => (drained = true));
    a();
    a(); // a second call of the same closer does not close another stream
    await Bun.sleep(30);
    expect(drained).toBe(false);
    b();
    await draining;
    expect(drained).toBe(true);
    // A stream that never closes holds drain() for maxWaitMs only: it returns (so the wait is bounded), and not
    // before a timer due halfway through that wait has fired.
    writer.streamOpened();
    let halfway = false;
    const waiting = writer.drain(100);
    setTimeout(() => (halfway = true), 50);
    await waiting;
    expect(halfway).toBe(true);
  } finally {
    await ctx.close();
  }
});
