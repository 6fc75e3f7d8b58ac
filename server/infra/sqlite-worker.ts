// A worker thread with its own connection to the SQLite file (sqlite-worker-thread.ts), for the two kinds of
// synchronous SQLite work that would otherwise run on the event loop:
// - the write-behind's transactions (logs, counters, debits: about a tenth of the relay's CPU under load, and
//   every statement a pause for the requests in flight). The main thread compiles the statements and posts
//   them; the worker commits each transaction whole or not at all and answers (statement-worker.ts).
// - WAL checkpoints: SQLite's automatic checkpoint runs inside the COMMIT that crosses 1000 WAL pages, on the
//   connection that committed, and stalled requests for tens of milliseconds. The main connection stops
//   checkpointing itself; the worker checkpoints (PASSIVE) every second, and its own commits past
//   WORKER_AUTOCHECKPOINT_PAGES of WAL.
// If the worker cannot start or fails, the write-behind writes on the main connection again (in small paced
// slices) and SQLite's automatic checkpoints come back on.
import type { Database } from "../../db/index.ts";
import { rawSqlite } from "../../db/index.ts";
import { spawnStatementWorker, stopWorker, workerFor, workerUrl, type StatementWorker } from "./statement-worker.ts";

export const CHECKPOINT_INTERVAL_MS = 1000;
/** The worker's own connection checkpoints inside the commit that takes the WAL past this many pages (SQLite's
 * default is 1,000), besides the timer's checkpoint. With a thousand users calling, a 256-call slice dirties
 * hundreds of pages (each user's and token's balance row, each user's place in the logs' user and username
 * indexes), so at 1,000 the worker copied the WAL back into the file every few commits, the same hot pages over
 * and over. At 10,000 (a WAL of up to ~40 MB under such a load; a quieter gateway's timer keeps it far smaller)
 * the worker does measurably less per call with many users and the same with one (hot-path rule 12). */
export const WORKER_AUTOCHECKPOINT_PAGES = 10_000;

export interface SqliteWorker extends StatementWorker {
  /** Resolves with the latest report once a checkpoint has run (tests). */
  next(): Promise<{ log: number; checkpointed: number }>;
  /** The worker connection's settings as SQLite reads them back, once it is open. */
  pragmas(): Promise<Record<string, unknown>>;
}

/** The running worker of a SQLite database, if it has one. */
export const sqliteWorkerFor = workerFor;
/** Stops the database's worker after its last transaction (closeDeps, after the write-behind's final flush). */
export const stopSqliteWorker = stopWorker;

export function startSqliteWorker(
  db: Database,
  path: string,
  intervalMs = CHECKPOINT_INTERVAL_MS,
): SqliteWorker | null {
  const raw = rawSqlite(db);
  if (!raw || path === ":memory:" || !path) return null;
  const waiters: ((r: { log: number; checkpointed: number }) => void)[] = [];
  // Without the worker the main connection checkpoints on commit again, as SQLite does by default.
  const autocheckpoint = () => {
    try {
      raw.exec("PRAGMA wal_autocheckpoint = 1000;");
    } catch {}
  };
  let opened: (pragmas: Record<string, unknown>) => void = () => {};
  const pragmas = new Promise<Record<string, unknown>>((resolve) => (opened = resolve));
  const worker = spawnStatementWorker(
    db,
    workerUrl("sqlite-worker-thread.ts"),
    { type: "open", path, intervalMs, autocheckpointPages: WORKER_AUTOCHECKPOINT_PAGES },
    "SQLite worker",
    {
      ready: (m) => {
        raw.exec("PRAGMA wal_autocheckpoint = 0;");
        opened(m?.pragmas ?? {});
      },
      failed: autocheckpoint,
      stopped: autocheckpoint,
      message(m) {
        if (m?.type !== "checkpoint") return;
        if (m.error) console.error("WAL checkpoint failed:", m.error);
        else for (const w of waiters.splice(0)) w(m);
      },
    },
  );
  if (!worker) return null;
  return Object.assign(worker, {
    next: () => new Promise<{ log: number; checkpointed: number }>((resolve) => waiters.push(resolve)),
    pragmas: () => pragmas,
  });
}
