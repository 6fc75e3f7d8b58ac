// Reading query-string filters: numbers must be integers, empty strings mean "not set".
import { badRequest } from "../../http/errors.ts";

export function optInt(q: Record<string, string | undefined>, name: string): number | undefined {
  const raw = q[name];
  if (raw === undefined || raw.trim() === "") return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw badRequest(`invalid parameter ${name}: expected an integer`);
  return n;
}

export function optStr(q: Record<string, string | undefined>, name: string): string | undefined {
  const raw = q[name]?.trim();
  return raw ? raw : undefined;
}
