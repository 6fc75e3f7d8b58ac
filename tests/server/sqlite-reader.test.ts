// The console's heavy SQLite reads (log pages and totals, log stats, dashboard rollups, task lists) run on a
// reader thread's read-only connection, so a long one does not hold the relay's event loop; long deletes and the
// writes made while relaying run on the write worker, so neither they nor a wait for its write lock hold it.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kysely, sql } from "kysely";
import { Database as SqliteFile } from "bun:sqlite";
import { openDatabase, rawSqlite, type Database } from "../../db/index.ts";
import { bunSqliteDialect } from "../../db/sqlite-dialect.ts";
import {
  abandonSqliteReader,
  readerOf,
  startSqliteReader,
  stopSqliteReader,
} from "../../server/infra/sqlite-reader.ts";
import { insertRows } from "../../db/bulk.ts";
import { testContext } from "../helpers/app.ts";
import { deleteLogsBefore, listLogs, logStat } from "../../server/modules/log/service.ts";
import { pruneLogs } from "../../server/jobs/log-retention.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";
import { workerFor, writeOffLoop } from "../../server/infra/statement-worker.ts";
import { answerStore, type CachedAnswer } from "../../server/relay/cache/store.ts";

async function fileDb() {
  const dir = mkdtempSync(join(tmpdir(), "sy-sqlr-"));
  const path = join(dir, "x.db");
  const db = await openDatabase({ kind: "sqlite", url: "", sqlitePath: path });
  return {
    db,
    path,
    done: async () => {
      await stopSqliteReader(db);
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `fn` over a fresh SQLite file (no threads started), then closes and removes it. */
async function inFileDb(fn: (db: Database, path: string) => Promise<void>): Promise<void> {
  const { db, path, done } = await fileDb();
  try {
    await fn(db, path);
  } finally {
    await done();
  }
}

async function ready(db: Database): Promise<Database> {
  for (let i = 0; i < 200 && readerOf(db) === db; i++) await Bun.sleep(10);
  expect(readerOf(db)).not.toBe(db);
  return readerOf(db);
}

/** A gateway's context over a SQLite file, its reader running (the suite's contexts use in-memory SQLite, which
 * has none). */
async function fileContext() {
  const dir = mkdtempSync(join(tmpdir(), "sy-sqlr-"));
  const ctx = await testContext({
    database: { kind: "sqlite", url: "", sqlitePath: join(dir, "x.db"), drop: async () => {} },
  });
  await ready(ctx.deps.db);
  return { ctx, dir };
}

/** Runs `fn` in a file-backed context (the reader and the write worker running), then closes it. */
async function inFileContext(
  fn: (ctx: Awaited<ReturnType<typeof fileContext>>["ctx"], dir: string) => Promise<void>,
): Promise<void> {
  const { ctx, dir } = await fileContext();
  try {
    await fn(ctx, dir);
  } finally {
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A read that takes a while in SQLite itself: a recursive count to `n`. */
const slowRead = (n: number) =>
  sql<{
    n: number;
  }>`with recursive c(i) as (select 1 union all select i + 1 from c where i < ${n}) select count(*) as n from c`;

/** The message a promise rejects with (awaited plainly: in bun test 1.4.5 an expect().rejects on the second such rejection never settled here). */
async function errorOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as Error).message;
  }
  return "(resolved)";
}

/** How many times a 5 ms timer fired while `run` was pending. */
async function ticksDuring(run: () => Promise<unknown>): Promise<number> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  try {
    await run();
  } finally {
    clearInterval(timer);
  }
  return ticks;
}

test("a long read on the reader leaves the event loop turning; the same read on the main connection holds it", () =>
  inFileDb(async (db, path) => {
    expect(startSqliteReader(db, path)).toBe(true);
    const reader = await ready(db);
    const n = 3_000_000;
    // The main connection: the query runs on this thread from start to end, so the timer waits for it.
    let main = 0;
    const onMain = await ticksDuring(async () => (main = (await slowRead(n).execute(db)).rows[0].n));
    let off = 0;
    const offLoop = await ticksDuring(async () => (off = (await slowRead(n).execute(reader)).rows[0].n));
    expect(main).toBe(n);
    expect(off).toBe(n);
    expect(onMain).toBeLessThanOrEqual(2);
    expect(offLoop).toBeGreaterThanOrEqual(5);
  }));

test("the reader sees every committed row, answers SQLite's own errors, and is read-only", () =>
  inFileDb(async (db, path) => {
    startSqliteReader(db, path);
    const reader = await ready(db);
    await insertRows(
      db,
      "logs",
      Array.from({ length: 300 }, (_, i) => ({
        user_id: 1 + (i % 3),
        created_at: 1000 + i,
        type: 2,
        content: "",
        username: `u${i % 3}`,
        quota: 10,
      })),
    );
    const count = await reader
      .selectFrom("logs")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("user_id", "=", 2)
      .executeTakeFirst();
    expect(Number(count?.n)).toBe(100);
    expect(await errorOf(sql`select nope from logs`.execute(reader))).toMatch(/no such column/);
    expect(
      await errorOf(
        reader
          .insertInto("logs")
          .values({ user_id: 9, created_at: 1, type: 2, content: "", username: "x", quota: 1 } as any)
          .execute(),
      ),
    ).toMatch(/readonly/);
    expect(
      Number(
        (
          await db
            .selectFrom("logs")
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .executeTakeFirst()
        )?.n,
      ),
    ).toBe(300);
  }));

test("once stopped, or for an in-memory database, reads run on the database itself", async () => {
  const { db, path, done } = await fileDb();
  try {
    startSqliteReader(db, path);
    await ready(db);
    await stopSqliteReader(db);
    expect(readerOf(db)).toBe(db);
    expect((await slowRead(10).execute(readerOf(db))).rows[0].n).toBe(10);
  } finally {
    await done();
  }
  const mem = await openDatabase({ kind: "sqlite", url: "", sqlitePath: ":memory:" });
  try {
    expect(startSqliteReader(mem, ":memory:")).toBe(false);
    expect(readerOf(mem)).toBe(mem);
    // A file the reader cannot open (read-only, it never creates one): it retires, and reads stay on the database.
    expect(startSqliteReader(mem, join(tmpdir(), "sy-sqlr-missing", "nope.db"))).toBe(true);
    await Bun.sleep(300);
    expect(readerOf(mem)).toBe(mem);
    expect((await slowRead(10).execute(readerOf(mem))).rows[0].n).toBe(10);
  } finally {
    await mem.destroy();
  }
});

test("a reader that fails mid-query hands the query to the main connection", () =>
  inFileDb(async (db, path) => {
    startSqliteReader(db, path);
    const reader = await ready(db);
    // A query that runs long on the reader, then the thread is gone: the caller still gets its answer.
    const pending = slowRead(2_000_000).execute(reader);
    await Bun.sleep(20);
    abandonSqliteReader(db, "a test retired it");
    expect((await pending).rows[0].n).toBe(2_000_000);
    expect(readerOf(db)).toBe(db);
  }));

test("the log page, its total and the log stat answer the same through the reader as on the main connection", () =>
  inFileContext(async (ctx) => {
    const db = ctx.deps.db;
    const now = Math.floor(Date.now() / 1000);
    await insertRows(
      db,
      "logs",
      Array.from({ length: 120 }, (_, i) => ({
        user_id: 1 + (i % 2),
        created_at: now - 120 + i,
        type: i % 10 === 0 ? 5 : 2,
        content: "c",
        username: `u${i % 2}`,
        token_name: "t",
        model_name: i % 3 ? "m1" : "m2",
        quota: i,
        prompt_tokens: 2,
        completion_tokens: 3,
        channel_id: 1,
        other: "{}",
      })),
    );
    const filters = [{}, { userId: 1 }, { modelName: "m2", start: now - 100 }, { type: 5 }];
    const viaReader = [];
    for (const f of filters)
      viaReader.push([
        await listLogs(ctx.deps, f, { page: 1, size: 10, offset: 0 }, true),
        await logStat(ctx.deps, f, now),
      ]);
    await stopSqliteReader(db);
    const viaMain = [];
    for (const f of filters)
      viaMain.push([
        await listLogs(ctx.deps, f, { page: 1, size: 10, offset: 0 }, true),
        await logStat(ctx.deps, f, now),
      ]);
    expect(viaReader).toEqual(viaMain);
    expect((viaReader[0][0] as any).total).toBe(120);
    expect((viaReader[1][1] as any).quota).toBeGreaterThan(0);
  }));

test("deleting old logs on SQLite runs off the event loop (reader finds each batch, the write worker deletes it) and counts right", () =>
  inFileContext(async (ctx) => {
    const db = ctx.deps.db;
    const now = Math.floor(Date.now() / 1000);
    const old = now - 40 * 86_400;
    const rows = [];
    for (let i = 0; i < 24_000; i++)
      rows.push({
        user_id: 1,
        created_at: old + (i % 100),
        type: i % 500 === 7 || i % 500 === 77 ? LOG_TYPE.topup : LOG_TYPE.consume,
        content: "",
        username: "u",
        model_name: `m${i % 7}`,
        quota: 1,
      });
    for (let i = 0; i < 50; i++)
      rows.push({ user_id: 1, created_at: now, type: LOG_TYPE.consume, content: "recent", username: "u", quota: 1 });
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
    const older = rows.filter((r) => r.created_at < old + 50).length;
    const keptTopups = rows.filter((r) => r.created_at >= old + 50 && r.type === LOG_TYPE.topup).length;

    // The admin's delete takes every type, batch after batch with no pause: on the main connection it held the
    // loop from the first batch to the last.
    let deleted = 0;
    const ticks = await ticksDuring(async () => (deleted = await deleteLogsBefore(ctx.deps, old + 50)));
    expect(deleted).toBe(older);
    expect(await count()).toBe(rows.length - older);
    expect(ticks).toBeGreaterThanOrEqual(5);

    // Retention: old consume logs go, old top-ups (two in five hundred, inside batches' ranges of ids) stay.
    await ctx.deps.options.set("LogRetentionDays", "30");
    expect(await pruneLogs(ctx.deps, now)).toBe(rows.length - older - keptTopups - 50);
    expect(await count()).toBe(keptTopups + 50);
    expect(keptTopups).toBeGreaterThan(0);
  }));

/** A write that holds SQLite's write lock for a while on the write worker: a recursive count to `n` stored as option `key`. */
const slowWrite = (n: number, key: string) => ({
  sql: `insert into options ("key", value) select '${key}', count(*) from (with recursive c(i) as (select 1 union all select i + 1 from c where i < ${n}) select i from c)`,
  parameters: [],
});

/** Resolves once another connection holds the database's write lock (a write posted to the worker has begun). */
async function untilLocked(dir: string): Promise<void> {
  const probe = new SqliteFile(join(dir, "x.db"));
  try {
    probe.exec("PRAGMA busy_timeout = 0;");
    for (const until = performance.now() + 5000; performance.now() < until; await Bun.sleep(1)) {
      try {
        probe.exec("BEGIN IMMEDIATE");
        probe.exec("ROLLBACK");
      } catch {
        return;
      }
    }
    throw new Error("the worker never took the write lock");
  } finally {
    probe.close();
  }
}

/** How many times a 5 ms timer fired during `run`, started while the write worker holds the write lock (option `key`). */
async function ticksWhileLocked(db: Database, dir: string, key: string, run: () => Promise<unknown>): Promise<number> {
  const holding = workerFor(db)!.write([slowWrite(3_000_000, key)]);
  await untilLocked(dir);
  const ticks = await ticksDuring(run);
  await holding;
  return ticks;
}

test("on SQLite the response cache's store and a task's row are written by the write worker: while it holds the write lock the event loop keeps turning", () =>
  inFileContext(async (ctx, dir) => {
    const db = ctx.deps.db;
    expect(workerFor(db)).not.toBeNull();
    const store = answerStore(ctx.deps);
    const at = Date.now();
    const entry: CachedAnswer = {
      v: 1,
      kind: "body",
      contentType: "application/json",
      body: '{"ok":1}',
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } as CachedAnswer["usage"],
      upstreamModel: "gpt-x",
      channelId: 1,
      at,
      exp: at + 60_000,
    };
    // On the main connection the store waited for the lock in SQLite's busy handler, which slept on this thread.
    expect(await ticksWhileLocked(db, dir, "slow-1", () => store.put("k1", "gpt-x", entry))).toBeGreaterThanOrEqual(5);
    expect((await store.get("k1", Date.now()))?.body).toBe('{"ok":1}');
    // Stored again under the same key: replaced, not refused (the upsert runs on the worker as well).
    await store.put("k1", "gpt-x", { ...entry, body: '{"ok":2}' });
    expect((await store.get("k1", Date.now()))?.body).toBe('{"ok":2}');

    const row = {
      created_at: 1,
      updated_at: 1,
      task_id: "t-off-loop",
      platform: "suno",
      user_id: 1,
      channel_id: 1,
      quota: 5,
      action: "MUSIC",
      status: "SUBMITTED",
      fail_reason: "",
      submit_time: 1,
      start_time: 0,
      finish_time: 0,
      progress: "0%",
      properties: "{}",
      private_data: null,
    };
    expect(
      await ticksWhileLocked(db, dir, "slow-2", () => writeOffLoop(db, db.insertInto("tasks").values(row as any))),
    ).toBeGreaterThanOrEqual(5);
    expect(
      (await db.selectFrom("tasks").select("quota").where("task_id", "=", "t-off-loop").executeTakeFirstOrThrow())
        .quota,
    ).toBe(5);
  }));

