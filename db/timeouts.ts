// Bounds on waiting for PostgreSQL and MySQL. Their drivers wait as long as the network lets them: a server that
// stops answering (a cut route, a full backlog, a failover) held relay calls, console calls and the shutdown's
// last flush for as long as the kernel kept the socket. Every connection taken from a pool and every query here
// ends within its bound, with DatabaseUnavailableError, and a lost connection's error is recognised as the
// database being unavailable (the caller answers 503) rather than as a fault of the request.
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from "kysely";

export interface DatabaseTimeouts {
  /** Opening a connection, or waiting for one from the pool. */
  connectMs: number;
  /** One statement, from being sent to its answer. */
  queryMs: number;
}

/** The database could not be reached or did not answer in time; nothing is known to have changed. */
export class DatabaseUnavailableError extends Error {
  readonly code = "DB_UNAVAILABLE";
  constructor(
    message: string,
    readonly cause?: unknown,
  ) {
    super(message);
  }
}

/**
 * The drivers' names for a connection that is gone or cannot be made (postgres.js, mysql2, Bun's SQL client,
 * the network stack) and the servers' for a session ended under it: PostgreSQL's class 08 (connection
 * exception) and 57P01–57P03 (terminated by an administrator, crash shutdown, cannot connect now); MariaDB's
 * server shutdown (1053), killed connection (1927) and too many connections (1040).
 */
const UNAVAILABLE_CODES = new Set([
  "DB_UNAVAILABLE",
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTCONN",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "PROTOCOL_CONNECTION_LOST",
  "PROTOCOL_SEQUENCE_TIMEOUT",
  "ER_SERVER_SHUTDOWN",
  "ER_CONNECTION_KILLED",
  "ER_CON_COUNT_ERROR",
  "57P01",
  "57P02",
  "57P03",
  "1053",
  "1927",
  "1040",
]);

/** Bun's SQL client: ERR_POSTGRES_CONNECTION_CLOSED, ..._CONNECTION_FAILED, ..._IDLE_TIMEOUT, ERR_MYSQL_... */
const BUN_SQL_UNAVAILABLE = /^ERR_(POSTGRES|MYSQL)_(CONNECTION_\w+|\w*TIMEOUT)$/;

/** True when `e` says the database is unreachable or dropped the connection, not that the statement was wrong. */
export function isDatabaseUnavailable(e: unknown): boolean {
  if (e instanceof DatabaseUnavailableError) return true;
  const x = e as { code?: unknown; errno?: unknown; message?: unknown; cause?: unknown } | null;
  if (!x || typeof x !== "object") return false;
  const code = String(x.code ?? "");
  if (
    UNAVAILABLE_CODES.has(code)
    || UNAVAILABLE_CODES.has(String(x.errno ?? ""))
    || /^08/.test(code)
    || BUN_SQL_UNAVAILABLE.test(code)
  )
    return true;
  // Kysely and the drivers sometimes wrap the socket's error; a driver's own TypeError on a closed socket
  // ("null is not an object (evaluating 'socket.write')") comes with no code at all.
  if (
    typeof x.message === "string"
    && /socket\.write|Can't add new command when connection is in closed state|closed state/i.test(x.message)
  )
    return true;
  return x.cause !== undefined && x.cause !== e && isDatabaseUnavailable(x.cause);
}

/** `work`, or DatabaseUnavailableError after `ms`; `late` receives what `work` gives if it comes after that. */
export function within<T>(work: Promise<T>, ms: number, what: string, late?: (value: T) => void): Promise<T> {
  if (!(ms > 0)) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let expired = false;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true;
      reject(new DatabaseUnavailableError(`the database did not answer within ${ms} ms (${what})`));
    }, ms);
  });
  work.then(
    (v) => {
      if (expired) late?.(v);
    },
    () => {},
  );
  return Promise.race([work, bound]).finally(() => clearTimeout(timer));
}

class TimedConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private t: DatabaseTimeouts,
  ) {}
  executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    return within(this.inner.executeQuery<R>(q), this.t.queryMs, "query");
  }
  streamQuery<R>(q: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(q, chunkSize);
  }
}

const unwrap = (c: DatabaseConnection) => (c instanceof TimedConnection ? c.inner : c);

class TimedDriver implements Driver {
  constructor(
    private inner: Driver,
    private t: DatabaseTimeouts,
  ) {}
  init() {
    return within(this.inner.init(), this.t.connectMs, "connect");
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    // A connection that arrives after the caller gave up goes straight back to the pool.
    const c = await within(
      this.inner.acquireConnection(),
      this.t.connectMs,
      "connect",
      (late) => void this.inner.releaseConnection(late).catch(() => {}),
    );
    return new TimedConnection(c, this.t);
  }
  beginTransaction(c: DatabaseConnection, s: TransactionSettings) {
    return within(this.inner.beginTransaction(unwrap(c), s), this.t.queryMs, "begin");
  }
  commitTransaction(c: DatabaseConnection) {
    return within(this.inner.commitTransaction(unwrap(c)), this.t.queryMs, "commit");
  }
  rollbackTransaction(c: DatabaseConnection) {
    return within(this.inner.rollbackTransaction(unwrap(c)), this.t.queryMs, "rollback");
  }
  releaseConnection(c: DatabaseConnection) {
    return this.inner.releaseConnection(unwrap(c));
  }
  destroy() {
    // Closing must not wait for a server that is gone: the drivers end their sockets after this anyway.
    return within(this.inner.destroy(), this.t.connectMs, "close").catch(() => {});
  }
}

/** `dialect` whose every connection and statement is bounded by `t`. */
export function timedDialect(dialect: Dialect, t: DatabaseTimeouts): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new TimedDriver(dialect.createDriver(), t),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

/** Defaults when SQL_CONNECT_TIMEOUT_MS / SQL_QUERY_TIMEOUT_MS are not set (server/config.ts). */
export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = { connectMs: 5_000, queryMs: 15_000 };
