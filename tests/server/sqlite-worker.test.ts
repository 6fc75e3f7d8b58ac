// SQLite's synchronous work off the event loop: a worker thread with its own connection checkpoints the WAL
// (the main connection's automatic checkpoint is off while it runs) and commits the write-behind's
// transactions, each slice of records (logs with their debits and counters) whole or not at all.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, rawSqlite, type Database } from "../../db/index.ts";
import {
  sqliteWorkerFor,
  startSqliteWorker,
  stopSqliteWorker,
  WORKER_AUTOCHECKPOINT_PAGES,
} from "../../server/infra/sqlite-worker.ts";
import { insertRows } from "../../db/bulk.ts";
import { SLICE_RECORDS, WriteBehind } from "../../server/jobs/writebehind.ts";
import { BALANCE_ROW_TTL_MS, openLedger } from "../../server/relay/core/ledger.ts";

async function fileDb() {
  const dir = mkdtempSync(join(tmpdir(), "sy-sqlw-"));
  const path = join(dir, "x.db");
  const db = await openDatabase({ kind: "sqlite", url: "", sqlitePath: path });
  return {
    db,
    path,
    done: async () => {
      await stopSqliteWorker(db);
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test("a worker checkpoints the WAL; the main connection does not", async () => {
  const { db, path, done } = await fileDb();
  const cp = startSqliteWorker(db, path, 50)!;
  try {
    expect(cp).not.toBeNull();
    await cp.next();
    const raw = rawSqlite(db)!;
    expect((raw.query("PRAGMA wal_autocheckpoint").get() as any).wal_autocheckpoint).toBe(0);
    const rows = Array.from({ length: 5000 }, (_, i) => ({
      user_id: 1,
      created_at: i,
      type: 2,
      content: "x".repeat(200),
      username: "u",
      quota: 1,
    }));
    await insertRows(db, "logs", rows);
    // The main connection never checkpoints now, so only the worker can have copied the ~1 MB of rows from
    // the log into the database file: wait for a checkpoint that took every frame, then look at the file.
    let r = await cp.next();
    for (let i = 0; i < 40 && (r.checkpointed < r.log || statSync(path).size < 1_000_000); i++) r = await cp.next();
    expect(r.checkpointed).toBe(r.log);
    expect(statSync(path).size).toBeGreaterThan(1_000_000);
    await cp.stop();
    expect((rawSqlite(db)!.query("PRAGMA wal_autocheckpoint").get() as any).wal_autocheckpoint).toBe(1000);
  } finally {
    await done();
  }
});

test("the worker's connection keeps temporary data in memory: a slice's statement journal never spills to a file", async () => {
  const { db, path, done } = await fileDb();
  const worker = startSqliteWorker(db, path, 600_000)!;
  try {
    const pragmas = await worker.pragmas();
    // 2 = MEMORY. With SQLite's default (a file past 64 KiB of statement journal) a 256-record slice made
    // ~14 temporary files and ~560 page writes to them a second at 11,000 calls/s.
    expect(pragmas.temp_store).toBe(2);
    expect(pragmas.wal_autocheckpoint).toBe(WORKER_AUTOCHECKPOINT_PAGES);
    expect(String(pragmas.journal_mode)).toBe("wal");
  } finally {
    await done();
  }
});

test("the worker's own commits checkpoint only past WORKER_AUTOCHECKPOINT_PAGES of WAL, not SQLite's 1,000", async () => {
  const { db, path, done } = await fileDb();
  // No timer checkpoint during the test: only the worker connection's automatic one could copy the WAL back.
  const worker = startSqliteWorker(db, path, 600_000)!;
  try {
    expect(WORKER_AUTOCHECKPOINT_PAGES).toBeGreaterThan(2_500);
    // Twelve transactions of ~250 pages each (~3,000 WAL frames). Checkpointing at 1,000 frames would restart the
    // WAL from its start every few commits and leave the file near 1,250 frames.
    const content = "x".repeat(3_000);
    for (let t = 0; t < 12; t++) {
      const parameters: unknown[] = [];
      for (let i = 0; i < 300; i++) parameters.push(1, t * 300 + i, 2, content, "u", 1);
      const sql = `insert into logs (user_id, created_at, type, content, username, quota) values ${Array.from({ length: 300 }, () => "(?, ?, ?, ?, ?, ?)").join(", ")}`;
      await worker.write([{ sql, parameters }]);
    }
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(2_500 * 4096);
  } finally {
    await done();
  }
});

/** A started worker that counts the transactions it is given. */
function countingWorker(db: Database, path: string) {
  const worker = startSqliteWorker(db, path)!;
  const counted = { transactions: 0 };
  const write = worker.write.bind(worker);
  worker.write = (statements) => (counted.transactions++, write(statements));
  return counted;
}

const at = Math.floor(Date.now() / 1000);
const entry = (userId: number, tokenId: number, quota: number, extraLog: Record<string, unknown> = {}) => ({
  usage: { userId, username: "u", tokenId, channelId: 7, model: "m", quota, tokens: 3, at },
  log: { user_id: userId, created_at: at, type: 2, content: "c", username: "u", quota, ...extraLog },
});

async function seed(db: Database) {
  await db
    .insertInto("users")
    .values({ id: 1, username: "u", password: "x", quota: 1_000_000, group: "default" } as any)
    .execute();
  await db
    .insertInto("tokens")
    .values({ id: 1, user_id: 1, key: "k".repeat(48), name: "t", created_time: at, remain_quota: 1_000_000 } as any)
    .execute();
  await db
    .insertInto("channels")
    .values({ id: 7, type: 1, key: "x", name: "c", created_time: at, models: "m", group: "default" } as any)
    .execute();
}

test("the write-behind commits its slices on the worker: logs, debits, counters and rollups, exactly", async () => {
  const { db, path, done } = await fileDb();
  try {
    const worker = countingWorker(db, path);
    await seed(db);
    const writer = new WriteBehind(db, 0, { enabled: () => true, intervalMs: () => 0 });
    const committed: number[] = [];
    writer.onCommitted = (users) => committed.push(...users.keys());
    const n = SLICE_RECORDS * 2 + 17;
    for (let i = 0; i < n; i++) {
      writer.reserve(1, 1, 10);
      writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 10 }, 3, entry(1, 1, 3));
    }
    expect(writer.unsettled("user", 1)).toBe(3 * n);
    await writer.flush(true);
    expect(writer.unsettled("user", 1)).toBe(0);
    expect(writer.unsettled("token", 1)).toBe(0);
    expect(committed.length).toBe(3);
    expect(worker.transactions).toBe(3);
    const user = await db
      .selectFrom("users")
      .select(["quota", "used_quota", "request_count"])
      .where("id", "=", 1)
      .executeTakeFirstOrThrow();
    expect(user).toEqual({ quota: 1_000_000 - 3 * n, used_quota: 3 * n, request_count: n });
    const token = await db
      .selectFrom("tokens")
      .select(["remain_quota", "used_quota"])
      .where("id", "=", 1)
      .executeTakeFirstOrThrow();
    expect(token).toEqual({ remain_quota: 1_000_000 - 3 * n, used_quota: 3 * n });
    expect(
      (await db.selectFrom("channels").select("used_quota").where("id", "=", 7).executeTakeFirstOrThrow()).used_quota,
    ).toBe(3 * n);
    expect(
      Number(
        (
          await db
            .selectFrom("logs")
            .select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      ),
    ).toBe(n);
    const rollup = await db.selectFrom("quota_data").select(["count", "quota", "token_used"]).execute();
    expect(rollup).toEqual([{ count: n, quota: 3 * n, token_used: 3 * n }]);
    // A second flush adds to the same rollup row (update, not a second insert).
    writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 0, entry(1, 1, 0));
    await writer.flush(true);
    expect(await db.selectFrom("quota_data").select(["count"]).execute()).toEqual([{ count: n + 1 }]);
  } finally {
    await done();
  }
});

test("a slice that fails is rolled back whole and stays queued with its debits; the ones before it are committed", async () => {
  const { db, path, done } = await fileDb();
  try {
    expect(startSqliteWorker(db, path)).not.toBeNull();
    await seed(db);
    const writer = new WriteBehind(db, 0, { enabled: () => false, intervalMs: () => 0 });
    for (let i = 0; i < SLICE_RECORDS; i++)
      writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 2, entry(1, 1, 2));
    // The second slice holds a log the database refuses.
    writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 5, entry(1, 1, 5, { no_such_column: 1 }));
    writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 5, entry(1, 1, 5));
    await expect(writer.flush()).rejects.toThrow();
    expect((await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow()).quota).toBe(
      1_000_000 - 2 * SLICE_RECORDS,
    );
    expect(
      Number(
        (
          await db
            .selectFrom("logs")
            .select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      ),
    ).toBe(SLICE_RECORDS);
    expect(writer.unsettled("user", 1)).toBe(10);
    expect(writer.backlog()).toBeGreaterThan(0);
  } finally {
    await done();
  }
});

