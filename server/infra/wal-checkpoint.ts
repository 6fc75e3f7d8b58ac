// SQLite's automatic checkpoint runs inside the COMMIT that crosses 1000 WAL pages, on the connection that
// committed — for the gateway, the event loop's thread: the write-behind's commit then stalled every request
// for tens of milliseconds while pages were copied into the database file. Here the main connection stops
// checkpointing itself and a worker thread with its own connection checkpoints (PASSIVE) every second. If the
// worker cannot start, SQLite's automatic checkpoints stay on.
import type { Database } from "../../db/index.ts";
import { rawSqlite } from "../../db/index.ts";

export const CHECKPOINT_INTERVAL_MS = 1000;

export interface Checkpointer {
  /** Resolves with the latest report once a checkpoint has run (tests). */
  next(): Promise<{ log: number; checkpointed: number }>;
  stop(): Promise<void>;
}

export function startWalCheckpointer(db: Database, path: string, intervalMs = CHECKPOINT_INTERVAL_MS): Checkpointer | null {
  const raw = rawSqlite(db);
  if (!raw || path === ":memory:" || !path) return null;
  let worker: Worker;
  try {
    worker = new Worker(workerUrl());
  } catch (e) {
    console.error("WAL checkpointer could not start; SQLite checkpoints on commit:", (e as Error).message);
    return null;
  }
  (worker as unknown as { unref(): void }).unref();
  const waiters: ((r: { log: number; checkpointed: number }) => void)[] = [];
  let stopped: (() => void) | null = null;
  worker.onmessage = (e: MessageEvent) => {
    if (e.data === "ready") raw.exec("PRAGMA wal_autocheckpoint = 0;");
    else if (e.data === "stopped") stopped?.();
    else if (e.data?.error) console.error("WAL checkpoint failed:", e.data.error);
    else if (e.data && typeof e.data.log === "number") for (const w of waiters.splice(0)) w(e.data);
  };
  worker.onerror = (e) => {
    // Without the worker the main connection checkpoints on commit again, as SQLite does by default.
    console.error("WAL checkpointer failed; SQLite checkpoints on commit:", (e as ErrorEvent).message ?? e);
    raw.exec("PRAGMA wal_autocheckpoint = 1000;");
  };
  worker.postMessage({ path, intervalMs });
  return {
    next: () => new Promise((resolve) => waiters.push(resolve)),
    async stop() {
      const done = new Promise<void>((resolve) => (stopped = resolve));
      worker.postMessage("stop");
      await Promise.race([done, Bun.sleep(1000)]);
      worker.terminate();
      try {
        raw.exec("PRAGMA wal_autocheckpoint = 1000;");
      } catch {}
    },
  };
}

/** From source the worker sits next to this file; in the compiled binary every module's import.meta.url is
 * the entry point's (server/main.ts), and scripts/build.ts embeds the worker under its path below server/. */
function workerUrl(): string {
  const compiled = /\$bunfs|~BUN/.test(import.meta.url);
  return new URL(compiled ? "./infra/wal-checkpoint-worker.ts" : "./wal-checkpoint-worker.ts", import.meta.url).href;
}
