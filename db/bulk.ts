// Multi-row INSERT written as plain SQL. The write-behind inserts hundreds of log rows a second, and
// building them through Kysely's query tree (a frozen node per value) cost more CPU than SQLite's own
// insert; the text here is cached per column set and row count, so the statement cache reuses it too.
import { CompiledQuery, type Kysely } from "kysely";
import { dialectOf, type Dialect } from "./dialect.ts";

const texts = new Map<string, string>();
const TEXT_CACHE_SIZE = 200;

function insertText(dialect: Dialect, table: string, columns: string[], rows: number): string {
  const key = `${dialect}|${table}|${columns.join(",")}|${rows}`;
  let text = texts.get(key);
  if (text) return text;
  const q = dialect === "mysql" ? (id: string) => `\`${id}\`` : (id: string) => `"${id}"`;
  let n = 0;
  const ph = dialect === "postgres" ? () => `$${++n}` : () => "?";
  const tuples: string[] = [];
  for (let r = 0; r < rows; r++) tuples.push(`(${columns.map(ph).join(", ")})`);
  text = `insert into ${q(table)} (${columns.map(q).join(", ")}) values ${tuples.join(", ")}`;
  if (texts.size >= TEXT_CACHE_SIZE) texts.clear();
  texts.set(key, text);
  return text;
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

/** The INSERT statements for rows (plain column → value objects), at most `perStatement` rows each. Rows with
 * different key sets go in separate statements, so a missing key keeps its column default. */
export function compileInserts(dialect: Dialect, table: string, rows: Record<string, unknown>[], perStatement = 200): { sql: string; parameters: unknown[] }[] {
  const out: { sql: string; parameters: unknown[] }[] = [];
  if (rows.length === 0) return out;
  const groups = new Map<string, { columns: string[]; rows: Record<string, unknown>[] }>();
  // Rows mostly share one shape (the write-behind's logs): a row with the previous row's columns skips the
  // signature string, which was most of this function's cost.
  let last: { columns: string[]; rows: Record<string, unknown>[] } | null = null;
  for (const row of rows) {
    if (last && sameColumns(row, last.columns)) {
      last.rows.push(row);
      continue;
    }
    const columns = Object.keys(row).filter((k) => row[k] !== undefined);
    const sig = columns.join(",");
    let g = groups.get(sig);
    if (!g) groups.set(sig, (g = { columns, rows: [] }));
    g.rows.push(row);
    last = g;
  }
  for (const { columns, rows: list } of groups.values()) {
    for (let i = 0; i < list.length; i += perStatement) {
      const chunk = list.slice(i, i + perStatement);
      const parameters: unknown[] = [];
      for (const row of chunk) for (const c of columns) parameters.push(row[c]);
      out.push({ sql: insertText(dialect, table, columns, chunk.length), parameters });
    }
  }
  return out;
}

/** Inserts rows through compileInserts. `between` runs after each statement (the write-behind yields to the
 * event loop there). */
export async function insertRows(db: Kysely<any>, table: string, rows: Record<string, unknown>[], perStatement = 200, between?: () => Promise<void>): Promise<void> {
  for (const { sql, parameters } of compileInserts(dialectOf(db), table, rows, perStatement)) {
    // CompiledQuery.raw freezes the parameter list, and freezing a list of thousands of values cost
    // more than the insert itself; the spread keeps the query's frozen shell and a plain list.
    await db.executeQuery({ ...CompiledQuery.raw(sql), parameters });
    await between?.();
  }
}
