// Mailed proofs of an address: codes for registration and binding, links for password resets. No HTTP here.
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import { EMAIL_RESEND_SECONDS, VERIFICATION_CODE_TTL_SECONDS } from "../../catalogue/index.ts";
import { issueCode, newNumericCode, revokeCode, type CodeRef } from "./codes.ts";
import { EMAIL_MSG, emailPolicyError, emailTaken, normaliseEmail } from "./email.ts";
import { assertMailConfigured, codeMail, deliver } from "./mails.ts";

export const VERIFY_MSG = {
  tooSoon: `an email was just sent to this address; please wait ${EMAIL_RESEND_SECONDS} seconds before asking for another`,
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
async function mailCode(deps: AppDeps, ref: CodeRef, kind: string, send: (code: string) => Promise<void>, code: string, ttl: number) {
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
export async function sendVerificationCode(deps: AppDeps, rawEmail: string | undefined, caller: User | null): Promise<void> {
  const email = normaliseEmail(rawEmail);
  const refused = emailPolicyError(deps, email);
  if (refused) throw badRequest(refused);
  assertMailConfigured(deps);
  if (await emailTaken(deps, email)) throw badRequest(EMAIL_MSG.taken);
  const ref: CodeRef = caller ? { purpose: "bind", email, userId: caller.id } : { purpose: "register", email };
  const ttl = VERIFICATION_CODE_TTL_SECONDS;
  await mailCode(deps, ref, "code", (code) => deliver(deps, codeMail(deps, email, code, ttl)), newNumericCode(), ttl);
}
