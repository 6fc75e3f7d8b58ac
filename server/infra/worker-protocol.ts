// What the main thread and a database worker thread (sqlite-worker-thread.ts, sql-worker-thread.ts) say to
// each other: the write-behind's transactions as compiled statements, and the answer to each.

/** One statement of a transaction. When it changes no row, `orElse` runs in its place (the insert of an
 * update-or-insert rollup; the balance charges of a lease row found gone) and `gone`, when set, is reported. */
export interface WorkerStatement {
  sql: string;
  parameters: unknown[];
  orElse?: { sql: string; parameters: unknown[] }[];
  gone?: string;
  /** PostgreSQL: the rows of this multi-row INSERT may go as this COPY statement instead (db/copy.ts), `width`
   * parameters per row; the worker falls back to the INSERT for values COPY text is not written for. */
  copy?: { sql: string; width: number };
}

export type WorkerRequest =
  | { type: "open"; path: string; intervalMs: number; autocheckpointPages: number }
  | { type: "open"; url: string; connectMs: number; queryMs: number }
  | { type: "write"; id: number; statements: PackedStatements }
  | { type: "stop" };

/** The answer to a write: committed (with the `gone` tags of the statements that changed no row) or rolled back. */
export type WrittenMessage = { type: "written"; id: number; gone?: string[]; error?: string };

/**
 * A transaction's statements as posted to a worker: each SQL text once, the parameters in flat lists. Structured
 * cloning copies every object and string it meets, so posting a slice of a thousand users' calls unpacked (thousands
 * of statement objects, each with its text) held the event loop for milliseconds (hot-path rule 12). Of what is
 * left, the strings cost most (a log row's content, username, token, model, group and IP, the same in most rows,
 * cloned once per row): short strings cross once per slice and numbers in one typed array, which halves the
 * posting of a log slice (scripts/bench/worker-post.ts measures it).
 */
export interface PackedStatements {
  texts: string[];
  /** Per statement: its text's index, its parameter count, its orElse count; then each orElse statement's text
   * index and parameter count. */
  shape: Int32Array;
  /** Per parameter, in the order of `shape`: what it is (the P_* kinds). */
  kinds: Uint8Array;
  /** Per parameter: its value (P_NUMBER), its index in `strings` (P_STRING) or in `others` (P_OTHER). */
  values: Float64Array;
  /** Strings: each short one once, long ones (mostly unique: a log row's `other`) each time they occur. */
  strings: string[];
  /** Parameters of any other type (bigint, bytes, undefined), cloned as they are. */
  others: unknown[];
  /** Per statement (not orElse): its `gone` tag, or null. */
  gone: (string | null)[];
  /** Per statement (not orElse): its `copy`, or null. */
  copies: (WorkerStatement["copy"] | null)[];
}

const P_NUMBER = 0,
  P_STRING = 1,
  P_NULL = 2,
  P_TRUE = 3,
  P_FALSE = 4,
  P_OTHER = 5;
/** Strings up to this length are looked up and sent once; longer ones are rarely repeated and would only pay
 * for hashing. */
const SHARED_STRING_MAX = 64;

export function packStatements(list: readonly WorkerStatement[]): PackedStatements {
  let count = 0;
  for (const s of list) {
    count += s.parameters.length;
    if (s.orElse) for (const e of s.orElse) count += e.parameters.length;
  }
  const texts: string[] = [];
  const index = new Map<string, number>();
  const shape: number[] = [];
  const kinds = new Uint8Array(count);
  const values = new Float64Array(count);
  const strings: string[] = [];
  const shared = new Map<string, number>();
  const others: unknown[] = [];
  const gone: (string | null)[] = [];
  const copies: (WorkerStatement["copy"] | null)[] = [];
  let at = 0;
  const add = (s: { sql: string; parameters: readonly unknown[] }) => {
    let t = index.get(s.sql);
    if (t === undefined) {
      t = texts.length;
      texts.push(s.sql);
      index.set(s.sql, t);
    }
    const ps = s.parameters;
    shape.push(t, ps.length);
    for (let i = 0; i < ps.length; i++, at++) {
      const v = ps[i];
      if (typeof v === "number")
        values[at] = v; // kinds[at] is already P_NUMBER
      else if (typeof v === "string") {
        kinds[at] = P_STRING;
        let k = v.length <= SHARED_STRING_MAX ? shared.get(v) : undefined;
        if (k === undefined) {
          k = strings.length;
          strings.push(v);
          if (v.length <= SHARED_STRING_MAX) shared.set(v, k);
        }
        values[at] = k;
      } else if (v === null) kinds[at] = P_NULL;
      else if (v === true) kinds[at] = P_TRUE;
      else if (v === false) kinds[at] = P_FALSE;
      else {
        kinds[at] = P_OTHER;
        values[at] = others.length;
        others.push(v);
      }
    }
  };
  for (const s of list) {
    add(s);
    shape.push(s.orElse?.length ?? 0);
    if (s.orElse) for (const e of s.orElse) add(e);
    gone.push(s.gone ?? null);
    copies.push(s.copy ?? null);
  }
  return { texts, shape: Int32Array.from(shape), kinds, values, strings, others, gone, copies };
}

export function unpackStatements(p: PackedStatements): WorkerStatement[] {
  const out: WorkerStatement[] = [];
  let at = 0;
  let param = 0;
  const value = (i: number): unknown => {
    switch (p.kinds[i]) {
      case P_NUMBER:
        return p.values[i];
      case P_STRING:
        return p.strings[p.values[i]];
      case P_NULL:
        return null;
      case P_TRUE:
        return true;
      case P_FALSE:
        return false;
      default:
        return p.others[p.values[i]];
    }
  };
  const next = () => {
    const sql = p.texts[p.shape[at++]];
    const n = p.shape[at++];
    const parameters: unknown[] = [];
    for (let i = 0; i < n; i++) parameters.push(value(param + i));
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
    const c = p.copies[i];
    if (c) s.copy = c;
    out.push(s);
  }
  return out;
}
