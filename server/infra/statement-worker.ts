// The main thread's side of a database worker thread: posts a transaction's compiled statements, hears it
// committed (or rolled back) and keeps the database's worker where the write-behind finds it. The SQLite
// worker (sqlite-worker.ts) and the PostgreSQL/MySQL one (sql-worker.ts) are both this.
import type { CompiledQuery } from "kysely";
import { dialectOf, type Database } from "../../db/index.ts";
import { packStatements, type WorkerRequest, type WorkerStatement, type WrittenMessage } from "./worker-protocol.ts";

export type { WorkerStatement } from "./worker-protocol.ts";

export interface StatementWorker {
  /** Runs the statements as one transaction on the worker's connection and answers the `gone` tags of the
   * statements that changed no row; rejects (rolled back) on any error. */
  write(statements: WorkerStatement[]): Promise<string[]>;
  /** false once the worker failed or stopped: writers fall back to the main connection. */
  readonly alive: boolean;
  /** Retires the worker (its writes go back to the main connection), saying why on stderr. */
  abandon(why: string): void;
  stop(): Promise<void>;
}

export interface WorkerHooks {
  /** The worker is open (its first message, with whatever the worker reports of its connection). */
  ready?(m: any): void;
  /** The worker failed; writes go back to the main connection. */
  failed?(why: string): void;
  /** Any other message. */
  message?(m: any): void;
  /** After the worker has stopped. */
  stopped?(): void;
}

const workers = new WeakMap<Database, StatementWorker>();

/** The running worker of a database, if it has one. */
export function workerFor(db: Database): StatementWorker | null {
  const w = workers.get(db);
  return w?.alive ? w : null;
}

/** Stops the database's worker after its last transaction (closeDeps, after the write-behind's final flush). */
export async function stopWorker(db: Database): Promise<void> {
  await workers.get(db)?.stop();
  workers.delete(db);
}

/** Starts the thread at `url` for `db`, opens it with `open`; null when it cannot start. */
export function spawnStatementWorker(
  db: Database,
  url: string,
  open: WorkerRequest,
  name: string,
  hooks: WorkerHooks = {},
): StatementWorker | null {
  let worker: Worker;
  try {
    worker = new Worker(url);
  } catch (e) {
    console.error(`${name} could not start; writes stay on the main thread:`, (e as Error).message);
    return null;
  }
  (worker as unknown as { unref(): void }).unref();
  let alive = true;
  let nextId = 1;
  const writes = new Map<number, { resolve(gone: string[]): void; reject(e: Error): void }>();
  let stopped: (() => void) | null = null;
  const fail = (why: string) => {
    if (!alive) return;
    alive = false;
    console.error(`${name} failed (${why}); writes go back to the main thread`);
    hooks.failed?.(why);
    for (const w of writes.values()) w.reject(new Error(`the ${name} failed: ${why}`));
    writes.clear();
    worker.terminate();
  };
  worker.onmessage = (e: MessageEvent) => {
    const m = e.data;
    if (m?.type === "ready") hooks.ready?.(m);
    else if (m?.type === "failed") fail(String(m.error));
    else if (m?.type === "stopped") stopped?.();
    else if (m?.type === "written") {
      const r = m as WrittenMessage;
      const w = writes.get(r.id);
      writes.delete(r.id);
      if (r.error) w?.reject(new Error(r.error));
      else w?.resolve(r.gone ?? []);
    } else hooks.message?.(m);
  };
  worker.onerror = (e) => fail(String((e as ErrorEvent).message ?? e));
  const post = (m: WorkerRequest) => worker.postMessage(m);
  post(open);
  const handle: StatementWorker = {
    get alive() {
      return alive;
    },
    abandon: fail,
    write(statements) {
      if (!alive) return Promise.reject(new Error(`the ${name} is not running`));
      const id = nextId++;
      return new Promise<string[]>((resolve, reject) => {
        writes.set(id, { resolve, reject });
        post({ type: "write", id, statements: packStatements(statements) });
      });
    },
    async stop() {
      if (!alive) return;
      const done = new Promise<void>((resolve) => (stopped = resolve));
      // Messages run in order: every write posted before this one has been answered when "stopped" comes.
      post({ type: "stop" });
      await Promise.race([done, Bun.sleep(5000)]);
      alive = false;
      for (const w of writes.values()) w.reject(new Error(`the ${name} stopped`));
      writes.clear();
      worker.terminate();
      hooks.stopped?.();
    },
  };
  workers.set(db, handle);
  return handle;
}

/**
 * Runs one write statement on SQLite's write worker when the database has one, off the event loop; else, or when
 * the worker rolled it back, on the database (PostgreSQL and MySQL wait on a socket anyway). On SQLite's main
 * connection a write waits for the write lock while the worker holds it (a slice of the write-behind, a batch
 * of old logs being deleted: tens of milliseconds) in SQLite's busy handler, which sleeps on the calling
 * thread — the event loop. Used for the long deletes (old logs, expired cache entries) and for writes made
 * while relaying (the response cache's store, a task's row). Answers the database's result, or null when the
 * worker ran it (it does not count rows).
 */
export async function writeOffLoop<R>(
  db: Database,
  query: { compile(): CompiledQuery; execute(): Promise<R> },
): Promise<R | null> {
  const worker = dialectOf(db) === "sqlite" ? workerFor(db) : null;
  if (worker) {
    const c = query.compile();
    try {
      await worker.write([{ sql: c.sql, parameters: [...c.parameters] }]);
      return null;
    } catch {
      // Rolled back on the worker: nothing was changed there.
    }
  }
  return query.execute();
}

/** From source a worker sits next to this file; in the compiled binary every module's import.meta.url is the
 * entry point's (server/main.ts), and scripts/build.ts embeds the workers under their paths below server/. */
export function workerUrl(file: string): string {
  const compiled = /\$bunfs|~BUN/.test(import.meta.url);
  return new URL(compiled ? `./infra/${file}` : `./${file}`, import.meta.url).href;
}
