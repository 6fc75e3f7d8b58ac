// new-api's JSON columns on SQLite, in the storage class new-api uses. Its gorm types hand the driver bytes, so
// every value new-api writes is a BLOB, and its readers of channel_info, tasks.properties and tasks.private_data
// take only bytes: a TEXT value fails the whole channel query or reads back as an empty object. Both directions
// are kept here: triggers turn any TEXT written into these columns into the same bytes (whichever connection or
// statement wrote it, raw SQL included), and the dialect hands BLOBs of the tables that have them back as text,
// which is what the rest of Switchyard reads on every database (PostgreSQL and MySQL give json as text).
import { sql, type DatabaseConnection, type Driver, type Kysely, type CompiledQuery, type QueryResult } from "kysely";

/** Every column new-api's models declare `type:json`, by table, that Switchyard writes. */
export const NEWAPI_JSON_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  channels: ["channel_info"],
  tasks: ["properties", "private_data", "data"],
  prefill_groups: ["items"],
};

const triggerName = (table: string, column: string, on: "insert" | "update") =>
  `newapi_json_blob_${table}_${column}_${on}`;

/** Creates the triggers a SQLite database lacks (new-api's migrations may rebuild a table, which drops them) and,
 * for a column that had none, turns the TEXT values already there into BLOBs. */
export async function ensureSqliteJsonBlobs(db: Kysely<any>): Promise<void> {
  const tables = new Map(
    (await db.introspection.getTables()).map((t) => [t.name, new Set(t.columns.map((c) => c.name))]),
  );
  const triggers = new Set(
    (await sql<{ name: string }>`select name from sqlite_master where type = 'trigger'`.execute(db)).rows.map(
      (r) => r.name,
    ),
  );
  const missing: [string, string][] = [];
  for (const [table, columns] of Object.entries(NEWAPI_JSON_COLUMNS)) {
    for (const column of columns) {
      if (!tables.get(table)?.has(column)) continue;
      if (!triggers.has(triggerName(table, column, "insert")) || !triggers.has(triggerName(table, column, "update")))
        missing.push([table, column]);
    }
  }
  if (missing.length === 0) return;
  // One transaction for all of them: a fresh database then writes its schema pages once (docs/performance.md's
  // first-start target), not once per column.
  await db.transaction().execute(async (trx) => {
    for (const [table, column] of missing) {
      const t = sql.ref(table);
      const c = sql.ref(column);
      const toBlob = sql`update ${t} set ${c} = cast(new.${c} as blob) where rowid = new.rowid`;
      await sql`update ${t} set ${c} = cast(${c} as blob) where typeof(${c}) = 'text'`.execute(trx);
      await sql`create trigger if not exists ${sql.ref(triggerName(table, column, "insert"))} after insert on ${t} when typeof(new.${c}) = 'text' begin ${toBlob}; end`.execute(
        trx,
      );
      await sql`create trigger if not exists ${sql.ref(triggerName(table, column, "update"))} after update of ${c} on ${t} when typeof(new.${c}) = 'text' begin ${toBlob}; end`.execute(
        trx,
      );
    }
  });
}

const JSON_TABLE = new RegExp(`"(${Object.keys(NEWAPI_JSON_COLUMNS).join("|")})"`);
/** Whether a statement's text names one of those tables, kept per text (the app has a small set of them). */
const namesJsonTable = new Map<string, boolean>();
const MEMO_SIZE = 500;
const decoder = new TextDecoder();

function readsJsonTable(sqlText: string): boolean {
  let v = namesJsonTable.get(sqlText);
  if (v === undefined) {
    if (namesJsonTable.size >= MEMO_SIZE) namesJsonTable.clear();
    namesJsonTable.set(sqlText, (v = JSON_TABLE.test(sqlText)));
  }
  return v;
}

/** A row's BLOBs as UTF-8 text (Switchyard stores no binary data, so every BLOB is new-api's JSON). */
export function blobsToText(rows: unknown[]): void {
  for (const row of rows as Record<string, unknown>[]) {
    for (const k in row) {
      const v = row[k];
      if (v instanceof Uint8Array) row[k] = decoder.decode(v);
    }
  }
}

/** `driver` with the BLOBs of queries on new-api's JSON tables read back as text; other queries pass untouched.
 * Transactions go through the same connection (the driver begins and commits with its executeQuery). */
export function jsonBlobsAsText(driver: Driver): Driver {
  const wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>();
  const wrap = (c: DatabaseConnection): DatabaseConnection => {
    let w = wrapped.get(c);
    if (!w) {
      w = {
        // Other statements get the connection's own promise: no extra step on every query.
        executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
          if (!readsJsonTable(q.sql)) return c.executeQuery<R>(q);
          return c.executeQuery<R>(q).then((result) => {
            if (result.rows.length > 0) blobsToText(result.rows as unknown[]);
            return result;
          });
        },
        streamQuery: (q, chunkSize) => c.streamQuery(q, chunkSize),
      };
      wrapped.set(c, w);
    }
    return w;
  };
  return {
    init: () => driver.init(),
    acquireConnection: async () => wrap(await driver.acquireConnection()),
    beginTransaction: (c, settings) => driver.beginTransaction(c, settings),
    commitTransaction: (c) => driver.commitTransaction(c),
    rollbackTransaction: (c) => driver.rollbackTransaction(c),
    releaseConnection: (c) => driver.releaseConnection(c),
    destroy: () => driver.destroy(),
  };
}
