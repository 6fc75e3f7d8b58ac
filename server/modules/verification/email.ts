// Which addresses may receive a code and be attached to an account (options EmailDomainRestrictionEnabled,
// EmailDomainWhitelist, EmailAliasRestrictionEnabled), and whether a live account already holds one.
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";

export const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** The longest address SMTP can carry (RFC 5321 path limit less the brackets). */
const EMAIL_MAX_LENGTH = 254;

/** Gmail ignores dots in the local part, so there "j.ohn" is an alias of "john". */
const DOT_ALIAS_DOMAINS = new Set(["gmail.com", "googlemail.com"]);

export const EMAIL_MSG = {
  invalid: "invalid email address",
  domainNotAllowed:
    "the administrator only allows email addresses of whitelisted domains, and this domain is not on the list",
  aliasNotAllowed: "the administrator does not allow email aliases (a '+' in the address, or dots in a Gmail address)",
  taken: "the email address is already taken",
} as const;

/** Addresses are compared and stored trimmed and in lower case. */
export const normaliseEmail = (raw: string | undefined) => (raw ?? "").trim().toLowerCase();

export const isEmail = (email: string) => email.length <= EMAIL_MAX_LENGTH && EMAIL_RE.test(email);

/** Why this (normalised) address is refused by the site's email rules, or null when it is fine. */
export function emailPolicyError(deps: AppDeps, email: string): string | null {
  if (!isEmail(email)) return EMAIL_MSG.invalid;
  const at = email.lastIndexOf("@");
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  const o = deps.options;
  if (o.bool("EmailDomainRestrictionEnabled")) {
    const allowed = o
      .get("EmailDomainWhitelist")
      .split(",")
      .map((d) => d.trim().toLowerCase())
      .filter(Boolean);
    if (!allowed.includes(domain)) return EMAIL_MSG.domainNotAllowed;
  }
  if (
    o.bool("EmailAliasRestrictionEnabled")
    && (local.includes("+") || (DOT_ALIAS_DOMAINS.has(domain) && local.includes(".")))
  ) {
    return EMAIL_MSG.aliasNotAllowed;
  }
  return null;
}

/** True when a live (not deleted) account other than `exceptUserId` has this address, in any letter case. */
export async function emailTaken(deps: AppDeps, email: string, exceptUserId = 0): Promise<boolean> {
  const row = await deps.db
    .selectFrom("users")
    .select("id")
    .where(sql<string>`lower(email)`, "=", email)
    .where("deleted_at", "is", null)
    .where("id", "!=", exceptUserId)
    .limit(1)
    .executeTakeFirst();
  return !!row;
}
