// Kysely over bun:sqlite, waiting for the write lock without holding the event loop. bun:sqlite runs a statement
// on the calling thread, and SQLite's busy handler, when another connection holds the write lock (the write
// worker's slice of logs, a batch of old logs being deleted: tens of ms), sleeps on that thread: every relay
// call in flight waited with it. Here the connection's own busy timeout is 0, a statement refused with
// SQLITE_BUSY is tried again after an async pause, and the wait ends with the same error after as long as the
// busy timeout allowed before. Otherwise Kysely's own SQLite driver (0.29): one connection, plain BEGIN (and no
// savepoints: nothing here nests transactions). Kysely
// lends the connection to one query or transaction at a time (its RuntimeDriver locks it for adapters without
// multiple connections), so a statement waiting here holds back the connection's other queries, never the
// loop, and never runs inside a transaction it was not issued in.
import type { Database as SqliteDatabase, Statement } from "bun:sqlite";
import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from "kysely";
import { jsonBlobsAsText } from "./json-columns.ts";

/** How long a statement waits for the write lock in all (what `busy_timeout` was on this connection). */
export const SQLITE_BUSY_WAIT_MS = 5000;
/** Pauses between tries: short first (most holds are a slice's few ms), then at most this. */
const RETRY_MAX_MS = 4;

/** What the connection prepares statements with (db/index.ts keeps them compiled). */
export interface StatementSource {
  prepare(sql: string): Statement;
  close(): void;
}

/** SQLITE_BUSY and its recovery/timeout variants: worth another try. SQLITE_BUSY_SNAPSHOT is not: the
 * transaction read a state another writer has since changed, and only a new transaction can write. */
function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_RECOVERY" || code === "SQLITE_BUSY_TIMEOUT";
}

class BunSqliteConnection implements DatabaseConnection {
  constructor(private readonly statements: StatementSource) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const parameters = query.parameters as any;
    let deadline = 0;
    for (let pause = 1; ; pause = Math.min(pause * 2, RETRY_MAX_MS)) {
      // Taken from the cache on every try: the cache may have been renewed (its statements finalized) meanwhile.
      const stmt = this.statements.prepare(query.sql);
      try {
        // As Kysely's driver: the parameters as one array (positional), rows for a statement that returns any.
        if ((stmt as unknown as { reader: boolean }).reader) return { rows: stmt.all(parameters) as R[] };
        const { changes, lastInsertRowid } = stmt.run(parameters);
        return {
          rows: [],
          numAffectedRows: changes != null ? BigInt(changes) : undefined,
          insertId: lastInsertRowid != null ? BigInt(lastInsertRowid) : undefined,
        };
      } catch (e) {
        if (!isBusy(e)) throw e;
        const now = performance.now();
        deadline ||= now + SQLITE_BUSY_WAIT_MS;
        if (now >= deadline) throw e;
      }
      await Bun.sleep(pause);
    }
  }

  // biome-ignore lint/correctness/useYield: the driver interface wants an async generator; this one only refuses.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not supported on SQLite here");
  }
}

class BunSqliteDriver implements Driver {
  private readonly connection: BunSqliteConnection;
  constructor(private readonly statements: StatementSource) {
    this.connection = new BunSqliteConnection(statements);
  }
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }
  async beginTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw("begin"));
  }
  async commitTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw("commit"));
  }
  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw("rollback"));
  }
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {
    this.statements.close();
  }
}

/** SQLite's query compiler, adapter and introspector around `driver` (also the reader thread's, sqlite-reader.ts),
 * which reads new-api's JSON BLOBs as text (json-columns.ts). */
export function sqliteDialect(driver: Driver): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => jsonBlobsAsText(driver),
    createIntrospector: (db: Kysely<any>) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}

/** The main connection's dialect. `raw` has its busy timeout set to 0 here: the waiting is the driver's. */
export function bunSqliteDialect(raw: SqliteDatabase, statements: StatementSource): Dialect {
  raw.exec("PRAGMA busy_timeout = 0;");
  return sqliteDialect(new BunSqliteDriver(statements));
}
