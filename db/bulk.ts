// Multi-row INSERT written as plain SQL. The write-behind inserts hundreds of log rows a second, and
// building them through Kysely's query tree (a frozen node per value) cost more CPU than SQLite's own
// insert; the text here is cached per column set and row count, so the statement cache reuses it too.
import { CompiledQuery, type Kysely } from "kysely";
import { dialectOf, identifierQuoter, placeholders, type Dialect } from "./dialect.ts";
import { copyStatement } from "./copy.ts";

const texts = new Map<string, string>();
const TEXT_CACHE_SIZE = 200;

/** The statement text under `key`, made once. */
function cachedText(key: string, make: () => string): string {
  let text = texts.get(key);
  if (text) return text;
  text = make();
  if (texts.size >= TEXT_CACHE_SIZE) texts.clear();
  texts.set(key, text);
  return text;
}

function insertText(dialect: Dialect, table: string, columns: string[], rows: number): string {
  return cachedText(`${dialect}|${table}|${columns.join(",")}|${rows}`, () => {
    const q = identifierQuoter(dialect);
    const ph = placeholders(dialect);
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) tuples.push(`(${columns.map(ph).join(", ")})`);
    return `insert into ${q(table)} (${columns.map(q).join(", ")}) values ${tuples.join(", ")}`;
  });
}

function copyText(table: string, columns: string[]): string {
  return cachedText(`copy|${table}|${columns.join(",")}`, () => copyStatement(table, columns));
}

/** Whether the row's defined keys are exactly `columns`, in that order. */
function sameColumns(row: Record<string, unknown>, columns: string[]): boolean {
  let i = 0;
  for (const k in row) {
    if (row[k] === undefined) continue;
    if (columns[i++] !== k) return false;
  }
  return i === columns.length;
}

type Flatten = (row: Record<string, unknown>, out: unknown[]) => boolean;
const flatteners = new Map<string, Flatten>();

/**
 * Appends a row's values for `columns` to `out`, or answers false (appending nothing) when one is undefined.
 * Generated per column set with one named property read per column: the write-behind's rows share one shape,
 * and a generic `row[column]` loop over them cost about five times as much.
 */
function flattenerFor(columns: string[], sig: string): Flatten {
  let f = flatteners.get(sig);
  if (!f) {
    const reads = columns
      .map((c, i) => `const v${i} = row[${JSON.stringify(c)}]; if (v${i} === undefined) return false;`)
      .join("\n");
    f = new Function(
      "row",
      "out",
      `${reads}\nout.push(${columns.map((_, i) => `v${i}`).join(", ")});\nreturn true;`,
    ) as Flatten;
    if (flatteners.size >= TEXT_CACHE_SIZE) flatteners.clear();
    flatteners.set(sig, f);
  }
  return f;
}

/** Whether the row has exactly `columns` as its own keys, in that order (values unchecked). */
function sameKeys(row: Record<string, unknown>, columns: string[]): boolean {
  const keys = Object.keys(row);
  if (keys.length !== columns.length) return false;
  for (let i = 0; i < keys.length; i++) if (keys[i] !== columns[i]) return false;
  return true;
}

type Group = { columns: string[]; flatten: Flatten; rows: number; parameters: unknown[] };

/** A multi-row INSERT; `copy`: the same rows as a PostgreSQL COPY, `width` values per row (db/copy.ts). */
export interface InsertStatement {
  sql: string;
  parameters: unknown[];
  copy?: { sql: string; width: number };
}

/**
 * Rows in the next statement when `left` are to be written: `perStatement`, or the largest power of two not
 * above what is left. The drivers keep a prepared statement per SQL text on each connection, and a statement
 * per leftover count (1 to 255 rows of 17 columns) held ~125 MB of a PostgreSQL backend's memory for good; this
 * way a column set has at most nine texts.
 */
function statementRows(left: number, perStatement: number): number {
  return left >= perStatement ? perStatement : 1 << (31 - Math.clz32(left));
}

/**
 * Rows for one table, turned into statement parameters as they are added. The write-behind adds each log row
 * the moment its call settles, while the row is still in the CPU's cache: flattening a second's rows at flush
 * time read each one back from memory and cost several times as much. Rows with different key sets go in
 * separate statements, so a missing (or undefined) key keeps its column default; values stay in row order.
 */
export class RowBatch {
  private groups = new Map<string, Group>();
  private last: Group | null = null;
  size = 0;

  add(row: Record<string, unknown>): void {
    this.size++;
    const last = this.last;
    // Rows mostly share one shape: a row with the previous row's keys, none of them undefined, goes straight
    // into that group's values; only other rows pay for a signature string.
    if (last && sameKeys(row, last.columns) && last.flatten(row, last.parameters)) {
      last.rows++;
      return;
    }
    if (last && sameColumns(row, last.columns)) {
      for (const c of last.columns) last.parameters.push(row[c]);
      last.rows++;
      return;
    }
    const columns = Object.keys(row).filter((k) => row[k] !== undefined);
    const sig = columns.join(",");
    let g = this.groups.get(sig);
    if (!g) this.groups.set(sig, (g = { columns, flatten: flattenerFor(columns, sig), rows: 0, parameters: [] }));
    for (const c of columns) g.parameters.push(row[c]);
    g.rows++;
    this.last = g;
  }

  /** The INSERT statements: `perStatement` rows each, the rows left over in statements of a power of two rows.
   * `copy` (PostgreSQL only): each also says how its rows go as a COPY (db/copy.ts), for the database worker. */
  statements(dialect: Dialect, table: string, perStatement = 200, copy = false): InsertStatement[] {
    const out: InsertStatement[] = [];
    for (const { columns, rows: count, parameters } of this.groups.values()) {
      const width = columns.length;
      const asCopy = copy && dialect === "postgres" ? { sql: copyText(table, columns), width } : undefined;
      for (let i = 0, n = 0; i < count; i += n) {
        n = statementRows(count - i, perStatement);
        const st: InsertStatement = {
          sql: insertText(dialect, table, columns, n),
          parameters: n === count ? parameters : parameters.slice(i * width, (i + n) * width),
        };
        if (asCopy) st.copy = asCopy;
        out.push(st);
      }
    }
    return out;
  }
}

/** The INSERT statements for rows (plain column → value objects), at most `perStatement` rows each (see RowBatch). */
export function compileInserts(
  dialect: Dialect,
  table: string,
  rows: Record<string, unknown>[],
  perStatement = 200,
): { sql: string; parameters: unknown[] }[] {
  const batch = new RowBatch();
  for (const row of rows) batch.add(row);
  return batch.statements(dialect, table, perStatement);
}

/** Inserts rows (or a RowBatch) through compileInserts. `between` runs after each statement (the write-behind
 * yields to the event loop there). */
export async function insertRows(
  db: Kysely<any>,
  table: string,
  rows: Record<string, unknown>[] | RowBatch,
  perStatement = 200,
  between?: () => Promise<void>,
): Promise<void> {
  const statements =
    rows instanceof RowBatch
      ? rows.statements(dialectOf(db), table, perStatement)
      : compileInserts(dialectOf(db), table, rows, perStatement);
  for (const { sql, parameters } of statements) {
    // CompiledQuery.raw freezes the parameter list, and freezing a list of thousands of values cost
    // more than the insert itself; the spread keeps the query's frozen shell and a plain list.
    await db.executeQuery({ ...CompiledQuery.raw(sql), parameters });
    await between?.();
  }
}
