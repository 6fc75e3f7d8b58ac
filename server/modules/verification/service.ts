// Mailed proofs of an address: codes for registration and binding, links for password resets. No HTTP here.
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { sql } from "kysely";
import { AppError, badRequest } from "../../http/errors.ts";
import { END_SESSIONS } from "../../http/auth.ts";
import { EMAIL_RESEND_SECONDS, VERIFICATION_CODE_TTL_SECONDS } from "../../catalogue/index.ts";
import { randomString } from "../../infra/random.ts";
import { hashPassword } from "../user/password.ts";
import { MSG as USER_MSG } from "../user/service.ts";
import { notifyTokenChanged } from "../token/events.ts";
import { checkCode, consumeCode, issueCode, newNumericCode, revokeCode, type CodeRef } from "./codes.ts";
import { EMAIL_MSG, emailPolicyError, emailTaken, isEmail, normaliseEmail } from "./email.ts";
import { assertMailConfigured, codeMail, deliver, resetMail } from "./mails.ts";
import { accountOfName, throttledCheck } from "../user/signin-throttle.ts";

/** How long a reset link works (one-api's VerificationValidMinutes). */
export const RESET_LINK_TTL_SECONDS = 10 * 60;
const RESET_TOKEN_LENGTH = 32;
/** The password a reset sets (one-api and new-api make 12 characters). */
const RESET_PASSWORD_LENGTH = 12;

export const VERIFY_MSG = {
  tooSoon: `an email was just sent to this address; please wait ${EMAIL_RESEND_SECONDS} seconds before asking for another`,
  notRegistered: "this email address is not registered",
  noServerAddress: "password reset is not available: the administrator has not set the server address",
  resetSent: "a password reset link has been sent to the address",
  resetInvalid: "reset link is invalid or expired",
  resetParams: "invalid parameter: email and token are required",
  bindParams: "invalid parameter: email and code are required",
  bound: "email bound",
} as const;

/**
 * Holds the address for EMAIL_RESEND_SECONDS so nobody can flood a mailbox through the site (the console
 * waits as long before its resend button comes back). Returns the release for a send that failed.
 */
async function holdAddress(deps: AppDeps, kind: string, email: string): Promise<() => Promise<void>> {
  const key = `vmail:${kind}:${email}`;
  if (!(await deps.cache.setNx(key, "1", EMAIL_RESEND_SECONDS))) throw new AppError(429, VERIFY_MSG.tooSoon);
  return () => deps.cache.del(key);
}

/** Stores the code, then mails it; a failed mail takes both the code and the wait back. */
async function mailCode(
  deps: AppDeps,
  ref: CodeRef,
  kind: string,
  send: (code: string) => Promise<void>,
  code: string,
  ttl: number,
) {
  const release = await holdAddress(deps, kind, ref.email);
  await issueCode(deps, ref, code, ttl);
  try {
    await send(code);
  } catch (e) {
    await revokeCode(deps, ref);
    await release();
    throw e;
  }
}

/**
 * GET /api/verification. A guest gets a registration code; a logged-in caller gets a code that binds the
 * address to their own account only. Either way the address must pass the site's email rules and be free.
 */
export async function sendVerificationCode(
  deps: AppDeps,
  rawEmail: string | undefined,
  caller: User | null,
): Promise<void> {
  const email = normaliseEmail(rawEmail);
  const refused = emailPolicyError(deps, email);
  if (refused) throw badRequest(refused);
  assertMailConfigured(deps);
  if (await emailTaken(deps, email, caller?.id)) throw badRequest(EMAIL_MSG.taken);
  const ref: CodeRef = caller ? { purpose: "bind", email, userId: caller.id } : { purpose: "register", email };
  const ttl = VERIFICATION_CODE_TTL_SECONDS;
  await mailCode(deps, ref, "code", (code) => deliver(deps, codeMail(deps, email, code, ttl)), newNumericCode(), ttl);
}

/** The live account an address resets: the oldest, should an administrator have given several the same. */
function accountByEmail(deps: AppDeps, email: string) {
  return deps.db
    .selectFrom("users")
    .select(["id", "username", "display_name"])
    .where(sql<string>`lower(email)`, "=", email)
    .where("deleted_at", "is", null)
    .orderBy("id")
    .limit(1)
    .executeTakeFirst();
}

/**
 * GET /api/reset_password. Like one-api, an unknown address is told it is not registered (registration
 * already reveals taken addresses; the critical rate limit and Turnstile bound the guessing). The link is
 * built on ServerAddress only, never on the request's Host, which a caller could forge to steal the token.
 */
export async function sendResetLink(deps: AppDeps, rawEmail: string | undefined): Promise<void> {
  const email = normaliseEmail(rawEmail);
  if (!isEmail(email)) throw badRequest(EMAIL_MSG.invalid);
  assertMailConfigured(deps);
  const base = deps.options.get("ServerAddress").trim().replace(/\/+$/, "");
  if (!base) throw new AppError(503, VERIFY_MSG.noServerAddress);
  const user = await accountByEmail(deps, email);
  if (!user) throw badRequest(VERIFY_MSG.notRegistered);
  const ttl = RESET_LINK_TTL_SECONDS;
  await mailCode(
    deps,
    { purpose: "reset", email },
    "reset",
    (token) => {
      const link = `${base}/user/reset?email=${encodeURIComponent(email)}&token=${token}`;
      return deliver(deps, resetMail(deps, email, user.display_name || user.username, link, ttl));
    },
    randomString(RESET_TOKEN_LENGTH),
    ttl,
  );
}

/** POST /api/user/reset: spends the link, sets a random password and ends every session of the account. */
export async function resetPassword(
  deps: AppDeps,
  rawEmail: string | undefined,
  token: string | undefined,
): Promise<string> {
  const email = normaliseEmail(rawEmail);
  if (!email || !token?.trim()) throw badRequest(VERIFY_MSG.resetParams);
  if (
    !(await throttledCheck(deps, accountOfName(email), () =>
      consumeCode(deps, { purpose: "reset", email }, token, RESET_LINK_TTL_SECONDS),
    ))
  ) {
    throw badRequest(VERIFY_MSG.resetInvalid);
  }
  const user = await accountByEmail(deps, email);
  if (!user) throw badRequest(VERIFY_MSG.resetInvalid);
  const password = randomString(RESET_PASSWORD_LENGTH);
  await deps.db
    .updateTable("users")
    .set({ password: await hashPassword(password, deps.config.passwordHash), ...END_SESSIONS })
    .where("id", "=", user.id)
    .execute();
  return password;
}

/** GET /api/oauth/email/bind: the code must have been mailed to this address at this user's request. */
export async function bindEmail(
  deps: AppDeps,
  user: User,
  rawEmail: string | undefined,
  code: string | undefined,
): Promise<void> {
  const email = normaliseEmail(rawEmail);
  if (!email || !code?.trim()) throw badRequest(VERIFY_MSG.bindParams);
  const refused = emailPolicyError(deps, email);
  if (refused) throw badRequest(refused);
  const ref: CodeRef = { purpose: "bind", email, userId: user.id };
  const ttl = VERIFICATION_CODE_TTL_SECONDS;
  if (!(await checkCode(deps, ref, code, ttl))) throw badRequest(USER_MSG.verificationWrong);
  if (await emailTaken(deps, email, user.id)) throw badRequest(EMAIL_MSG.taken);
  if (!(await consumeCode(deps, ref, code, ttl))) throw badRequest(USER_MSG.verificationWrong);
  await deps.db.updateTable("users").set({ email }).where("id", "=", user.id).execute();
  await notifyTokenChanged(deps, { userId: user.id });
}
