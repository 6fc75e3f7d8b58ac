// Who is calling a management route: a console session (signed HttpOnly cookie + New-Api-User header)
// or a system access token in Authorization. Routes declare the least role they need: { role: ROLE.admin }.
//
// A session cookie carries the user's session_version at sign-in. Raising that column (logout, ban,
// password or role change) ends every cookie issued before, copies included; the guard compares it
// on the user row it reads anyway, so revocation costs no extra query.
import { Elysia } from "elysia";
import { jwt } from "@elysiajs/jwt";
import { sql } from "kysely";
import type { AppDeps } from "../deps.ts";
import type { User } from "../../db/schema.ts";
import { ROLE, USER_STATUS } from "../catalogue/index.ts";
import { AppError, forbidden, unauthorized } from "./errors.ts";
import { enforceRootTwoFA } from "../modules/twofa/enforce.ts";
import { randomString } from "../infra/random.ts";
import { roleDetail, viewerDetail } from "./schema.ts";

export const SESSION_COOKIE = "session";
export const USER_ID_HEADER = "new-api-user";
export const SESSION_MAX_AGE_SECONDS = 30 * 24 * 3600;
export const SESSION_ENDED = "the session has ended, please log in again";

/** Spread into a users update to end the user's sessions: `.set({ ...patch, ...END_SESSIONS })`. */
export const END_SESSIONS = { session_version: sql<number>`session_version + 1` } as const;

interface SessionSigner {
  sign(p: Record<string, unknown>): Promise<string>;
  verify(v: string): Promise<any>;
}

let seed = 0;
const seeds = new WeakMap<AppDeps, number>();

async function findUser(deps: AppDeps, id: number): Promise<User> {
  const user = await deps.db
    .selectFrom("users")
    .selectAll()
    .where("id", "=", id)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!user) throw unauthorized("user does not exist or has been deleted");
  return user;
}

function assertEnabled(user: User): User {
  if (user.status !== USER_STATUS.enabled) throw new AppError(403, "user has been banned");
  return user;
}

export async function findActiveUser(deps: AppDeps, id: number): Promise<User> {
  return assertEnabled(await findUser(deps, id));
}

/** The user id of a cookie that is validly signed and not expired (its version is not checked). */
async function sessionPayload(
  sessionJwt: SessionSigner,
  cookie: Record<string, any>,
): Promise<{ id: number; sv: number } | null> {
  const value = cookie[SESSION_COOKIE]?.value;
  if (typeof value !== "string" || !value) return null;
  const payload = await sessionJwt.verify(value);
  if (!payload || typeof payload.id !== "number") return null;
  // Cookies signed before session versions existed carry none: they match a user never revoked.
  return { id: payload.id, sv: typeof payload.sv === "number" ? payload.sv : 0 };
}

function headerUserId(headers: Record<string, string | undefined>): number | null | "bad" {
  const raw = headers[USER_ID_HEADER];
  if (raw === undefined || raw === "") return null;
  const n = Number(raw);
  return Number.isInteger(n) && n > 0 ? n : "bad";
}

/** The caller identified by session cookie or access token; null for a guest. Throws on a bad credential. */
export async function identify(
  deps: AppDeps,
  {
    sessionJwt,
    cookie,
    headers,
  }: { sessionJwt: SessionSigner; cookie: Record<string, any>; headers: Record<string, string | undefined> },
): Promise<User | null> {
  const claimed = headerUserId(headers);
  if (claimed === "bad") throw unauthorized("the New-Api-User header is malformed");
  let user: User | null = null;
  const session = await sessionPayload(sessionJwt, cookie);
  if (session) {
    if (claimed === null) throw unauthorized("the New-Api-User header is missing");
    if (claimed !== session.id) throw unauthorized("the New-Api-User header does not match the logged-in user");
    const row = await findUser(deps, session.id);
    if (row.session_version !== session.sv) throw unauthorized(SESSION_ENDED);
    user = assertEnabled(row);
  }
  if (!user) {
    const auth = (headers.authorization ?? "").replace(/^Bearer\s+/i, "").trim();
    if (auth && !auth.startsWith("sk-")) {
      const row = await deps.db.selectFrom("users").select("id").where("access_token", "=", auth).executeTakeFirst();
      if (!row) throw unauthorized("invalid access token");
      if (claimed !== null && claimed !== row.id)
        throw unauthorized("the New-Api-User header does not match the access token");
      user = await findActiveUser(deps, row.id);
    }
  }
  return user;
}

