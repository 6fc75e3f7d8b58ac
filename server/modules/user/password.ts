// argon2id for new hashes; Bun.password.verify also accepts the bcrypt hashes one-api/new-api stored.
import { randomString } from "../../infra/random.ts";

const ARGON = { algorithm: "argon2id", memoryCost: 19456, timeCost: 2 } as const;

export const hashPassword = (plain: string) => Bun.password.hash(plain, ARGON);

export async function verifyPassword(plain: string, hash: string): Promise<boolean> {
  if (!hash) return false;
  try {
    return await Bun.password.verify(plain, hash);
  } catch {
    return false;
  }
}

let dummy: Promise<string> | null = null;
/** A hash of a random password with the cost of real ones: checked in their place for a name nobody holds (or an
 * account without a password), so a sign-in takes as long either way and its timing does not tell them apart. */
export const dummyHash = () => (dummy ??= hashPassword(randomString(32)));

/** Checks `plain` against the hash of the account found, or against the dummy when there is none. */
export async function verifyPasswordOf(plain: string, hash: string | null | undefined): Promise<boolean> {
  if (hash) return verifyPassword(plain, hash);
  await verifyPassword(plain, await dummyHash());
  return false;
}
