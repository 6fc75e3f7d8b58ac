// openDatabase(config) → Kysely over bun:sqlite, PostgreSQL or MySQL, chosen by SQL_DSN.
import { Database as SqliteDatabase } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Kysely, MysqlDialect } from "kysely";
import { bunSqliteDialect } from "./sqlite-dialect.ts";
import { Migrator } from "kysely/migration";
import type { DB } from "./schema.ts";
import { migrations } from "./migrations/index.ts";
import { up as reconcileSchema } from "./migrations/0001_init.ts";
import { up as usernameCaseIndex } from "./migrations/0005_username_case.ts";
import { dialectOf, type Dialect } from "./dialect.ts";
import { ensureSqliteJsonBlobs } from "./json-columns.ts";
import { DEFAULT_DATABASE_TIMEOUTS, timedDialect, type DatabaseTimeouts } from "./timeouts.ts";

export type { DB } from "./schema.ts";
export type Database = Kysely<DB>;
export { dialectOf, type Dialect };

export interface DatabaseOptions {
  kind: Dialect;
  /** postgres:// or mysql:// URL (ignored for SQLite) */
  url: string;
  /** file path or ":memory:" (SQLite only) */
  sqlitePath: string;
  poolSize?: number;
  /** PostgreSQL and MySQL: how long connecting and each statement may take (db/timeouts.ts). */
  timeouts?: DatabaseTimeouts;
}

/** A driver's complaint about a connection it has already dropped: logged, never thrown at the process. */
const connectionTrouble = (e: unknown) => console.error("database connection error:", (e as Error)?.message ?? e);

export function createKysely(opts: DatabaseOptions): Database {
  // The PostgreSQL and MySQL drivers are loaded only when chosen: evaluating them would lengthen every start of
  // the (usually SQLite) binary (hot-path rule 15).
  if (opts.kind === "postgres") {
    const mod = require("postgres");
    const postgres = (mod.default ?? mod) as typeof import("postgres");
    const { PostgresJSDialect } = require("kysely-postgres-js") as typeof import("kysely-postgres-js");
    const t = { ...(opts.timeouts ?? DEFAULT_DATABASE_TIMEOUTS) };
    const client = postgres(opts.url, {
      max: opts.poolSize ?? 10,
      onnotice: () => {},
      connect_timeout: Math.max(1, Math.ceil(t.connectMs / 1000)),
      // int8 and numeric (count(*), sum()) as JS numbers: quota fits well inside 2^53.
      types: {
        bigint: { to: 20, from: [20, 1700], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
        // json/jsonb columns (new-api's channel_info, tasks.properties, ...) as the JSON text, both ways: the
        // driver would otherwise JSON-encode the text we write a second time (new-api then reads a string
        // where it expects an object) and hand back objects where SQLite gives text.
        json: {
          to: 114,
          from: [114, 3802],
          serialize: (x: unknown) => (typeof x === "string" ? x : JSON.stringify(x)),
          parse: (x: string) => x,
        },
      } as any,
    });
    // Ending the pool waits for every connection to say goodbye; one the driver lost track of (its socket gone
    // mid-write) never does, and closing then hung until the process was killed.
    const end = client.end.bind(client);
    client.end = (o?: { timeout?: number }) => end({ timeout: 1, ...o });
    return bounded(new Kysely<DB>({ dialect: timedDialect(new PostgresJSDialect({ postgres: client }), t) }), t);
  }
  if (opts.kind === "mysql") {
    const t = { ...(opts.timeouts ?? DEFAULT_DATABASE_TIMEOUTS) };
    const { createPool } = require("mysql2") as typeof import("mysql2");
    const pool = createPool({
      uri: opts.url,
      connectionLimit: opts.poolSize ?? 10,
      supportBigNumbers: true,
      decimalNumbers: true,
      timezone: "Z",
      // JSON columns (new-api's) as their text, as SQLite and PostgreSQL give them.
      jsonStrings: true,
      connectTimeout: t.connectMs,
    });
    // A pooled connection listens for one error (which removes it from the pool); a second one on a connection
    // already dead ("Can't write in closed state") had no listener and ended the process.
    pool.on("connection", (c) => c.on("error", connectionTrouble));
    return bounded(new Kysely<DB>({ dialect: timedDialect(new MysqlDialect({ pool: pool as any }), t) }), t);
  }
  if (opts.sqlitePath !== ":memory:") mkdirSync(dirname(opts.sqlitePath), { recursive: true });
  const raw = new SqliteDatabase(opts.sqlitePath, { create: true });
  raw.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
  // The dialect sets the connection's busy timeout to 0 and waits for the write lock itself, off the event loop.
  const db = new Kysely<DB>({ dialect: bunSqliteDialect(raw, reusingStatements(raw)) });
  rawHandles.set(db, raw);
  return db;
}

const rawHandles = new WeakMap<Database, SqliteDatabase>();
const boundsOf = new WeakMap<Database, DatabaseTimeouts>();

/** Each database keeps its own copy of the bounds, which migrate() lifts while it runs. */
function bounded(db: Database, t: DatabaseTimeouts): Database {
  boundsOf.set(db, t);
  return db;
}

/** The bun:sqlite handle under a SQLite Kysely (null on PostgreSQL and MySQL), for the few synchronous reads
 * that must not yield to the event loop between reading a balance and reserving against it (relay ledger).
 * It is the connection Kysely uses, so it sees that connection's open transaction too. */
export function rawSqlite(db: Database): SqliteDatabase | null {
  return rawHandles.get(db) ?? null;
}

/** Compiled statements kept per SQL text; past this many distinct texts the cache starts over. */
const STATEMENT_CACHE_SIZE = 500;

/** Kysely's SQLite driver prepares every query anew, and compiling showed up as a steady share of the
 * relay's CPU (the write-behind runs the same few statements every second). The app issues a small set
 * of distinct SQL texts, so compiled statements are reused. Safe because every query runs to completion
 * (all/run) under Kysely's single-connection mutex; nothing here streams rows with iterate(). */
function reusingStatements(raw: SqliteDatabase) {
  const cache = new Map<string, ReturnType<SqliteDatabase["prepare"]>>();
  return {
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (!stmt) {
        if (cache.size >= STATEMENT_CACHE_SIZE) {
          for (const s of cache.values()) s.finalize();
          cache.clear();
        }
        stmt = raw.prepare(sql);
        cache.set(sql, stmt);
      }
      return stmt;
    },
    close() {
      for (const s of cache.values()) s.finalize();
      cache.clear();
      raw.close();
    },
  };
}

