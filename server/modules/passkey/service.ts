// Passkeys (WebAuthn, through @simplewebauthn/server): a signed-in user registers one or more; anyone
// signs in with one (a discoverable credential: no username typed); a signed-in user proves presence
// with one for secure verification. Each ceremony's challenge waits in the shared cache for two minutes
// and is used once. Rows follow new-api's passkey_credentials (ids and keys in standard base64), so
// passkeys registered on either server sign in on the other. No HTTP here.
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import type { AppDeps } from "../../deps.ts";
import type { PasskeyCredentialsTable, User } from "../../../db/schema.ts";
import type { Selectable } from "kysely";
import { dbTime, timeMillis } from "../../../db/datetime.ts";
import { AppError, badRequest, forbidden, notFound } from "../../http/errors.ts";
import { findActiveUser } from "../../http/auth.ts";
import { ROLE } from "../../catalogue/index.ts";
import type { RelyingParty } from "./relying-party.ts";

export const CEREMONY_SECONDS = 120;

/** The WebAuthn library (and its ASN.1 and CBOR parsers) is loaded on the first passkey call: evaluating it is
 * slow, and every start of the server would otherwise pay for it (hot-path rule 15). */
const webauthn = () => import("@simplewebauthn/server");

export const MSG = {
  disabled: "passkey sign-in is not enabled by the administrator",
  expired: "the passkey request has expired, start again",
  failed: "the passkey could not be verified",
  unknown: "this passkey is not registered here",
  none: "this account has no passkey",
  taken: "this passkey is already registered",
  levelDenied: "no permission to reset the passkeys of users of equal or higher level",
} as const;

type Row = Selectable<PasskeyCredentialsTable>;
type Ceremony = "reg" | "login" | "verify";

const toStd = (b64url: string) => Buffer.from(b64url, "base64url").toString("base64");
const toUrl = (std: string) => Buffer.from(std, "base64").toString("base64url");

export function assertEnabled(deps: AppDeps): void {
  if (!deps.options.bool("passkey.enabled")) throw forbidden(MSG.disabled);
}

const ceremonyKey = (kind: Ceremony, handle: string) => `passkey:${kind}:${handle}`;

async function saveChallenge(deps: AppDeps, kind: Ceremony, handle: string, challenge: string): Promise<void> {
  await deps.cache.set(ceremonyKey(kind, handle), challenge, CEREMONY_SECONDS);
}

/** The challenge of a ceremony, handed out once (across instances). */
async function takeChallenge(deps: AppDeps, kind: Ceremony, handle: string): Promise<string> {
  const key = ceremonyKey(kind, handle);
  const challenge = await deps.cache.get(key);
  if (!challenge || !(await deps.cache.setNx(`${key}:taken:${challenge}`, "1", CEREMONY_SECONDS)))
    throw badRequest(MSG.expired);
  await deps.cache.del(key);
  return challenge;
}

async function credentialsOf(deps: AppDeps, userId: number): Promise<Row[]> {
  return deps.db
    .selectFrom("passkey_credentials")
    .selectAll()
    .where("user_id", "=", userId)
    .where("deleted_at", "is", null)
    .orderBy("id")
    .execute();
}

const transportsOf = (row: Row): string[] | undefined => {
  try {
    const list = JSON.parse(row.transports ?? "");
    return Array.isArray(list) ? list.map(String) : undefined;
  } catch {
    return undefined;
  }
};

function failed(e: unknown): AppError {
  return e instanceof AppError ? e : badRequest(`${MSG.failed}: ${(e as Error)?.message ?? e}`);
}

// ---- status ---------------------------------------------------------------------------------------------

const iso = (v: unknown) => {
  const ms = timeMillis(v);
  return ms === null ? null : new Date(ms).toISOString();
};

/** GET /api/user/passkey: new-api's {enabled, last_used_at}, plus the list of the user's passkeys. */
export async function passkeyStatus(deps: AppDeps, userId: number) {
  const rows = await credentialsOf(deps, userId);
  const lastUsed = rows.map((r) => timeMillis(r.last_used_at) ?? 0).reduce((a, b) => Math.max(a, b), 0);
  return {
    enabled: rows.length > 0,
    last_used_at: lastUsed ? new Date(lastUsed).toISOString() : null,
    passkeys: rows.map((r) => ({
      id: r.id,
      attachment: r.attachment,
      backup_eligible: Boolean(r.backup_eligible),
      created_at: iso(r.created_at),
      last_used_at: iso(r.last_used_at),
    })),
  };
}

