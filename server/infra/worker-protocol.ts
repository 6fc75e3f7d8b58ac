// What the main thread and a database worker thread (sqlite-worker-thread.ts, sql-worker-thread.ts) say to
// each other: the write-behind's transactions as compiled statements, and the answer to each.

/** One statement of a transaction. When it changes no row, `orElse` runs in its place (the insert of an
 * update-or-insert rollup; the balance charges of a lease row found gone) and `gone`, when set, is reported. */
export interface WorkerStatement {
  sql: string;
  parameters: unknown[];
  orElse?: { sql: string; parameters: unknown[] }[];
  gone?: string;
}

export type WorkerRequest =
  | { type: "open"; path: string; intervalMs: number }
  | { type: "open"; url: string }
  | { type: "write"; id: number; statements: WorkerStatement[] }
  | { type: "stop" };

/** The answer to a write: committed (with the `gone` tags of the statements that changed no row) or rolled back. */
export type WrittenMessage = { type: "written"; id: number; gone?: string[]; error?: string };