const logCount = async (db: Database) =>
  Number(
    (
      await db
        .selectFrom("logs")
        .select((eb) => eb.fn.countAll().as("n"))
        .executeTakeFirstOrThrow()
    ).n,
  );

test("a running writer commits a full slice at once; the slice filling up waits for the timer", async () => {
  const { db, path, done } = await fileDb();
  try {
    expect(startSqliteWorker(db, path)).not.toBeNull();
    await seed(db);
    // A timer far away: only a full slice can start a write before stop().
    const writer = new WriteBehind(db, 60_000, { enabled: () => false, intervalMs: () => 0 });
    writer.start();
    // The second slice fills while the first is being written: it goes when that write ends, and the five
    // records after it stay with the slice filling up.
    const full = 2 * SLICE_RECORDS;
    for (let i = 0; i < full + 5; i++)
      writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 2, entry(1, 1, 2));
    for (let i = 0; i < 200 && (await logCount(db)) < full; i++) await Bun.sleep(10);
    await Bun.sleep(20);
    expect(await logCount(db)).toBe(full);
    expect((await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow()).quota).toBe(
      1_000_000 - 2 * full,
    );
    // The five records of the slice filling up still count against the balance, and only they.
    expect(writer.unsettled("user", 1)).toBe(10);
    expect(writer.unsettled("token", 1)).toBe(10);
    await writer.stop();
    expect(await logCount(db)).toBe(full + 5);
    expect(writer.unsettled("user", 1)).toBe(0);
  } finally {
    await done();
  }
});