/** DELETE /api/user/passkey (all of them, as new-api) or ?id= (one). */
export async function deletePasskeys(deps: AppDeps, userId: number, id?: number): Promise<number> {
  let q = deps.db.deleteFrom("passkey_credentials").where("user_id", "=", userId);
  if (id !== undefined) q = q.where("id", "=", id);
  const r = await q.executeTakeFirst();
  const n = Number(r.numDeletedRows);
  if (!n) throw badRequest(MSG.none);
  return n;
}

/** DELETE /api/user/{id}/reset_passkey (admin, lower users only; the super admin anyone). */
export async function adminResetPasskeys(deps: AppDeps, actor: User, targetId: number): Promise<void> {
  const target = await deps.db.selectFrom("users").select(["id", "role"]).where("id", "=", targetId).executeTakeFirst();
  if (!target) throw notFound("user not found");
  if (actor.role <= target.role && actor.role < ROLE.root) throw forbidden(MSG.levelDenied);
  await deletePasskeys(deps, targetId);
}

// ---- registration ----------------------------------------------------------------------------------------

export async function registerBegin(deps: AppDeps, user: User, rp: RelyingParty) {
  assertEnabled(deps);
  const existing = await credentialsOf(deps, user.id);
  const options = await (await webauthn()).generateRegistrationOptions({
    rpName: rp.rpName,
    rpID: rp.rpID,
    userName: user.username,
    userDisplayName: user.display_name || user.username,
    // new-api's WebAuthn user handle: the decimal user id.
    userID: new TextEncoder().encode(String(user.id)),
    attestationType: "none",
    timeout: CEREMONY_SECONDS * 1000,
    excludeCredentials: existing.map((r) => ({ id: toUrl(r.credential_id), transports: transportsOf(r) })),
    authenticatorSelection: {
      residentKey: "required",
      requireResidentKey: true,
      userVerification: rp.userVerification,
      ...(rp.attachment ? { authenticatorAttachment: rp.attachment } : {}),
    },
  });
  await saveChallenge(deps, "reg", String(user.id), options.challenge);
  return { publicKey: options };
}

export async function registerFinish(
  deps: AppDeps,
  user: User,
  rp: RelyingParty,
  response: RegistrationResponseJSON,
): Promise<void> {
  assertEnabled(deps);
  const expectedChallenge = await takeChallenge(deps, "reg", String(user.id));
  let info;
  try {
    const result = await (await webauthn()).verifyRegistrationResponse({
      response,
      expectedChallenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.rpID,
      requireUserVerification: rp.userVerification === "required",
    });
    if (!result.verified) throw badRequest(MSG.failed);
    info = result.registrationInfo;
  } catch (e) {
    throw failed(e);
  }
  const credentialId = toStd(info.credential.id);
  const taken = await deps.db
    .selectFrom("passkey_credentials")
    .select("user_id")
    .where("credential_id", "=", credentialId)
    .executeTakeFirst();
  if (taken) throw badRequest(MSG.taken);
  const now = dbTime(deps.db, Date.now());
  const transports = info.credential.transports?.length ? JSON.stringify(info.credential.transports) : "";
  await deps.db
    .insertInto("passkey_credentials")
    .values({
      user_id: user.id,
      credential_id: credentialId,
      public_key: Buffer.from(info.credential.publicKey).toString("base64"),
      attestation_type: info.fmt,
      aaguid: Buffer.from(info.aaguid.replace(/-/g, ""), "hex").toString("base64"),
      sign_count: info.credential.counter,
      clone_warning: false,
      user_present: true,
      user_verified: info.userVerified,
      backup_eligible: info.credentialDeviceType === "multiDevice",
      backup_state: info.credentialBackedUp,
      transports,
      attachment: response.authenticatorAttachment ?? "",
      last_used_at: null,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    })
    .execute();
}

// ---- assertion (sign-in and secure verification) --------------------------------------------------------

