// Per-account sign-in throttling: every check of a secret that proves who someone is (a password at login, the
// original password of a password change, the password of a secure verification, a password reset token) counts
// against the account it is for, whatever address it comes from, so spreading guesses over many addresses (or
// forged X-Forwarded-For values behind TRUST_PROXY) gains nothing. After SIGNIN_MAX_FAILURES failed checks within
// SIGNIN_LOCKOUT_SECONDS the account is locked for SIGNIN_LOCKOUT_SECONDS: every check answers 429, the right
// password included, until it expires. Counts and locks live in the shared cache (memory, or Redis for several
// instances). The attempt is counted before the secret is checked, so concurrent guesses cannot all slip in
// before the first failure is counted. Names nobody holds are throttled the same way, so the answers do not tell
// them apart. The second factor has its own lock (modules/twofa/service.ts).
import { createHash } from "node:crypto";
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { usernameKey } from "./username.ts";

/** The throttled account: a user by id, or a name (or email) no user holds. */
export const accountOfUser = (id: number) => `u${id}`;
export const accountOfName = (name: string) =>
  `n${createHash("sha256").update(usernameKey(name)).digest("base64url").slice(0, 22)}`;

const failuresKey = (account: string) => `signin:failures:${account}`;
const lockKey = (account: string) => `signin:lock:${account}`;

function wait(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}

function lockedError(untilMs: number): AppError {
  const seconds = Math.max(1, Math.ceil((untilMs - Date.now()) / 1000));
  const e = new AppError(
    429,
    `too many failed sign-in attempts for this account; try again in ${wait(seconds)} (at ${new Date(untilMs).toISOString()})`,
  );
  e.headers = { "Retry-After": String(seconds) };
  return e;
}

async function lock(deps: AppDeps, account: string): Promise<number> {
  const until = Date.now() + deps.config.signin.lockoutSeconds * 1000;
  // The first lock stands: a later failure does not push its end further out.
  if (await deps.cache.setNx(lockKey(account), String(until), deps.config.signin.lockoutSeconds)) return until;
  return Number(await deps.cache.get(lockKey(account))) || until;
}

/**
 * Runs `check` (true: the secret was right) as one sign-in attempt for `account`: refused with a 429 saying when
 * to retry while the account is locked, counted first, cleared by a success, locking the account at the limit.
 */
export async function throttledCheck(deps: AppDeps, account: string, check: () => Promise<boolean>): Promise<boolean> {
  const { maxFailures, lockoutSeconds } = deps.config.signin;
  if (maxFailures <= 0) return check();
  const locked = Number(await deps.cache.get(lockKey(account)));
  if (locked > Date.now()) throw lockedError(locked);
  const attempt = await deps.cache.incr(failuresKey(account), lockoutSeconds);
  if (attempt > maxFailures) throw lockedError(await lock(deps, account));
  const right = await check();
  if (right) await deps.cache.del(failuresKey(account));
  else if (attempt >= maxFailures) await lock(deps, account);
  return right;
}
