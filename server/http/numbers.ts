// The ranges a number sent to the management API must fit, and the one message that names a field outside
// its range. An integer column (db/migrations/tables.ts "int") holds 32 bits on PostgreSQL and MySQL; a bigint
// column holds 64, but a value past JavaScript's safe range would be rounded on the way in (2^53 + 1 arrives as
// 2^53), so bigint fields stop there. Schemas use these through `int()` (http/schema.ts); values a schema cannot
// reach (an option's text, a field inside a JSON blob) through `checkInteger` / `checkNumber`.
import { badRequest } from "./errors.ts";

export interface Range {
  min: number;
  max: number;
}

export const INT_COLUMN: Range = { min: -(2 ** 31), max: 2 ** 31 - 1 };
export const BIGINT_COLUMN: Range = { min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER };

/** A range narrowed to what a field means (a quota from 0, a weight from 0, ...), inside its column's. */
export const within = (column: Range, min: number, max = column.max): Range => ({
  min: Math.max(column.min, min),
  max: Math.min(column.max, max),
});

export const integerMessage = (field: string, r: Range) => `${field} must be an integer from ${r.min} to ${r.max}`;
export const numberMessage = (field: string, r: Range) => `${field} must be a number from ${r.min} to ${r.max}`;

/** `v` as an integer in range (a number or its decimal text), or a 400 naming the field. */
export function checkInteger(v: unknown, field: string, r: Range): number {
  const n = typeof v === "string" && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < r.min || n > r.max)
    throw badRequest(integerMessage(field, r));
  return n;
}

/** `v` as a finite number in range (fractions allowed: prices, ratios), or a 400 naming the field. */
export function checkNumber(v: unknown, field: string, r: Range): number {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isFinite(n) || n < r.min || n > r.max) throw badRequest(numberMessage(field, r));
  return n;
}