test("writeOffLoop runs on the database when there is no worker, and again there when the worker rolls the statement back", async () => {
  const mem = await openDatabase({ kind: "sqlite", url: "", sqlitePath: ":memory:" });
  try {
    await sql`create table t (k text primary key, v int)`.execute(mem);
    expect(workerFor(mem)).toBeNull();
    const r = await writeOffLoop(mem, mem.insertInto("t" as any).values({ k: "a", v: 1 }));
    expect(r).not.toBeNull();
    expect((await sql<{ v: number }>`select v from t where k = 'a'`.execute(mem)).rows[0].v).toBe(1);
  } finally {
    await mem.destroy();
  }
  await inFileContext(async (ctx) => {
    const db = ctx.deps.db;
    // A worker that stopped (as at shutdown): the write goes to the main connection.
    await workerFor(db)!.stop();
    const r = await writeOffLoop(db, db.insertInto("options").values({ key: "after-stop", value: "1" }));
    expect(r).not.toBeNull();
    expect(await db.selectFrom("options").select("value").where("key", "=", "after-stop").executeTakeFirst()).toEqual({
      value: "1",
    });
  });
});

test("a write on SQLite's main connection waits for the worker's write lock without holding the event loop, in a transaction too", () =>
  inFileContext(async (ctx, dir) => {
    const db = ctx.deps.db;
    // A console write (an option saved) while the worker holds the lock: before, SQLite's busy handler slept on
    // this thread until the lock was free.
    expect(
      await ticksWhileLocked(db, dir, "slow-3", () =>
        db.insertInto("options").values({ key: "console-write", value: "1" }).execute(),
      ),
    ).toBeGreaterThanOrEqual(5);
    expect(
      await db.selectFrom("options").select("value").where("key", "=", "console-write").executeTakeFirst(),
    ).toEqual({ value: "1" });
    const inTransaction = () =>
      db.transaction().execute(async (trx) => {
        await trx.insertInto("options").values({ key: "in-transaction", value: "a" }).execute();
        await trx.updateTable("options").set({ value: "b" }).where("key", "=", "in-transaction").execute();
      });
    expect(await ticksWhileLocked(db, dir, "slow-4", inTransaction)).toBeGreaterThanOrEqual(5);
    expect(
      await db.selectFrom("options").select("value").where("key", "=", "in-transaction").executeTakeFirst(),
    ).toEqual({ value: "b" });
  }));

