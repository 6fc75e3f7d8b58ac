// Two-factor sign-in for any user (new-api's /api/user/2fa/*): a TOTP secret set up in an authenticator
// app, confirmed with a code before it counts, and one-use backup codes. No HTTP here.
//
// Rules every check follows (verifySecondFactor):
// - a TOTP code is accepted for the current 30-second step or one step either side, and only once: the
//   step is recorded with a conditional update (last_step < step), so a code replayed, even on another
//   instance at the same moment, is refused;
// - a backup code is spent with a conditional update (is_used = false), so two uses of one code give one success;
// - MAX_FAILED_ATTEMPTS wrong codes in a row lock the second factor for LOCKOUT_SECONDS (every code, TOTP
//   or backup, is refused while locked); a right code clears the count.
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { dbTime, timeMillis } from "../../../db/datetime.ts";
import { AppError, badRequest, forbidden, notFound } from "../../http/errors.ts";
import { ROLE } from "../../catalogue/index.ts";
import {
  LOCKOUT_SECONDS,
  MAX_FAILED_ATTEMPTS,
  matchingStep,
  newBackupCodes,
  newTotpSecret,
  normaliseBackupCode,
  numericCode,
  otpauthUri,
} from "./totp.ts";

export const MSG = {
  alreadyEnabled: "two-factor sign-in is already enabled; disable it before setting it up again",
  notSetUp: "set up two-factor sign-in first",
  notEnabled: "two-factor sign-in is not enabled for this account",
  wrongCode: "the code is wrong or has already been used",
  codeRequired: "enter the 6-digit code from your authenticator app or a backup code",
  totpRequired: "enter the 6-digit code from your authenticator app",
  levelDenied: "no permission to change the two-factor sign-in of users of equal or higher level",
} as const;

const locked = (until: number) =>
  new AppError(
    403,
    `too many wrong codes: two-factor sign-in is locked until ${new Date(until).toISOString().slice(0, 19).replace("T", " ")} UTC`,
  );

/** Backup codes are stored as bcrypt hashes, as new-api stores them, so either server reads the other's. */
const hashBackupCode = (code: string) => Bun.password.hash(code, { algorithm: "bcrypt", cost: 10 });

export async function getTwoFA(deps: AppDeps, userId: number) {
  return deps.db
    .selectFrom("two_fas")
    .selectAll()
    .where("user_id", "=", userId)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
}

export async function isTwoFAEnabled(deps: AppDeps, userId: number): Promise<boolean> {
  const row = await getTwoFA(deps, userId);
  return !!row && Boolean(row.is_enabled);
}

const lockedUntil = (row: { locked_until: unknown }) => {
  const until = timeMillis(row.locked_until);
  return until !== null && until > Date.now() ? until : null;
};

async function unusedBackupCodes(deps: AppDeps, userId: number) {
  return deps.db
    .selectFrom("two_fa_backup_codes")
    .select(["id", "code_hash"])
    .where("user_id", "=", userId)
    .where("is_used", "=", false)
    .where("deleted_at", "is", null)
    .execute();
}

/** GET /api/user/2fa/status: {enabled, locked} and, once enabled, backup_codes_remaining. */
export async function twoFAStatus(deps: AppDeps, userId: number) {
  const row = await getTwoFA(deps, userId);
  const enabled = !!row && Boolean(row.is_enabled);
  const status: { enabled: boolean; locked: boolean; backup_codes_remaining?: number } = {
    enabled,
    locked: !!row && lockedUntil(row) !== null,
  };
  if (enabled) status.backup_codes_remaining = (await unusedBackupCodes(deps, userId)).length;
  return status;
}

async function replaceBackupCodes(deps: AppDeps, userId: number): Promise<string[]> {
  const codes = newBackupCodes();
  const hashes = await Promise.all(codes.map(hashBackupCode));
  const now = dbTime(deps.db, Date.now());
  await deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom("two_fa_backup_codes").where("user_id", "=", userId).execute();
    await trx
      .insertInto("two_fa_backup_codes")
      .values(
        hashes.map((code_hash) => ({
          user_id: userId,
          code_hash,
          is_used: false,
          used_at: null,
          created_at: now,
          deleted_at: null,
        })),
      )
      .execute();
  });
  return codes;
}

