// The SQLite worker (sqlite-worker.ts): its own connection to the database file, on its own thread. It runs
// the write-behind's transactions (each a list of compiled statements, committed or rolled back whole) and
// copies the write-ahead log back into the database every interval with a PASSIVE checkpoint, which never
// waits on readers or the writer. `bun build --compile` needs this file as an entry point of its own
// (scripts/build.ts lists it).
import { Database } from "bun:sqlite";
import { unpackStatements, type WorkerRequest, type WorkerStatement } from "./worker-protocol.ts";
import { statementCache } from "./sqlite-statements.ts";

declare const self: Worker;

let db: Database | null = null;
let timer: ReturnType<typeof setInterval> | null = null;
const statements = statementCache(() => db!, 200);
const prepared = statements.prepared;

/** Answers the `gone` tags of the statements that changed no row. */
function write(list: WorkerStatement[]): string[] {
  const gone: string[] = [];
  db!.exec("BEGIN IMMEDIATE");
  try {
    for (const s of list) {
      if (prepared(s.sql).run(s.parameters as any).changes > 0) continue;
      if (s.gone !== undefined) gone.push(s.gone);
      for (const e of s.orElse ?? []) prepared(e.sql).run(e.parameters as any);
    }
    db!.exec("COMMIT");
    return gone;
  } catch (e) {
    try {
      db!.exec("ROLLBACK");
    } catch {}
    throw e;
  }
}

self.onmessage = (e: MessageEvent<WorkerRequest>) => {
  const m = e.data;
  if (m.type === "stop") {
    if (timer) clearInterval(timer);
    statements.clear();
    db?.close();
    db = null;
    self.postMessage({ type: "stopped" });
    return;
  }
  if (m.type === "write") {
    try {
      self.postMessage({ type: "written", id: m.id, gone: write(unpackStatements(m.statements)) });
    } catch (err) {
      self.postMessage({ type: "written", id: m.id, error: String((err as Error)?.message ?? err) });
    }
    return;
  }
  if (!("path" in m)) return;
  db = new Database(m.path);
  // The same settings as the main connection (db/index.ts): a write waits for the other connection's
  // transaction instead of failing.
  db.exec(
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;",
  );
  db.exec(`PRAGMA wal_autocheckpoint = ${Math.trunc(m.autocheckpointPages)};`);
  // A slice's multi-row statements keep a statement journal; past 64 KiB SQLite spilled it to a temporary
  // file (~14 new files and ~560 page writes a second at 11,000 calls/s). In memory it stays a slice's size.
  db.exec("PRAGMA temp_store = MEMORY;");
  const checkpoint = db.query<{ busy: number; log: number; checkpointed: number }, []>(
    "PRAGMA wal_checkpoint(PASSIVE)",
  );
  const run = () => {
    try {
      const r = checkpoint.get();
      self.postMessage({ type: "checkpoint", log: r?.log ?? 0, checkpointed: r?.checkpointed ?? 0 });
    } catch (err) {
      self.postMessage({ type: "checkpoint", error: String((err as Error)?.message ?? err) });
    }
  };
  timer = setInterval(run, m.intervalMs);
  // What the connection runs with, as SQLite reads it back (tests, and anyone diagnosing the worker).
  const pragma = (name: string) => Object.values(db!.query(`PRAGMA ${name}`).get() as Record<string, unknown>)[0];
  self.postMessage({
    type: "ready",
    pragmas: {
      journal_mode: pragma("journal_mode"),
      synchronous: pragma("synchronous"),
      temp_store: pragma("temp_store"),
      wal_autocheckpoint: pragma("wal_autocheckpoint"),
    },
  });
};