test("a transaction whose snapshot another writer outdated fails at once, as before, instead of waiting", () =>
  inFileContext(async (ctx) => {
    const db = ctx.deps.db;
    const worker = workerFor(db)!;
    // The app's connection, with every try of a statement counted.
    const raw = rawSqlite(db)!;
    const tries = new Map<string, number>();
    const counted = new Kysely<any>({
      dialect: bunSqliteDialect(raw, {
        prepare: (text) => (tries.set(text, (tries.get(text) ?? 0) + 1), raw.prepare(text)),
        close() {},
      }),
    });
    const error = await counted
      .transaction()
      .execute(async (trx) => {
        await trx.selectFrom("options").select("key").limit(1).execute();
        await worker.write([{ sql: `insert into options ("key", value) values ('outdating', '1')`, parameters: [] }]);
        await trx.insertInto("options").values({ key: "too-late", value: "1" }).execute();
      })
      .then(
        () => null,
        (e: { message?: string; code?: string }) => e,
      );
    expect(error?.message).toContain("locked");
    // The one busy code the driver does not wait on: only a new transaction could write, so waiting cannot help.
    expect(error?.code).toBe("SQLITE_BUSY_SNAPSHOT");
    expect(
      [...tries]
        .filter(([text]) => text.includes("too-late") || text.startsWith('insert into "options"'))
        .map(([, n]) => n),
    ).toEqual([1]);
    expect(
      await db.selectFrom("options").select("key").where("key", "=", "too-late").executeTakeFirst(),
    ).toBeUndefined();
  }));

