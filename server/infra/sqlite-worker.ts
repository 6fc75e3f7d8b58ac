// A worker thread with its own connection to the SQLite file (sqlite-worker-thread.ts), for the two kinds of
// synchronous SQLite work that would otherwise run on the event loop:
// - the write-behind's transactions (logs, counters, debits: about a tenth of the relay's CPU under load, and
//   every statement a pause for the requests in flight). The main thread compiles the statements and posts
//   them; the worker commits each transaction whole or not at all and answers (statement-worker.ts).
// - WAL checkpoints: SQLite's automatic checkpoint runs inside the COMMIT that crosses 1000 WAL pages, on the
//   connection that committed, and stalled requests for tens of milliseconds. The main connection stops
//   checkpointing itself and the worker checkpoints (PASSIVE) every second.
// If the worker cannot start or fails, the write-behind writes on the main connection again (in small paced
// slices) and SQLite's automatic checkpoints come back on.
import type { Database } from "../../db/index.ts";
import { rawSqlite } from "../../db/index.ts";
import { spawnStatementWorker, stopWorker, workerFor, workerUrl, type StatementWorker } from "./statement-worker.ts";

export const CHECKPOINT_INTERVAL_MS = 1000;

export interface SqliteWorker extends StatementWorker {
  /** Resolves with the latest report once a checkpoint has run (tests). */
  next(): Promise<{ log: number; checkpointed: number }>;
}

/** The running worker of a SQLite database, if it has one. */
export const sqliteWorkerFor = workerFor;
/** Stops the database's worker after its last transaction (closeDeps, after the write-behind's final flush). */
export const stopSqliteWorker = stopWorker;

export function startSqliteWorker(db: Database, path: string, intervalMs = CHECKPOINT_INTERVAL_MS): SqliteWorker | null {
  const raw = rawSqlite(db);
  if (!raw || path === ":memory:" || !path) return null;
  const waiters: ((r: { log: number; checkpointed: number }) => void)[] = [];
  // Without the worker the main connection checkpoints on commit again, as SQLite does by default.
  const autocheckpoint = () => {
    try {
      raw.exec("PRAGMA wal_autocheckpoint = 1000;");
    } catch {}
  };
  const worker = spawnStatementWorker(db, workerUrl("sqlite-worker-thread.ts"), { type: "open", path, intervalMs }, "SQLite worker", {
    ready: () => raw.exec("PRAGMA wal_autocheckpoint = 0;"),
    failed: autocheckpoint,
    stopped: autocheckpoint,
    message(m) {
      if (m?.type !== "checkpoint") return;
      if (m.error) console.error("WAL checkpoint failed:", m.error);
      else for (const w of waiters.splice(0)) w(m);
    },
  });
  if (!worker) return null;
  return Object.assign(worker, { next: () => new Promise<{ log: number; checkpointed: number }>((resolve) => waiters.push(resolve)) });
}
