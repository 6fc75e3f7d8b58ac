// A worker thread with its own connection to the SQLite file (sqlite-worker-thread.ts), for the two kinds of
// synchronous SQLite work that would otherwise run on the event loop:
// - the write-behind's transactions (logs, counters, debits: about a tenth of the relay's CPU under load, and
//   every statement a pause for the requests in flight). The main thread compiles the statements and posts
//   them; the worker commits each transaction whole or not at all and answers.
// - WAL checkpoints: SQLite's automatic checkpoint runs inside the COMMIT that crosses 1000 WAL pages, on the
//   connection that committed, and stalled requests for tens of milliseconds. The main connection stops
//   checkpointing itself and the worker checkpoints (PASSIVE) every second.
// If the worker cannot start or fails, the write-behind writes on the main connection again (in small paced
// slices) and SQLite's automatic checkpoints come back on.
import type { Database } from "../../db/index.ts";
import { rawSqlite } from "../../db/index.ts";
import type { WorkerRequest, WorkerStatement } from "./sqlite-worker-thread.ts";

export type { WorkerStatement } from "./sqlite-worker-thread.ts";

export const CHECKPOINT_INTERVAL_MS = 1000;

export interface SqliteWorker {
  /** Runs the statements as one transaction on the worker's connection; rejects (rolled back) on any error. */
  write(statements: WorkerStatement[]): Promise<void>;
  /** false once the worker failed or stopped: writers fall back to the main connection. */
  readonly alive: boolean;
  /** Resolves with the latest report once a checkpoint has run (tests). */
  next(): Promise<{ log: number; checkpointed: number }>;
  stop(): Promise<void>;
}

const workers = new WeakMap<Database, SqliteWorker>();

/** The running worker of a SQLite database, if it has one. */
export function sqliteWorkerFor(db: Database): SqliteWorker | null {
  const w = workers.get(db);
  return w?.alive ? w : null;
}

/** Stops the database's worker after its last transaction (closeDeps, after the write-behind's final flush). */
export async function stopSqliteWorker(db: Database): Promise<void> {
  await workers.get(db)?.stop();
  workers.delete(db);
}

export function startSqliteWorker(db: Database, path: string, intervalMs = CHECKPOINT_INTERVAL_MS): SqliteWorker | null {
  const raw = rawSqlite(db);
  if (!raw || path === ":memory:" || !path) return null;
  let worker: Worker;
  try {
    worker = new Worker(workerUrl());
  } catch (e) {
    console.error("SQLite worker could not start; writes stay on the main thread and SQLite checkpoints on commit:", (e as Error).message);
    return null;
  }
  (worker as unknown as { unref(): void }).unref();
  let alive = true;
  let nextId = 1;
  const writes = new Map<number, { resolve(): void; reject(e: Error): void }>();
  const waiters: ((r: { log: number; checkpointed: number }) => void)[] = [];
  let stopped: (() => void) | null = null;
  const fail = (why: string) => {
    if (!alive) return;
    alive = false;
    // Without the worker the main connection checkpoints on commit again, as SQLite does by default.
    console.error(`SQLite worker failed (${why}); writes go back to the main thread and SQLite checkpoints on commit`);
    try {
      raw.exec("PRAGMA wal_autocheckpoint = 1000;");
    } catch {}
    for (const w of writes.values()) w.reject(new Error(`the SQLite worker failed: ${why}`));
    writes.clear();
  };
  worker.onmessage = (e: MessageEvent) => {
    const m = e.data;
    if (m?.type === "ready") raw.exec("PRAGMA wal_autocheckpoint = 0;");
    else if (m?.type === "stopped") stopped?.();
    else if (m?.type === "written") {
      const w = writes.get(m.id);
      writes.delete(m.id);
      if (m.error) w?.reject(new Error(m.error));
      else w?.resolve();
    } else if (m?.type === "checkpoint") {
      if (m.error) console.error("WAL checkpoint failed:", m.error);
      else for (const w of waiters.splice(0)) w(m);
    }
  };
  worker.onerror = (e) => fail(String((e as ErrorEvent).message ?? e));
  const post = (m: WorkerRequest) => worker.postMessage(m);
  post({ type: "open", path, intervalMs });
  const handle: SqliteWorker = {
    get alive() {
      return alive;
    },
    write(statements) {
      if (!alive) return Promise.reject(new Error("the SQLite worker is not running"));
      const id = nextId++;
      return new Promise<void>((resolve, reject) => {
        writes.set(id, { resolve, reject });
        post({ type: "write", id, statements });
      });
    },
    next: () => new Promise((resolve) => waiters.push(resolve)),
    async stop() {
      if (!alive) return;
      const done = new Promise<void>((resolve) => (stopped = resolve));
      // Messages run in order: every write posted before this one has been answered when "stopped" comes.
      post({ type: "stop" });
      await Promise.race([done, Bun.sleep(5000)]);
      alive = false;
      for (const w of writes.values()) w.reject(new Error("the SQLite worker stopped"));
      writes.clear();
      worker.terminate();
      try {
        raw.exec("PRAGMA wal_autocheckpoint = 1000;");
      } catch {}
    },
  };
  workers.set(db, handle);
  return handle;
}

/** From source the worker sits next to this file; in the compiled binary every module's import.meta.url is
 * the entry point's (server/main.ts), and scripts/build.ts embeds the worker under its path below server/. */
function workerUrl(): string {
  const compiled = /\$bunfs|~BUN/.test(import.meta.url);
  return new URL(compiled ? "./infra/sqlite-worker-thread.ts" : "./sqlite-worker-thread.ts", import.meta.url).href;
}
