// What the console's heavy reads cost the relay's event loop on SQLite: the log page with its total and the log
// stat, as the console asks for them, over a table of N logs, run on the main connection and through the reader
// thread (server/infra/sqlite-reader.ts). Prints, per view, the wall time and the event loop's longest stall while
// it ran (a 1 ms timer that fires late), median of the rounds. Then the admin's "delete logs before" over the
// oldest two days, once on the main connection and once (the next two days) with the database's worker threads,
// with a console write on the main connection every 10 ms (how long the longest waited for the write lock).
//   bun scripts/bench/log-reads.ts [--rows 1000000] [--rounds 5]
import { mkdtempSync, rmSync } from "node:fs";
import { sql } from "kysely";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, migrate, rawSqlite, type Database } from "../../db/index.ts";
import { readerOf, startSqliteReader, stopSqliteReader } from "../../server/infra/sqlite-reader.ts";
import { deleteLogsBefore, listLogs, logStat, type LogFilter } from "../../server/modules/log/service.ts";
import { startSqliteWorker, stopSqliteWorker } from "../../server/infra/sqlite-worker.ts";
import type { AppDeps } from "../../server/deps.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? d : Number(process.argv[i + 1]);
};
const ROWS = arg("rows", 1_000_000);
const ROUNDS = arg("rounds", 5);
const DAY = 86_400;

const dir = mkdtempSync(join(tmpdir(), "sy-logreads-"));
const path = join(dir, "logs.db");
const db: Database = await openDatabase({ kind: "sqlite", url: "", sqlitePath: path });
await migrate(db);
const now = Math.floor(Date.now() / 1000);
{
  // 1,000 users, 50 models, 100 channels, spread over 30 days, written straight through bun:sqlite.
  const raw = rawSqlite(db)!;
  const insert = raw.prepare(
    `insert into logs (user_id, created_at, type, content, username, token_name, model_name, quota, prompt_tokens, completion_tokens, use_time, is_stream, channel_id, token_id, "group", ip, other) values (?, ?, 2, 'model ratio 1', ?, 'tok', ?, ?, 20, 30, 1, 0, ?, ?, 'default', '', '{}')`,
  );
  raw.exec("BEGIN");
  for (let i = 0; i < ROWS; i++) {
    const user = 1 + (i % 1000);
    insert.run(
      user,
      now - 30 * DAY + Math.floor((i * 30 * DAY) / ROWS),
      `user${user}`,
      `model-${i % 50}`,
      100 + (i % 1000),
      1 + (i % 100),
      user,
    );
  }
  raw.exec("COMMIT");
  raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
}
const deps = { db } as unknown as AppDeps;

const views: [string, LogFilter][] = [
  ["admin page + stat, last day (the console's default)", { start: now - DAY, end: now }],
  ["admin page + stat, one model, last day", { modelName: "model-7", start: now - DAY, end: now }],
  ["self page + stat, one user, all time", { userId: 42 }],
  ["admin page + stat, all time", {}],
];

async function measure(
  f: LogFilter,
  run: () => Promise<unknown> = () =>
    Promise.all([listLogs(deps, f, { page: 1, size: 10, offset: 0 }, true), logStat(deps, f, now)]),
): Promise<{ wall: number; stall: number }> {
  let stall = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const t = performance.now();
    stall = Math.max(stall, t - last - 1);
    last = t;
  }, 1);
  await Bun.sleep(5);
  last = performance.now();
  const t0 = performance.now();
  await run();
  const wall = performance.now() - t0;
  // The timer's next turn closes the measure of a stall that lasted to the end.
  await Bun.sleep(2);
  clearInterval(timer);
  return { wall, stall: Math.max(0, stall) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `log reads on SQLite, ${ROWS.toLocaleString()} logs, median of ${ROUNDS} rounds: wall ms / longest event-loop stall ms`,
);
startSqliteReader(db, path);
while (readerOf(db) === db) await Bun.sleep(10);
for (const [name, f] of views) {
  const on: { wall: number; stall: number }[] = [];
  const off: { wall: number; stall: number }[] = [];
  await measure(f); // warm the page cache and both connections' statements
  for (let r = 0; r < ROUNDS; r++) {
    on.push(await measure(f));
    off.push(await withoutReader(() => measure(f)));
  }
  const fmt = (xs: { wall: number; stall: number }[]) =>
    `${median(xs.map((x) => x.wall)).toFixed(1)} / ${median(xs.map((x) => x.stall)).toFixed(1)}`;
  console.log(`  ${name}: main connection ${fmt(off)} · reader ${fmt(on)}`);
}
{
  // Deleting: the oldest two days on the main connection, then the next two with the worker threads.
  const start = now - 30 * DAY;
  await stopSqliteReader(db);
  const main = await measure({}, () => deleteLogsBefore(deps, start + 2 * DAY));
  startSqliteReader(db, path);
  startSqliteWorker(db, path);
  while (readerOf(db) === db) await Bun.sleep(10);
  await Bun.sleep(100);
  // Meanwhile a console write on the main connection every 10 ms: each waits for the write lock a batch holds
  // on the worker (db/sqlite-dialect.ts: off the event loop; the stall figure shows whether the loop waited).
  let writing = true;
  let writeWait = 0;
  const consoleWrites = (async () => {
    while (writing) {
      const t = performance.now();
      await sql`insert or replace into options ("key", value) values ('bench-console-write', ${String(t)})`.execute(db);
      writeWait = Math.max(writeWait, performance.now() - t);
      await Bun.sleep(10);
    }
  })();
  const workers = await measure({}, () => deleteLogsBefore(deps, start + 4 * DAY));
  writing = false;
  await consoleWrites;
  console.log(
    `  delete logs before (two days, ~${Math.round(ROWS / 15).toLocaleString()} rows): main connection ${main.wall.toFixed(1)} / ${main.stall.toFixed(1)} · worker threads ${workers.wall.toFixed(1)} / ${workers.stall.toFixed(1)} (a console write every 10 ms on the main connection meanwhile: the longest waited ${writeWait.toFixed(1)} ms)`,
  );
  await stopSqliteWorker(db);
}
await stopSqliteReader(db);
await db.destroy();
rmSync(dir, { recursive: true, force: true });

/** Runs `fn` with the queries on the main connection (the reader stopped, then started again). */
async function withoutReader<T>(fn: () => Promise<T>): Promise<T> {
  await stopSqliteReader(db);
  try {
    return await fn();
  } finally {
    startSqliteReader(db, path);
    while (readerOf(db) === db) await Bun.sleep(10);
  }
}