test("a full slice the database refuses stays queued and is not retried in a loop; the next flush tries it again", async () => {
  const { db, path, done } = await fileDb();
  try {
    const worker = countingWorker(db, path);
    await seed(db);
    const writer = new WriteBehind(db, 60_000, { enabled: () => false, intervalMs: () => 0 });
    writer.start();
    const errors: string[] = [];
    const log = console.error;
    console.error = (...a: unknown[]) => void errors.push(a.join(" "));
    try {
      writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 5, entry(1, 1, 5, { no_such_column: 1 }));
      for (let i = 1; i < SLICE_RECORDS; i++)
        writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 2, entry(1, 1, 2));
      await Bun.sleep(300);
    } finally {
      console.error = log;
    }
    expect(worker.transactions).toBe(1);
    expect(errors.some((e) => e.includes("write-behind flush failed"))).toBe(true);
    expect(await logCount(db)).toBe(0);
    expect(writer.unsettled("user", 1)).toBe(5 + 2 * (SLICE_RECORDS - 1));
    await expect(writer.flush()).rejects.toThrow();
    expect(worker.transactions).toBe(2);
    expect(writer.unsettled("user", 1)).toBe(5 + 2 * (SLICE_RECORDS - 1));
  } finally {
    await done();
  }
});