async function assertionOptions(rp: RelyingParty, allow: Row[] | null) {
  return (await webauthn()).generateAuthenticationOptions({
    rpID: rp.rpID,
    userVerification: rp.userVerification,
    timeout: CEREMONY_SECONDS * 1000,
    allowCredentials: allow
      ? allow.map((r) => ({ id: toUrl(r.credential_id), transports: transportsOf(r) }))
      : undefined,
  });
}

/** Verifies an assertion against a stored credential and records its new counter and use. */
async function checkAssertion(
  deps: AppDeps,
  rp: RelyingParty,
  row: Row,
  response: AuthenticationResponseJSON,
  expectedChallenge: string,
) {
  let result;
  try {
    result = await (await webauthn()).verifyAuthenticationResponse({
      response,
      expectedChallenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.rpID,
      credential: {
        id: toUrl(row.credential_id),
        publicKey: new Uint8Array(Buffer.from(row.public_key, "base64")),
        counter: Number(row.sign_count),
        transports: transportsOf(row),
      },
      requireUserVerification: rp.userVerification === "required",
    });
  } catch (e) {
    throw failed(e);
  }
  if (!result.verified) throw badRequest(MSG.failed);
  const now = dbTime(deps.db, Date.now());
  await deps.db
    .updateTable("passkey_credentials")
    .set({
      sign_count: result.authenticationInfo.newCounter,
      user_verified: result.authenticationInfo.userVerified,
      backup_state: result.authenticationInfo.credentialBackedUp,
      last_used_at: now,
      updated_at: now,
    })
    .where("id", "=", row.id)
    .execute();
}

async function credentialOf(deps: AppDeps, response: AuthenticationResponseJSON): Promise<Row> {
  if (typeof response?.id !== "string" || !response.id) throw badRequest(MSG.failed);
  const row = await deps.db
    .selectFrom("passkey_credentials")
    .selectAll()
    .where("credential_id", "=", toStd(response.id))
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!row) throw badRequest(MSG.unknown);
  return row;
}

/** Sign-in, step 1: a challenge for any of this site's passkeys; `flow` names the browser's attempt. */
export async function loginBegin(deps: AppDeps, rp: RelyingParty, flow: string) {
  assertEnabled(deps);
  const options = await assertionOptions(rp, null);
  await saveChallenge(deps, "login", flow, options.challenge);
  return { publicKey: options };
}

/** Sign-in, step 2: the user the passkey belongs to (enabled, not deleted). */
export async function loginFinish(
  deps: AppDeps,
  rp: RelyingParty,
  flow: string,
  response: AuthenticationResponseJSON,
): Promise<User> {
  assertEnabled(deps);
  const challenge = await takeChallenge(deps, "login", flow);
  const row = await credentialOf(deps, response);
  const user = await findActiveUser(deps, row.user_id).catch((e) => {
    throw e instanceof AppError && e.status === 401 ? badRequest(MSG.unknown) : e;
  });
  // The authenticator names its user (new-api's handle: the decimal id); it must be the credential's owner.
  const handle = response.response?.userHandle;
  if (handle && Buffer.from(handle, "base64url").toString("utf8") !== String(user.id)) throw badRequest(MSG.failed);
  await checkAssertion(deps, rp, row, response, challenge);
  return user;
}

/** Secure verification with a passkey, step 1: a challenge for this user's own passkeys. */
export async function verifyBegin(deps: AppDeps, user: User, rp: RelyingParty, tag: string) {
  assertEnabled(deps);
  const rows = await credentialsOf(deps, user.id);
  if (!rows.length) throw badRequest(MSG.none);
  const options = await assertionOptions(rp, rows);
  await saveChallenge(deps, "verify", `${user.id}:${tag}`, options.challenge);
  return { publicKey: options };
}

export async function verifyFinish(
  deps: AppDeps,
  user: User,
  rp: RelyingParty,
  tag: string,
  response: AuthenticationResponseJSON,
): Promise<void> {
  assertEnabled(deps);
  const challenge = await takeChallenge(deps, "verify", `${user.id}:${tag}`);
  const row = await credentialOf(deps, response);
  if (row.user_id !== user.id) throw badRequest(MSG.unknown);
  await checkAssertion(deps, rp, row, response, challenge);
}
