// Password hashes. bcrypt by default: new-api verifies nothing else, so a database Switchyard wrote keeps every
// account usable after a move back. argon2id is the opt-in (PASSWORD_HASH=argon2id) for operators who have left
// new-api for good. Bun.password.verify reads either kind, so hashes of both keep verifying whatever the setting.
import { randomString } from "../../infra/random.ts";

export type PasswordScheme = "bcrypt" | "argon2id";

/** bcrypt's work factor (2^cost rounds), new-api's own. Measured with scripts/bench/password.ts: a verify at 10
 * costs about what the argon2id baseline does, and each step up doubles the CPU every sign-in takes from the
 * gateway's cores (and what a burst of failed sign-ins can make it spend). */
export const BCRYPT_COST = 10;
/** OWASP's argon2id baseline: 19 MiB, two passes. */
export const ARGON2ID = { algorithm: "argon2id", memoryCost: 19456, timeCost: 2 } as const;
/** bcrypt reads at most 72 bytes; Go's bcrypt (new-api) refuses longer passwords outright, and Bun would pre-hash
 * them into a hash new-api could never match, so a longer one is refused in bcrypt mode. */
export const BCRYPT_MAX_BYTES = 72;

/** The prefix new-api's Go library writes; Bun writes $2b$, the same algorithm for passwords of at most 72 bytes. */
const GO_BCRYPT_PREFIX = "$2a$";

export async function hashPassword(plain: string, scheme: PasswordScheme): Promise<string> {
  if (scheme === "argon2id") return Bun.password.hash(plain, ARGON2ID);
  const hash = await Bun.password.hash(plain, { algorithm: "bcrypt", cost: BCRYPT_COST });
  return GO_BCRYPT_PREFIX + hash.slice(4);
}

/** True when `plain` is too long to be hashed in `scheme` so new-api could verify it. */
export const passwordTooLong = (plain: string, scheme: PasswordScheme) =>
  scheme === "bcrypt" && Buffer.byteLength(plain, "utf8") > BCRYPT_MAX_BYTES;

/** A stored hash that should be replaced at the next successful sign-in: anything not in the configured scheme
 * (bcrypt mode turns an argon2id hash of an earlier Switchyard back into one new-api reads; argon2id mode upgrades
 * new-api's bcrypt). */
export function needsRehash(hash: string, scheme: PasswordScheme): boolean {
  if (scheme === "argon2id") return !hash.startsWith("$argon2id$");
  return !/^\$2[aby]\$/.test(hash);
}

export async function verifyPassword(plain: string, hash: string): Promise<boolean> {
  if (!hash) return false;
  try {
    return await Bun.password.verify(plain, hash);
  } catch {
    return false;
  }
}

const dummies = new Map<PasswordScheme, Promise<string>>();
/** A hash of a random password with the cost of real ones: checked in their place for a name nobody holds (or an
 * account without a password), so a sign-in takes as long either way and its timing does not tell them apart. */
export function dummyHash(scheme: PasswordScheme): Promise<string> {
  let d = dummies.get(scheme);
  if (!d) dummies.set(scheme, (d = hashPassword(randomString(32), scheme)));
  return d;
}

/** Checks `plain` against the hash of the account found, or against the dummy when there is none. */
export async function verifyPasswordOf(
  plain: string,
  hash: string | null | undefined,
  scheme: PasswordScheme,
): Promise<boolean> {
  if (hash) return verifyPassword(plain, hash);
  await verifyPassword(plain, await dummyHash(scheme));
  return false;
}
