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
  | { type: "write"; id: number; statements: PackedStatements }
  | { type: "stop" };

/** The answer to a write: committed (with the `gone` tags of the statements that changed no row) or rolled back. */
export type WrittenMessage = { type: "written"; id: number; gone?: string[]; error?: string };

/**
 * A transaction's statements as posted to a worker: each SQL text once, the rest in flat lists. Structured
 * cloning copies every object and string it meets: posting a slice of 1,000 users' calls on PostgreSQL (~3,000
 * statement objects, each with its text) held the event loop 3.6 ms; packed, 0.5 ms, plus 0.4 ms to pack.
 */
export interface PackedStatements {
  texts: string[];
  /** Per statement: its text's index, its parameter count, its orElse count; then each orElse statement's text
   * index and parameter count. */
  shape: Int32Array;
  /** Every statement's parameters, one after another in the order of `shape`. */
  params: unknown[];
  /** Per statement (not orElse): its `gone` tag, or null. */
  gone: (string | null)[];
}

export function packStatements(list: readonly WorkerStatement[]): PackedStatements {
  const texts: string[] = [];
  const index = new Map<string, number>();
  const shape: number[] = [];
  const params: unknown[] = [];
  const gone: (string | null)[] = [];
  const add = (s: { sql: string; parameters: readonly unknown[] }) => {
    let t = index.get(s.sql);
    if (t === undefined) {
      t = texts.length;
      texts.push(s.sql);
      index.set(s.sql, t);
    }
    shape.push(t, s.parameters.length);
    for (let i = 0; i < s.parameters.length; i++) params.push(s.parameters[i]);
  };
  for (const s of list) {
    add(s);
    shape.push(s.orElse?.length ?? 0);
    for (const e of s.orElse ?? []) add(e);
    gone.push(s.gone ?? null);
  }
  return { texts, shape: Int32Array.from(shape), params, gone };
}

export function unpackStatements(p: PackedStatements): WorkerStatement[] {
  const out: WorkerStatement[] = [];
  let at = 0;
  let param = 0;
  const next = () => {
    const sql = p.texts[p.shape[at++]];
    const n = p.shape[at++];
    const parameters = p.params.slice(param, param + n);
    param += n;
    return { sql, parameters };
  };
  for (let i = 0; i < p.gone.length; i++) {
    const s: WorkerStatement = next();
    const k = p.shape[at++];
    if (k > 0) {
      s.orElse = [];
      for (let j = 0; j < k; j++) s.orElse.push(next());
    }
    const g = p.gone[i];
    if (g !== null) s.gone = g;
    out.push(s);
  }
  return out;
}
