// The PostgreSQL/MySQL worker (sql-worker.ts): its own connection, on its own thread, through Bun's built-in
// SQL client (the wire protocol parsed natively, not in JavaScript). It commits the write-behind's
// transactions, each a list of compiled statements, whole or not at all. `bun build --compile` needs this
// file as an entry point of its own (scripts/build.ts lists it).
import { SQL } from "bun";
import { unpackStatements, type WorkerRequest, type WorkerStatement } from "./worker-protocol.ts";
import { copyRows } from "../../db/copy.ts";
import { isDatabaseUnavailable } from "../../db/timeouts.ts";

declare const self: Worker;

let sql: SQL | null = null;
let url = "";
/** Bounds from the open message (db/timeouts.ts): connecting, and a whole transaction. */
let connectMs = 0;
let queryMs = 0;

function client(): SQL {
  // A connection the server dropped is replaced on the next write; Bun's client makes it when first used.
  sql ??= new SQL(url, { max: 1, connectionTimeout: Math.max(1, Math.ceil(connectMs / 1000)) });
  return sql;
}

/**
 * A transaction that does not finish within the bound is abandoned with its connection (closed at once: the
 * server rolls back what it had not committed), so the writes queued behind it are not held by a server that
 * stopped answering; the main thread hears it failed and tries again later.
 */
async function bounded<T>(work: (db: SQL) => Promise<T>): Promise<T> {
  const db = client();
  if (!(queryMs > 0)) return work(db);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (sql === db) sql = null;
      void db.close({ timeout: 0 }).catch(() => {});
      reject(
        Object.assign(new Error(`the database did not answer within ${queryMs} ms (write)`), {
          code: "DB_UNAVAILABLE",
        }),
      );
    }, queryMs);
  });
  return Promise.race([work(db), expired]).finally(() => clearTimeout(timer));
}
/** COPY is PostgreSQL's; on MySQL the statements' INSERTs run. */
let postgres = false;
/** Messages are handled one after another: a stop waits for the transaction before it. */
let queue: Promise<void> = Promise.resolve();

/**
 * Answers the `gone` tags of the statements that changed no row. The statements are sent together and the
 * server runs them in order: one round trip for the lot, where awaiting each cost one per statement (a slice
 * of a thousand users' calls is thousands of statements, several times faster and cheaper sent together, on
 * PostgreSQL and MariaDB alike). An `orElse` runs after them, in the
 * same transaction: each is an insert of a rollup row its update did not find, or the balance charges of a
 * lease row found gone, whose rows the slice's counters have locked already; none depends on the order.
 */
async function write(db: SQL, list: WorkerStatement[]): Promise<string[]> {
  const gone: string[] = [];
  await db.begin(async (tx) => {
    // The log rows lead the list: they go first, as COPY where they can (a connection runs nothing else while
    // a COPY is open), consecutive statements of one COPY text in one stream.
    let from = 0;
    if (postgres) {
      while (from < list.length && list[from].copy) {
        const copy = list[from].copy!;
        let data = "";
        let to = from;
        for (; to < list.length && list[to].copy?.sql === copy.sql; to++) {
          const rows = copyRows(list[to].parameters, copy.width);
          if (rows === undefined) break;
          data += rows;
        }
        if (to === from) break;
        const w = tx.unsafe(copy.sql).writable().getWriter();
        await w.write(data);
        await w.close();
        from = to;
      }
    }
    const rest = from === 0 ? list : list.slice(from);
    const results = await Promise.all(rest.map((s) => tx.unsafe(s.sql, s.parameters as any[])));
    for (let i = 0; i < rest.length; i++) {
      // `count` is the rows the statement changed (MySQL: changed, not matched; every statement here with an
      // `orElse` changes the row it finds).
      if (results[i].count > 0) continue;
      const s = rest[i];
      if (s.gone !== undefined) gone.push(s.gone);
      for (const e of s.orElse ?? []) await tx.unsafe(e.sql, e.parameters as any[]);
    }
  });
  return gone;
}

async function handle(m: WorkerRequest): Promise<void> {
  if (m.type === "stop") {
    await sql?.close().catch(() => {});
    sql = null;
    self.postMessage({ type: "stopped" });
  } else if (m.type === "write") {
    try {
      const list = unpackStatements(m.statements);
      self.postMessage({ type: "written", id: m.id, gone: await bounded((db) => write(db, list)) });
    } catch (err) {
      // A connection lost under the transaction: the next write starts on a new client.
      if (sql && isDatabaseUnavailable(err)) {
        void sql.close({ timeout: 0 }).catch(() => {});
        sql = null;
      }
      self.postMessage({ type: "written", id: m.id, error: String((err as Error)?.message ?? err) });
    }
  } else if ("url" in m) {
    try {
      ({ url, connectMs, queryMs } = m);
      postgres = /^postgres(ql)?:/i.test(m.url);
      // A database this client cannot reach or speak to (a DSN option it does not know, an authentication
      // method it lacks) fails here, and the write-behind stays on the main connection.
      await bounded((db) => db.unsafe("select 1"));
      self.postMessage({ type: "ready" });
    } catch (err) {
      self.postMessage({ type: "failed", error: String((err as Error)?.message ?? err) });
    }
  }
}

self.onmessage = (e: MessageEvent<WorkerRequest>) => {
  queue = queue.then(() => handle(e.data));
};
