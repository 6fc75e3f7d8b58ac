// PostgreSQL's COPY ... FROM STDIN, text format: how the write-behind's worker (server/infra/sql-worker-thread.ts)
// sends a slice's log rows (hot-path rule 12). COPY costs the database server less per row than a multi-row
// INSERT (no thousands of bound parameters, no VALUES list for the executor), the seven log indexes being most of
// what is left; the rows' text is built on the worker thread, not the event loop.

/** The COPY statement for `columns` of `table` (identifiers quoted as Kysely quotes them on PostgreSQL). */
export function copyStatement(table: string, columns: readonly string[]): string {
  return `copy "${table}" (${columns.map((c) => `"${c}"`).join(", ")}) from stdin`;
}

/** Characters COPY's text format reads specially inside a field: backslash, tab (the delimiter), newline, CR. */
const SPECIAL = /[\\\t\n\r]/;
const SPECIAL_ALL = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };

/** One field in COPY text format, or undefined for a value it has no text for here (the caller inserts instead;
 * an undefined never reaches it: RowBatch leaves such a column out of the row's statement). */
export function copyField(v: unknown): string | undefined {
  if (typeof v === "string") return SPECIAL.test(v) ? v.replace(SPECIAL_ALL, (c) => ESCAPES[c]) : v;
  // A number's own text is what PostgreSQL reads back for int, bigint and double columns; one with an exponent
  // (≥ 1e21, or NaN / Infinity) fails its column as the parameter did.
  if (typeof v === "number" || typeof v === "bigint") return String(v);
  if (v === null) return "\\N";
  if (v === true) return "t";
  if (v === false) return "f";
  return undefined;
}

/**
 * `parameters` (rows of `width` values, flattened) as COPY text: a line per row, fields tab-separated. Undefined
 * when a value is of a type COPY text is not written for here (bytes, dates): that statement goes as an INSERT.
 */
export function copyRows(parameters: readonly unknown[], width: number): string | undefined {
  let out = "";
  for (let i = 0; i < parameters.length; i += width) {
    for (let j = 0; j < width; j++) {
      const f = copyField(parameters[i + j]);
      if (f === undefined) return undefined;
      out += j === 0 ? f : "\t" + f;
    }
    out += "\n";
  }
  return out;
}
