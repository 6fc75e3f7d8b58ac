// argon2id for new hashes; Bun.password.verify also accepts the bcrypt hashes one-api/new-api stored.
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