export async function migrate(db: Database): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  // A migration of a large table (an index on a year of logs) may rightly take longer than any query.
  const bounds = boundsOf.get(db);
  const queryMs = bounds?.queryMs ?? 0;
  if (bounds) bounds.queryMs = 0;
  try {
    await runMigrations(db, migrator);
  } finally {
    if (bounds) bounds.queryMs = queryMs;
  }
}

async function runMigrations(db: Database, migrator: Migrator): Promise<void> {
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === "Error");
    throw new Error(`database migration ${failed?.migrationName ?? ""} failed: ${(error as Error).message ?? error}`);
  }
  // The numbered migrations ran once; the table list may have grown since (see 0001_init's up). When 0001
  // has just run it built everything from the current list, and a second pass would only cost start-up time.
  if (!results?.some((r) => r.migrationName === "0001_init" && r.status === "Success")) await reconcileSchema(db);
  // A non-unique username index (names that differ only in case were there) becomes unique once they are gone.
  if (!results?.some((r) => r.migrationName === "0005_username_case" && r.status === "Success"))
    await usernameCaseIndex(db);
  // At every start: a new-api run in between may have rebuilt a table and with it dropped the triggers.
  if (dialectOf(db) === "sqlite") await ensureSqliteJsonBlobs(db);
}

/**
 * PostgreSQL: a small pool on Bun's built-in client whose sessions commit without waiting for the WAL flush
 * (synchronous_commit = off: a crash of the server may lose the last fraction of a second of acknowledged
 * commits, each whole). Bun's client parses the protocol natively, which costs the event loop far less per query
 * than postgres.js does (hot-path rule 2). Only for statements whose results are int4 and text: on this client int8 comes back
 * as a string and json as an object, unlike the main pool (createKysely).
 */
export function createAsyncCommitPool(
  url: string,
  size: number,
  t: DatabaseTimeouts = DEFAULT_DATABASE_TIMEOUTS,
): Database {
  const { PostgresJSDialect } = require("kysely-postgres-js") as typeof import("kysely-postgres-js");
  const client = new Bun.SQL(url, {
    max: size,
    connection: { synchronous_commit: "off" },
    connectionTimeout: Math.max(1, Math.ceil(t.connectMs / 1000)),
  });
  return new Kysely<DB>({ dialect: timedDialect(new PostgresJSDialect({ postgres: client as any }), t) });
}

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const db = createKysely(opts);
  await migrate(db);
  return db;
}

/** Unix seconds: every *_time / created_at column uses this. */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
