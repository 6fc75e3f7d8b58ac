const ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/** Cryptographically random alphanumeric string (keys, codes, secrets). */
export function randomString(length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
  let out = "";
  for (let i = 0; i < bytes.length && out.length < length; i++) {
    // 248 = 4 * 62: reject the tail to keep the distribution uniform.
    if (bytes[i] < 248) out += ALPHABET[bytes[i] % 62];
  }
  return out.length === length ? out : out + randomString(length - out.length);
}
