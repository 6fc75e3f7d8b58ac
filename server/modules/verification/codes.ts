// One-time codes kept in the shared cache, so with Redis any instance can check a code another one mailed.
// Each code belongs to a purpose and an address (and, for binding, to the user who asked), so a code
// mailed for one thing is worthless for another.
import { timingSafeEqual } from "node:crypto";
import type { AppDeps } from "../../deps.ts";

export type Purpose = "register" | "bind" | "reset";

/** What a code proves: control of `email`, for `purpose`, on behalf of `userId` (binding only). */
export interface CodeRef {
  purpose: Purpose;
  email: string;
  userId?: number;
}

/** Wrong guesses a code survives; a guesser then has to ask for (and read) a new mail. */
export const MAX_CODE_ATTEMPTS = 5;

const keyOf = (r: CodeRef) => `vcode:${r.purpose}:${r.userId ?? 0}:${r.email}`;

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Six decimal digits, uniformly drawn. */
export function newNumericCode(): string {
  const n = crypto.getRandomValues(new Uint32Array(1))[0] % 1_000_000;
  return String(n).padStart(6, "0");
}

/** Stores a code, replacing any earlier one for the same ref. */
export async function issueCode(deps: AppDeps, ref: CodeRef, code: string, ttlSeconds: number): Promise<void> {
  const key = keyOf(ref);
  await deps.cache.del(`${key}:fails`);
  await deps.cache.set(key, code, ttlSeconds);
}

export async function revokeCode(deps: AppDeps, ref: CodeRef): Promise<void> {
  await deps.cache.del(keyOf(ref));
}

/** True when `input` is the live code; a wrong guess counts, and too many of them void the code. */
export async function checkCode(
  deps: AppDeps,
  ref: CodeRef,
  input: string | undefined,
  ttlSeconds: number,
): Promise<boolean> {
  const key = keyOf(ref);
  const stored = await deps.cache.get(key);
  const given = (input ?? "").trim();
  if (stored && given && same(stored, given)) return true;
  if (stored && (await deps.cache.incr(`${key}:fails`, ttlSeconds)) >= MAX_CODE_ATTEMPTS) await deps.cache.del(key);
  return false;
}

/**
 * Checks and uses up the code. Of two concurrent calls with the right code only one wins, on any
 * instance: the winner is whoever sets the code's "used" marker first.
 */
export async function consumeCode(
  deps: AppDeps,
  ref: CodeRef,
  input: string | undefined,
  ttlSeconds: number,
): Promise<boolean> {
  if (!(await checkCode(deps, ref, input, ttlSeconds))) return false;
  const key = keyOf(ref);
  if (!(await deps.cache.setNx(`${key}:used:${(input ?? "").trim()}`, "1", ttlSeconds))) return false;
  await deps.cache.del(key);
  return true;
}