test("a write waiting for the lock does not end up inside a transaction other code opened meanwhile (its rollback leaves the write in place)", () =>
  inFileContext(async (ctx, dir) => {
    const db = ctx.deps.db;
    const holding = workerFor(db)!.write([slowWrite(3_000_000, "slow-5")]);
    await untilLocked(dir);
    // Issued outside any transaction; it waits for the worker's lock.
    const outsider = db.insertInto("options").values({ key: "outsider", value: "1" }).execute();
    await Bun.sleep(2);
    // Then a transaction is asked for on the same connection: it writes, waits a while and rolls back. Kysely
    // lends the connection to the waiting write first, so the two never mix.
    const rolledBack = errorOf(
      db.transaction().execute(async (trx) => {
        await trx.insertInto("options").values({ key: "rolled-back", value: "1" }).execute();
        await Bun.sleep(40);
        throw new Error("changed my mind");
      }),
    );
    expect(await rolledBack).toBe("changed my mind");
    await outsider;
    await holding;
    expect(
      await db.selectFrom("options").select("key").where("key", "=", "rolled-back").executeTakeFirst(),
    ).toBeUndefined();
    expect(await db.selectFrom("options").select("value").where("key", "=", "outsider").executeTakeFirst()).toEqual({
      value: "1",
    });
  }));