/**
 * POST /api/user/2fa/setup: a new secret and backup codes, not yet in force (is_enabled false) until a code
 * confirms the app has it. An earlier unfinished setup is replaced.
 */
export async function setupTwoFA(
  deps: AppDeps,
  user: User,
): Promise<{ secret: string; qr_code_data: string; backup_codes: string[] }> {
  const existing = await getTwoFA(deps, user.id);
  if (existing && existing.is_enabled) throw badRequest(MSG.alreadyEnabled);
  const secret = newTotpSecret();
  const now = dbTime(deps.db, Date.now());
  await deps.db.transaction().execute(async (trx) => {
    // Rows new-api soft-deleted still hold the user_id unique index.
    await trx.deleteFrom("two_fas").where("user_id", "=", user.id).execute();
    await trx
      .insertInto("two_fas")
      .values({
        user_id: user.id,
        secret,
        is_enabled: false,
        failed_attempts: 0,
        locked_until: null,
        last_used_at: null,
        last_step: 0,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      })
      .execute();
  });
  const backup_codes = await replaceBackupCodes(deps, user.id);
  const issuer = deps.options.get("SystemName") || "Switchyard";
  return { secret, qr_code_data: otpauthUri(secret, issuer, user.username), backup_codes };
}

/**
 * Accepts a TOTP code once: records its step if no later or equal step was accepted before. Counts as a
 * success (clears failures) when it wins.
 */
async function spendTotp(deps: AppDeps, userId: number, step: number): Promise<boolean> {
  const now = dbTime(deps.db, Date.now());
  const r = await deps.db
    .updateTable("two_fas")
    .set({ last_step: step, failed_attempts: 0, locked_until: null, last_used_at: now, updated_at: now })
    .where("user_id", "=", userId)
    .where("last_step", "<", step)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

async function spendBackupCode(deps: AppDeps, userId: number, input: string): Promise<boolean> {
  const code = normaliseBackupCode(input);
  if (!code) return false;
  const rows = await unusedBackupCodes(deps, userId);
  // bcrypt runs off the event loop; checking the (few) codes side by side keeps the wait to about one hash.
  const matches = await Promise.all(rows.map((r) => Bun.password.verify(code, r.code_hash).catch(() => false)));
  const hit = rows[matches.indexOf(true)];
  if (!hit) return false;
  const now = dbTime(deps.db, Date.now());
  const r = await deps.db
    .updateTable("two_fa_backup_codes")
    .set({ is_used: true, used_at: now })
    .where("id", "=", hit.id)
    .where("is_used", "=", false)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) return false;
  await deps.db
    .updateTable("two_fas")
    .set({ failed_attempts: 0, locked_until: null, last_used_at: now, updated_at: now })
    .where("user_id", "=", userId)
    .execute();
  return true;
}

async function countFailure(deps: AppDeps, userId: number): Promise<void> {
  await deps.db
    .updateTable("two_fas")
    .set({ failed_attempts: sql`failed_attempts + 1` })
    .where("user_id", "=", userId)
    .execute();
  const row = await getTwoFA(deps, userId);
  if (row && row.failed_attempts >= MAX_FAILED_ATTEMPTS) {
    await deps.db
      .updateTable("two_fas")
      .set({ locked_until: dbTime(deps.db, Date.now() + LOCKOUT_SECONDS * 1000) })
      .where("user_id", "=", userId)
      .execute();
  }
}

export type SecondFactor = "totp" | "backup";

/**
 * Checks a code for a user whose two-factor sign-in is enabled: a TOTP code, or a backup code when
 * `allowBackup`. Throws with a message for a wrong, replayed or locked code.
 */