test("without its worker (stopped or failed) the write-behind writes on the main connection", async () => {
  const { db, path, done } = await fileDb();
  try {
    startSqliteWorker(db, path);
    await seed(db);
    await stopSqliteWorker(db);
    expect(sqliteWorkerFor(db)).toBeNull();
    const writer = new WriteBehind(db, 0, { enabled: () => false, intervalMs: () => 0 });
    for (let i = 0; i < 300; i++) writer.settled({ lease: null, userId: 1, tokenId: 1, amount: 0 }, 1, entry(1, 1, 1));
    await writer.flush();
    expect((await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow()).quota).toBe(
      1_000_000 - 300,
    );
    expect(writer.unsettled("user", 1)).toBe(0);
  } finally {
    await done();
  }
});

test("the ledger's own commits adjust its kept balance rows instead of dropping them: no read again, and what is left stays exact", async () => {
  const { db, path, done } = await fileDb();
  try {
    startSqliteWorker(db, path);
    await seed(db);
    const writer = new WriteBehind(db, 0, { enabled: () => false, intervalMs: () => 60_000 });
    const ledger = openLedger(db, "sqlite", writer, { instance: "x", leaseMs: 60_000 }) as any;
    let reads = 0;
    for (const q of [ledger.userQuery, ledger.tokenQuery]) {
      const get = q.get.bind(q);
      q.get = (...a: unknown[]) => (reads++, get(...a));
    }
    const quotaNow = () =>
      (rawSqlite(db)!.query("select quota from users where id = 1").get() as { quota: number }).quota;
    const payer = { userId: 1, tokenId: 1, unlimited: false };
    const call = async (cost: number) =>
      ledger.settle(await ledger.take(payer, 100), cost, (q: number) => entry(1, 1, q));
    /** What the database holds less what is not written yet: the ledger must say exactly this. */
    const truth = async () => {
      const u = await db.selectFrom("users").select("quota").where("id", "=", 1).executeTakeFirstOrThrow();
      const t = await db.selectFrom("tokens").select("remain_quota").where("id", "=", 1).executeTakeFirstOrThrow();
      return [Number(u.quota) - writer.unsettled("user", 1), Number(t.remain_quota) - writer.unsettled("token", 1)];
    };
    const started = performance.now();
    for (let round = 0; round < 12; round++) {
      for (let i = 0; i < 5; i++) await call(37 + i);
      const before = quotaNow();
      const flushing = writer.flush();
      // Rows read while the write is in flight may or may not hold its debits: those are read again after it.
      // The hard case: read after the worker committed, before its answer arrives. Waiting for the commit
      // without yielding to the event loop makes sure the answer has not been heard when the rows are read.
      if (round % 3 === 1) {
        const until = performance.now() + 5_000;
        while (quotaNow() === before && performance.now() < until);
        expect(quotaNow()).not.toBe(before);
        ledger.users.clear();
        ledger.tokens.clear();
      }
      await call(11);
      await flushing;
      expect([ledger.remaining(1), ledger.available(1, 1)]).toEqual(await truth());
    }
    await writer.flush();
    expect([ledger.remaining(1), ledger.available(1, 1)]).toEqual(await truth());
    // Two rows read at first; in each of the four cleared rounds during the write and again after it (those
    // reads may hold its debits); once more each time the TTL ran out. Dropping rows on every commit read 36.
    const expired = Math.floor((performance.now() - started) / BALANCE_ROW_TTL_MS);
    expect(reads).toBeLessThanOrEqual(2 * (1 + 2 * 4 + expired));
    await ledger.stop();
  } finally {
    await done();
  }
});
