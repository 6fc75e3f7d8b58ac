// Log-query benchmark: fills the logs table with N synthetic rows (default 10 million) on SQLite and, when
// PG_DSN is set, on PostgreSQL, then times the queries behind the log page and the stats box. The console
// opens the log page on today's range; the all-time cases are what a cleared date filter costs.
//
//   bun scripts/bench/logs.ts [--rows 10000000] [--only sqlite|postgres] [--keep]
//
// Rows: 10,000 users, 200 token names, 50 models, 100 channels, spread evenly over the last 30 days;
// 93% consumption, 5% errors, 2% top-ups. Each timing is the median of 5 runs after one warm-up.
import { sql } from "kysely";
import postgres from "postgres";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, nowSeconds, type Database, type Dialect } from "../../db/index.ts";
import type { AppDeps } from "../../server/deps.ts";
import { listLogs, logStat, type LogFilter } from "../../server/modules/log/service.ts";

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const ROWS = Number(arg("rows") ?? 10_000_000);
const ONLY = arg("only");
const KEEP = args.includes("--keep");
const CHUNK = 1_000_000;
const SPAN = 30 * 86_400;

function fillSql(kind: Dialect, from: number, to: number, start: number, n: number): string {
  const stream = kind === "postgres" ? "(x % 2 = 1)" : "(x % 2)";
  const cols = `user_id, created_at, type, content, username, token_name, model_name, quota, prompt_tokens, completion_tokens,
    use_time, is_stream, channel_id, token_id, "group", ip, other`;
  const values = `(x % 10000) + 1, ${start} + (x * ${SPAN}) / ${n},
    CASE WHEN x % 20 = 0 THEN 5 WHEN x % 50 = 1 THEN 1 ELSE 2 END, '', 'user' || ((x % 10000) + 1), 'token' || (x % 200),
    'model-' || (x % 50), (x * 7919) % 5000, (x * 31) % 2000, (x * 17) % 1000, x % 30, ${stream}, (x % 100) + 1, x % 200,
    CASE WHEN x % 10 = 0 THEN 'vip' ELSE 'default' END, '', ''`;
  if (kind === "postgres")
    return `INSERT INTO logs (${cols}) SELECT ${values} FROM generate_series(${from}::bigint, ${to}::bigint) AS g(x)`;
  return `WITH RECURSIVE c(x) AS (SELECT ${from} UNION ALL SELECT x + 1 FROM c WHERE x < ${to}) INSERT INTO logs (${cols}) SELECT ${values} FROM c`;
}

async function fill(db: Database, kind: Dialect, n: number, start: number) {
  const t0 = performance.now();
  for (let from = 1; from <= n; from += CHUNK) {
    const to = Math.min(n, from + CHUNK - 1);
    await sql.raw(fillSql(kind, from, to, start, n)).execute(db);
    process.stdout.write(
      `\r  [${kind}] inserted ${to.toLocaleString()} / ${n.toLocaleString()} rows (${((performance.now() - t0) / 1000).toFixed(0)} s)`,
    );
  }
  // VACUUM on PostgreSQL: a bulk-loaded table has no visibility map yet, so index-only scans would visit the
  // heap for every row; autovacuum sets it on a live table (inserts trigger it since PostgreSQL 13).
  await sql.raw(kind === "postgres" ? "VACUUM ANALYZE logs" : "ANALYZE").execute(db);
  console.log(`\n  [${kind}] filled and analysed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await fn();
    runs.push(performance.now() - t);
  }
  runs.sort((a, b) => a - b);
  return runs[2];
}

async function run(kind: Dialect) {
  let url = "";
  let sqlitePath = "";
  let drop = async () => {};
  if (kind === "postgres") {
    const name = "sy_bench_logs";
    const admin = postgres(process.env.PG_DSN!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    const u = new URL(process.env.PG_DSN!);
    u.pathname = "/" + name;
    url = u.toString();
    drop = async () => {
      const a = postgres(process.env.PG_DSN!, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    };
  } else {
    sqlitePath = join(tmpdir(), "sy-bench-logs.sqlite");
    rmSync(sqlitePath, { force: true });
    drop = async () => {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(sqlitePath + suffix, { force: true });
    };
  }
  const db = await openDatabase({ kind, url, sqlitePath });
  const deps = { db } as AppDeps;
  const now = nowSeconds();
  await fill(db, kind, ROWS, now - SPAN);

  const page = (p: number) => ({ page: p, size: 10, offset: (p - 1) * 10 });
  const day: LogFilter = { start: now - 86_400, end: now };
  const cases: [string, () => Promise<unknown>][] = [
    ["admin page 1, last day (console default)", () => listLogs(deps, day, page(1), true)],
    ["admin page 1, no filter (rows + total)", () => listLogs(deps, {}, page(1), true)],
    ["admin page 1, type=2", () => listLogs(deps, { type: 2 }, page(1), true)],
    ["admin page 1, type=2 + last day", () => listLogs(deps, { type: 2, ...day }, page(1), true)],
    ["admin page 1, username", () => listLogs(deps, { username: "user42" }, page(1), true)],
    ["admin page 1, model + last day", () => listLogs(deps, { modelName: "model-7", ...day }, page(1), true)],
    ["admin page 1, channel", () => listLogs(deps, { channel: 17 }, page(1), true)],
    ["admin page 1, last hour", () => listLogs(deps, { start: now - 3600, end: now }, page(1), true)],
    ["self page 1 (user_id)", () => listLogs(deps, { userId: 42 }, page(1), false)],
    ["self page 50 (user_id)", () => listLogs(deps, { userId: 42 }, page(50), false)],
    [
      "self page 1, token + last day",
      () => listLogs(deps, { userId: 42, tokenName: "token42", ...day }, page(1), false),
    ],
    ["stat: whole site, last day", () => logStat(deps, day)],
    ["stat: whole site, all time", () => logStat(deps, {})],
    ["stat: one user, all time", () => logStat(deps, { userId: 42 })],
    ["stat: one user, last day", () => logStat(deps, { userId: 42, ...day })],
    ["stat: one model, last day", () => logStat(deps, { modelName: "model-7", ...day })],
  ];
  const results: [string, number][] = [];
  for (const [name, fn] of cases) {
    const ms = await time(fn);
    results.push([name, ms]);
    console.log(`  [${kind}] ${name.padEnd(42)} ${ms.toFixed(1).padStart(9)} ms`);
  }
  await db.destroy();
  if (!KEEP) await drop();
  return results;
}

console.log(`log benchmark: ${ROWS.toLocaleString()} rows`);
const kinds: Dialect[] = [];
if (!ONLY || ONLY === "sqlite") kinds.push("sqlite");
if ((!ONLY || ONLY === "postgres") && process.env.PG_DSN) kinds.push("postgres");
const all: Record<string, [string, number][]> = {};
for (const k of kinds) all[k] = await run(k);
console.log("\n| query | " + kinds.join(" ms | ") + " ms |\n|---|" + kinds.map(() => "---:|").join(""));
for (let i = 0; i < all[kinds[0]].length; i++) {
  console.log(`| ${all[kinds[0]][i][0]} | ` + kinds.map((k) => all[k][i][1].toFixed(1)).join(" | ") + " |");
}
process.exit(0);