export function authPlugin(deps: AppDeps) {
  if (!seeds.has(deps)) seeds.set(deps, ++seed);
  return new Elysia({ name: "auth", seed: seeds.get(deps) })
    .use(jwt({ name: "sessionJwt", secret: deps.config.sessionSecret, exp: `${SESSION_MAX_AGE_SECONDS}s` }))
    .macro({
      role: (min: number) => ({
        detail: roleDetail(min),
        async resolve({ sessionJwt, cookie, headers, request }) {
          const user = await identify(deps, { sessionJwt, cookie, headers });
          if (!user) throw unauthorized();
          if (user.role < min)
            throw forbidden(
              min >= ROLE.root ? "only the super admin can do this" : "no permission to perform this operation",
            );
          await enforceRootTwoFA(deps, user, new URL(request.url).pathname);
          return { user };
        },
      }),
      /** Guest-allowed routes: `viewer` is the logged-in user, or null for guests and unusable credentials. */
      viewer: (enabled: boolean) => ({
        detail: enabled ? viewerDetail() : {},
        async resolve({ sessionJwt, cookie, headers }) {
          if (!enabled) return { viewer: null as User | null };
          const viewer = await identify(deps, { sessionJwt, cookie, headers }).catch(() => null);
          return { viewer };
        },
      }),
    });
}

/** Signs a session for the user at its current session version and sets the cookie on the reply. */
export async function startSession(
  sessionJwt: SessionSigner,
  cookie: Record<string, any>,
  user: Pick<User, "id" | "session_version">,
  secure: boolean,
): Promise<void> {
  cookie[SESSION_COOKIE].set({
    // sid makes every sign-in's cookie distinct (two in the same second would otherwise be identical), so a
    // secure verification marked for one session (modules/twofa/secure.ts) never covers another.
    value: await sessionJwt.sign({ id: user.id, sv: user.session_version, sid: randomString(12) }),
    httpOnly: true,
    sameSite: "lax",
    path: "/",
    maxAge: SESSION_MAX_AGE_SECONDS,
    secure,
  });
}

/**
 * After the caller's own sessions were ended (a password change), signs this browser in again so only
 * the other copies stop working. Does nothing for callers that came with an access token, not a cookie.
 */
export async function renewSession(
  deps: AppDeps,
  sessionJwt: SessionSigner,
  cookie: Record<string, any>,
  request: Request,
): Promise<void> {
  const session = await sessionPayload(sessionJwt, cookie);
  if (!session) return;
  const user = await findActiveUser(deps, session.id);
  await startSession(sessionJwt, cookie, user, new URL(request.url).protocol === "https:");
}

/**
 * Logout: ends every session of the user whose live session cookie came, and clears the cookie. Like every call
 * that changes state, it needs the New-Api-User header naming that user, or a POST (a cross-site page can make a
 * browser send a GET with the cookie, never the header, and SameSite=Lax keeps the cookie off cross-site POSTs);
 * a GET with the cookie alone is refused and signs nobody out. Without a valid cookie there is nothing to end:
 * the cookie, if any, is cleared.
 */
export async function endSession(
  deps: AppDeps,
  sessionJwt: SessionSigner,
  cookie: Record<string, any>,
  headers: Record<string, string | undefined>,
  method: string,
): Promise<void> {
  const session = await sessionPayload(sessionJwt, cookie).catch(() => null);
  if (session && method !== "POST") {
    const claimed = headerUserId(headers);
    if (claimed === null) throw unauthorized("the New-Api-User header is missing: send it, or sign out with a POST");
    if (claimed !== session.id) throw unauthorized("the New-Api-User header does not match the logged-in user");
  }
  cookie[SESSION_COOKIE]?.remove();
  if (!session) return;
  await deps.db
    .updateTable("users")
    .set(END_SESSIONS)
    .where("id", "=", session.id)
    .where("session_version", "=", session.sv)
    .execute();
}
