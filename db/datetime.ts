// Datetime columns (gorm's time.Time, used by new-api's newer tables such as two_fas and
// passkey_credentials) as a value to write and as milliseconds when read back.
//
// PostgreSQL (timestamptz) and MySQL (datetime, read and written in UTC: db/index.ts sets timezone "Z")
// take a JS Date; PostgreSQL would read a bare text in the session's time zone. bun:sqlite binds no Date,
// so SQLite gets the text gorm writes there ("2006-01-02 15:04:05.999999999-07:00", here in UTC with
// milliseconds), which new-api's SQLite driver parses back. deleted_at columns are written with it too.
import type { Kysely } from "kysely";
import { dialectOf } from "./dialect.ts";

export function dbTime(db: Kysely<any>, at: Date | number): Date | string {
  const d = typeof at === "number" ? new Date(at) : at;
  return dialectOf(db) === "sqlite" ? `${d.toISOString().slice(0, 23).replace("T", " ")}+00:00` : d;
}

/**
 * Milliseconds since the epoch of a value read from a datetime column, or null. Text without an offset is
 * UTC; gorm's SQLite text ("2025-01-02 03:04:05.123456789+08:00") carries one and up to nine fraction digits.
 */
export function timeMillis(v: unknown): number | null {
  if (v === null || v === undefined || v === "") return null;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.getTime();
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*(Z|[+-]\d{2}:?\d{2})?$/.exec(String(v).trim());
  if (!m) return null;
  const fraction = (m[3] ?? "").slice(0, 3).padEnd(3, "0");
  const zone = !m[4] || m[4] === "Z" ? "Z" : m[4].length === 5 ? `${m[4].slice(0, 3)}:${m[4].slice(3)}` : m[4];
  const ms = Date.parse(`${m[1]}T${m[2]}.${fraction}${zone}`);
  return Number.isNaN(ms) ? null : ms;
}
