// The rules of the second factor, without storage: RFC 6238 TOTP (SHA-1, 6 digits, 30-second steps, one
// step of clock drift either way, as authenticator apps and new-api's pquerna/otp expect) and backup codes
// in new-api's XXXX-XXXX form.
import { Secret, TOTP } from "otpauth";

export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** Steps of drift accepted on each side of the current one. */
export const TOTP_WINDOW = 1;
/** Wrong codes in a row before the second factor locks, and for how long (new-api's figures). */
export const MAX_FAILED_ATTEMPTS = 5;
export const LOCKOUT_SECONDS = 300;
export const BACKUP_CODE_COUNT = 8;
const BACKUP_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/** A new shared secret: 160 random bits in base32, the size RFC 4226 recommends for SHA-1. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

function totp(secret: string, issuer = "", label = "") {
  return new TOTP({
    issuer,
    label,
    algorithm: "SHA1",
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_SECONDS,
    secret: Secret.fromBase32(secret),
  });
}

/** The otpauth:// URI an authenticator app reads from the QR code. */
export function otpauthUri(secret: string, issuer: string, account: string): string {
  return totp(secret, issuer, account).toString();
}

/** The time step (unix seconds / 30) a moment falls in. */
export const stepAt = (ms: number) => Math.floor(ms / 1000 / TOTP_PERIOD_SECONDS);

/** The code for a moment (tests and the console's own checks). */
export function totpCode(secret: string, ms = Date.now()): string {
  return totp(secret).generate({ timestamp: ms });
}

/** Six digits, spaces allowed ("123 456"); null for anything else. */
export function numericCode(input: string | undefined | null): string | null {
  const code = String(input ?? "").replace(/\s+/g, "");
  return /^\d{6}$/.test(code) ? code : null;
}

/** The time step whose code `code` is, within the accepted drift of `ms`; null when it is none of them. */
export function matchingStep(secret: string, code: string, ms = Date.now()): number | null {
  const delta = totp(secret).validate({ token: code, timestamp: ms, window: TOTP_WINDOW });
  return delta === null ? null : stepAt(ms) + delta;
}

/** `count` codes of 8 characters from A–Z and 0–9, shown as XXXX-XXXX. */
export function newBackupCodes(count = BACKUP_CODE_COUNT): string[] {
  const out: string[] = [];
  while (out.length < count) {
    // 252 is the largest multiple of 36 below 256: bytes above it are dropped so every character is equally likely.
    const chars: string[] = [];
    for (const b of crypto.getRandomValues(new Uint8Array(16))) {
      if (b < 252 && chars.length < 8) chars.push(BACKUP_ALPHABET[b % 36]);
    }
    if (chars.length < 8) continue;
    const code = `${chars.slice(0, 4).join("")}-${chars.slice(4).join("")}`;
    if (!out.includes(code)) out.push(code);
  }
  return out;
}

/** A backup code as stored (upper case, XXXX-XXXX), whatever dashes or case it was typed with; null if it is none. */
export function normaliseBackupCode(input: string | undefined | null): string | null {
  const clean = String(input ?? "")
    .replace(/[\s-]+/g, "")
    .toUpperCase();
  return /^[A-Z0-9]{8}$/.test(clean) ? `${clean.slice(0, 4)}-${clean.slice(4)}` : null;
}
