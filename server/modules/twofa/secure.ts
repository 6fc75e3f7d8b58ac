// Secure verification (new-api's POST /api/verify): a fresh proof of the second factor or a passkey marks
// this browser's session verified for SECURE_WINDOW_SECONDS, and sensitive reads (a channel's key) accept
// it instead of asking again. Sessions are stateless signed cookies, so "this session" is a digest of the
// cookie: another browser of the same user, or a cookie signed later, is not verified. The marks live in
// the shared cache, so with Redis every instance sees them.
import { createHash } from "node:crypto";
import type { AppDeps } from "../../deps.ts";
import { SESSION_COOKIE } from "../../http/auth.ts";

export const SECURE_WINDOW_SECONDS = 300;
/** How long a finished passkey ceremony may wait for its POST /api/verify {method: "passkey"}. */
export const PASSKEY_READY_SECONDS = 60;

export type VerifyMethod = "2fa" | "passkey" | "password";

/** The digest naming this session, or null for callers without a session cookie (access tokens). */
export function sessionTag(cookie: Record<string, any>): string | null {
  const value = cookie[SESSION_COOKIE]?.value;
  if (typeof value !== "string" || !value) return null;
  return createHash("sha256").update(value).digest("hex").slice(0, 32);
}

const verifiedKey = (userId: number, tag: string) => `secure:verified:${userId}:${tag}`;
const readyKey = (userId: number, tag: string) => `secure:passkey_ready:${userId}:${tag}`;

/** Marks the session verified; answers when the mark runs out (unix seconds). */
export async function markVerified(deps: AppDeps, userId: number, tag: string, method: VerifyMethod): Promise<number> {
  const now = Math.floor(Date.now() / 1000);
  await deps.cache.set(verifiedKey(userId, tag), JSON.stringify({ at: now, method }), SECURE_WINDOW_SECONDS);
  return now + SECURE_WINDOW_SECONDS;
}

/** When the session's verification runs out (unix seconds), or null when it is not verified. */
export async function verifiedUntil(deps: AppDeps, userId: number, tag: string | null): Promise<number | null> {
  if (!tag) return null;
  const raw = await deps.cache.get(verifiedKey(userId, tag));
  if (!raw) return null;
  const at = Number(JSON.parse(raw).at);
  const until = at + SECURE_WINDOW_SECONDS;
  return until > Date.now() / 1000 ? until : null;
}

/** After POST /api/user/passkey/verify/finish: the next /api/verify {method: "passkey"} may convert it. */
export async function markPasskeyReady(deps: AppDeps, userId: number, tag: string): Promise<void> {
  await deps.cache.set(readyKey(userId, tag), "1", PASSKEY_READY_SECONDS);
}

/** Spends the passkey mark (once, across instances). */
export async function consumePasskeyReady(deps: AppDeps, userId: number, tag: string): Promise<boolean> {
  if (!(await deps.cache.get(readyKey(userId, tag)))) return false;
  const won = await deps.cache.setNx(
    `${readyKey(userId, tag)}:used:${Math.floor(Date.now() / 1000 / PASSKEY_READY_SECONDS)}`,
    "1",
    PASSKEY_READY_SECONDS * 2,
  );
  await deps.cache.del(readyKey(userId, tag));
  return won;
}
