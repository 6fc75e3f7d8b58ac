// The console's heavy SQLite reads off the event loop. bun:sqlite runs a query on the thread that calls it, so
// on the main connection a log page's total, a log stat or a dashboard range would hold every relay call in
// flight for as long as it runs, which on a large log table is many milliseconds (hot-path rule 2). readerOf(db) is a Kysely for SELECTs whose queries run on a worker thread's read-only connection
// (sqlite-read-thread.ts); the event loop only posts the query and takes the rows. WAL readers see the last
// committed state, as the main connection does for rows the write worker committed. On PostgreSQL and MySQL,
// for an in-memory database, before start and after stop, or once the worker failed, readerOf is the database
// itself; a query the worker fails runs on the main connection.
import { Kysely, type CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from "kysely";
import { sqliteDialect } from "../../db/sqlite-dialect.ts";
import type { Database } from "../../db/index.ts";
import type { DB } from "../../db/schema.ts";
import { workerUrl } from "./statement-worker.ts";

export type ReaderRequest =
  | { type: "open"; path: string }
  | { type: "query"; id: number; sql: string; parameters: readonly unknown[] }
  | { type: "stop" };

interface Reader {
  kysely: Kysely<DB>;
  alive: boolean;
  /** Retires the thread (its queries in flight go to the main connection), saying why on stderr. */
  abandon(why: string): void;
  stop(): Promise<void>;
}

const readers = new WeakMap<Database, Reader>();

/** The Kysely to run a heavy SELECT on: the database's reader thread when it has a running one, else the database. */
export function readerOf(db: Database): Database {
  const r = readers.get(db);
  return r?.alive ? r.kysely : db;
}

/** Starts the reader thread of a SQLite database file (none for ":memory:"); false when it cannot start. */
export function startSqliteReader(db: Database, path: string): boolean {
  if (!path || path === ":memory:") return false;
  let worker: Worker;
  try {
    worker = new Worker(workerUrl("sqlite-read-thread.ts"));
  } catch (e) {
    console.error("SQLite reader could not start; console reads stay on the main thread:", (e as Error).message);
    return false;
  }
  (worker as unknown as { unref(): void }).unref();
  let nextId = 1;
  const pending = new Map<number, { resolve(rows: unknown[]): void; reject(e: Error): void }>();
  let stopped: (() => void) | null = null;
  let retired = false;
  // Also before the thread is ready (an error while it opens): it is ended either way.
  const fail = (why: string) => {
    if (retired) return;
    retired = true;
    reader.alive = false;
    console.error(`SQLite reader failed (${why}); console reads go back to the main thread`);
    for (const p of pending.values()) p.reject(new Error(`the SQLite reader failed: ${why}`));
    pending.clear();
    worker.terminate();
  };
  const post = (m: ReaderRequest) => worker.postMessage(m);
  const query = (sql: string, parameters: readonly unknown[]) =>
    new Promise<unknown[]>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      post({ type: "query", id, sql, parameters });
    });
  const connection: DatabaseConnection = {
    async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
      if (reader.alive) {
        try {
          return { rows: (await query(compiled.sql, compiled.parameters)) as R[] };
        } catch (e) {
          // An error SQLite raised (a malformed query) is the caller's; a reader that failed is not.
          if (reader.alive) throw e;
        }
      }
      return db.executeQuery<R>(compiled);
    },
    streamQuery() {
      throw new Error("the SQLite reader does not stream rows");
    },
  };
  const driver: Driver = {
    async init() {},
    async acquireConnection() {
      return connection;
    },
    async beginTransaction() {
      throw new Error("the SQLite reader is read-only: transactions run on the database itself");
    },
    async commitTransaction() {},
    async rollbackTransaction() {},
    async releaseConnection() {},
    async destroy() {},
  };
  const kysely = new Kysely<DB>({ dialect: sqliteDialect(driver) });
  // Not alive until the thread has opened the file: queries before that run on the database.
  const reader: Reader = {
    kysely,
    alive: false,
    abandon: (why) => fail(why),
    async stop() {
      if (retired) return;
      retired = true;
      reader.alive = false;
      const done = new Promise<void>((resolve) => (stopped = resolve));
      post({ type: "stop" });
      await Promise.race([done, Bun.sleep(5000)]);
      for (const p of pending.values()) p.reject(new Error("the SQLite reader stopped"));
      pending.clear();
      worker.terminate();
    },
  };
  worker.onmessage = (e: MessageEvent) => {
    const m = e.data;
    if (m?.type === "rows") {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m.rows);
    } else if (m?.type === "ready") reader.alive = true;
    else if (m?.type === "failed") fail(`could not open the database: ${m.error}`);
    else if (m?.type === "stopped") stopped?.();
  };
  worker.onerror = (e) => fail(String((e as ErrorEvent).message ?? e));
  post({ type: "open", path });
  readers.set(db, reader);
  return true;
}

/** Retires the database's reader as if its thread had failed (what an uncaught error in it does). */
export function abandonSqliteReader(db: Database, why: string): void {
  readers.get(db)?.abandon(why);
}

/** Stops the database's reader (closeDeps): queries after this run on the database. */
export async function stopSqliteReader(db: Database): Promise<void> {
  await readers.get(db)?.stop();
  readers.delete(db);
}