export async function verifySecondFactor(
  deps: AppDeps,
  userId: number,
  input: string | undefined,
  allowBackup = true,
): Promise<SecondFactor> {
  const row = await getTwoFA(deps, userId);
  if (!row || !row.is_enabled) throw badRequest(MSG.notEnabled);
  const until = lockedUntil(row);
  if (until !== null) throw locked(until);
  if (!String(input ?? "").trim()) throw badRequest(allowBackup ? MSG.codeRequired : MSG.totpRequired);
  const totp = numericCode(input);
  if (totp) {
    const step = matchingStep(row.secret, totp);
    if (step !== null && (await spendTotp(deps, userId, step))) return "totp";
  } else if (allowBackup && (await spendBackupCode(deps, userId, String(input)))) {
    return "backup";
  }
  await countFailure(deps, userId);
  const after = await getTwoFA(deps, userId);
  const nowLocked = after ? lockedUntil(after) : null;
  if (nowLocked !== null) throw locked(nowLocked);
  throw badRequest(MSG.wrongCode);
}

/** POST /api/user/2fa/enable: the first code from the app puts the pending setup in force. */
export async function enableTwoFA(deps: AppDeps, user: User, input: string | undefined): Promise<void> {
  const row = await getTwoFA(deps, user.id);
  if (!row) throw badRequest(MSG.notSetUp);
  if (row.is_enabled) throw badRequest("two-factor sign-in is already enabled");
  const code = numericCode(input);
  if (!code) throw badRequest(MSG.totpRequired);
  const step = matchingStep(row.secret, code);
  // A wrong code during setup locks nothing: the pending secret proves nothing yet.
  if (step === null || !(await spendTotp(deps, user.id, step))) throw badRequest(MSG.wrongCode);
  await deps.db
    .updateTable("two_fas")
    .set({ is_enabled: true, updated_at: dbTime(deps.db, Date.now()) })
    .where("user_id", "=", user.id)
    .execute();
}

async function removeTwoFA(deps: AppDeps, userId: number): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom("two_fa_backup_codes").where("user_id", "=", userId).execute();
    await trx.deleteFrom("two_fas").where("user_id", "=", userId).execute();
  });
}

/** POST /api/user/2fa/disable: a TOTP or backup code turns it off and removes the secret and the codes. */
export async function disableTwoFA(deps: AppDeps, user: User, input: string | undefined): Promise<void> {
  await verifySecondFactor(deps, user.id, input);
  await removeTwoFA(deps, user.id);
}

/** POST /api/user/2fa/backup_codes: a TOTP code (not a backup code) replaces every backup code. */
export async function regenerateBackupCodes(deps: AppDeps, user: User, input: string | undefined): Promise<string[]> {
  await verifySecondFactor(deps, user.id, input, false);
  return replaceBackupCodes(deps, user.id);
}

/** DELETE /api/user/{id}/2fa: an admin turns off a lower user's second factor (a lost phone); the super admin anyone's. */
export async function adminDisableTwoFA(deps: AppDeps, actor: User, targetId: number): Promise<void> {
  const target = await deps.db.selectFrom("users").select(["id", "role"]).where("id", "=", targetId).executeTakeFirst();
  if (!target) throw notFound("user not found");
  if (actor.role <= target.role && actor.role < ROLE.root) throw forbidden(MSG.levelDenied);
  if (!(await getTwoFA(deps, targetId))) throw badRequest(MSG.notEnabled);
  await removeTwoFA(deps, targetId);
}

/** GET /api/user/2fa/stats (admin). */
export async function twoFAStats(deps: AppDeps) {
  const [{ n: total }] = await deps.db
    .selectFrom("users")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("deleted_at", "is", null)
    .execute();
  const [{ n: enabled }] = await deps.db
    .selectFrom("two_fas")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("is_enabled", "=", true)
    .where("deleted_at", "is", null)
    .execute();
  const rate = Number(total) > 0 ? (Number(enabled) / Number(total)) * 100 : 0;
  return { total_users: Number(total), enabled_users: Number(enabled), enabled_rate: `${rate.toFixed(1)}%` };
}
