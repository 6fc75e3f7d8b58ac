// The WAL checkpointer (wal-checkpoint.ts): its own connection to the SQLite file, copying the write-ahead
// log back into the database every interval with a PASSIVE checkpoint, which never waits on readers or the
// writer. `bun build --compile` needs this file as an entry point of its own (scripts/build.ts lists it).
import { Database } from "bun:sqlite";

declare const self: Worker;

let db: Database | null = null;
let timer: ReturnType<typeof setInterval> | null = null;

self.onmessage = (e: MessageEvent<{ path: string; intervalMs: number } | "stop">) => {
  if (e.data === "stop") {
    if (timer) clearInterval(timer);
    db?.close();
    self.postMessage("stopped");
    return;
  }
  db = new Database(e.data.path);
  db.exec("PRAGMA busy_timeout = 1000;");
  const checkpoint = db.query<{ busy: number; log: number; checkpointed: number }, []>("PRAGMA wal_checkpoint(PASSIVE)");
  const run = () => {
    try {
      const r = checkpoint.get();
      self.postMessage({ log: r?.log ?? 0, checkpointed: r?.checkpointed ?? 0 });
    } catch (err) {
      self.postMessage({ error: String((err as Error)?.message ?? err) });
    }
  };
  timer = setInterval(run, e.data.intervalMs);
  self.postMessage("ready");
};
