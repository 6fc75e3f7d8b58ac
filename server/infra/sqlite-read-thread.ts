// The SQLite reader (sqlite-reader.ts): a read-only connection to the database file on its own thread, for the
// console's heavy reads (log pages and their totals, log stats, dashboard rollups, drawing and task lists). It
// answers one query after another. In WAL mode it reads the last committed state without blocking the writers
// or being blocked by them. `bun build --compile` needs this file as an entry point of its own (scripts/build.ts
// lists it).
import { Database } from "bun:sqlite";
import type { ReaderRequest } from "./sqlite-reader.ts";
import { statementCache } from "./sqlite-statements.ts";

declare const self: Worker;

let db: Database | null = null;
/** The console's filters combine into a few dozen query texts. */
const statements = statementCache(() => db!, 200);

self.onmessage = (e: MessageEvent<ReaderRequest>) => {
  const m = e.data;
  if (m.type === "query") {
    try {
      self.postMessage({ type: "rows", id: m.id, rows: statements.prepared(m.sql).all(m.parameters as any) });
    } catch (err) {
      self.postMessage({ type: "rows", id: m.id, error: String((err as Error)?.message ?? err) });
    }
  } else if (m.type === "stop") {
    statements.clear();
    db?.close();
    db = null;
    self.postMessage({ type: "stopped" });
  } else if (m.type === "open") {
    try {
      db = new Database(m.path, { readonly: true });
      db.exec("PRAGMA busy_timeout = 5000;");
      db.query("select 1").get();
      self.postMessage({ type: "ready" });
    } catch (err) {
      self.postMessage({ type: "failed", error: String((err as Error)?.message ?? err) });
    }
  }
};
