// Who is calling a management route: a console session (signed HttpOnly cookie + New-Api-User header)
// or a system access token in Authorization. Routes declare the least role they need: { role: ROLE.admin }.
import { Elysia } from "elysia";
import { jwt } from "@elysiajs/jwt";
import type { AppDeps } from "../deps.ts";
import type { User } from "../../db/schema.ts";
import { ROLE, USER_STATUS } from "../catalogue/index.ts";
import { AppError, forbidden, unauthorized } from "./errors.ts";

export const SESSION_COOKIE = "session";
export const USER_ID_HEADER = "new-api-user";
export const SESSION_MAX_AGE_SECONDS = 30 * 24 * 3600;

let seed = 0;
const seeds = new WeakMap<AppDeps, number>();

export async function findActiveUser(deps: AppDeps, id: number): Promise<User> {
  const user = await deps.db.selectFrom("users").selectAll().where("id", "=", id).where("deleted_at", "is", null).executeTakeFirst();
  if (!user) throw unauthorized("user does not exist or has been deleted");
  if (user.status !== USER_STATUS.enabled) throw new AppError(403, "user has been banned");
  return user;
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
  { sessionJwt, cookie, headers }: { sessionJwt: { verify(v: string): Promise<any> }; cookie: Record<string, any>; headers: Record<string, string | undefined> },
): Promise<User | null> {
  const claimed = headerUserId(headers);
  if (claimed === "bad") throw unauthorized("the New-Api-User header is malformed");
  let user: User | null = null;
  const sessionValue = cookie[SESSION_COOKIE]?.value;
  if (typeof sessionValue === "string" && sessionValue) {
    const payload = await sessionJwt.verify(sessionValue);
    if (payload && typeof payload.id === "number") {
      if (claimed === null) throw unauthorized("the New-Api-User header is missing");
      if (claimed !== payload.id) throw unauthorized("the New-Api-User header does not match the logged-in user");
      user = await findActiveUser(deps, payload.id);
    }
  }
  if (!user) {
    const auth = (headers.authorization ?? "").replace(/^Bearer\s+/i, "").trim();
    if (auth && !auth.startsWith("sk-")) {
      const row = await deps.db.selectFrom("users").select("id").where("access_token", "=", auth).executeTakeFirst();
      if (!row) throw unauthorized("invalid access token");
      if (claimed !== null && claimed !== row.id) throw unauthorized("the New-Api-User header does not match the access token");
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
        async resolve({ sessionJwt, cookie, headers }) {
          const user = await identify(deps, { sessionJwt, cookie, headers });
          if (!user) throw unauthorized();
          if (user.role < min) throw forbidden(min >= ROLE.root ? "only the super admin can do this" : "no permission to perform this operation");
          return { user };
        },
      }),
      /** Guest-allowed routes: `viewer` is the logged-in user, or null for guests and unusable credentials. */
      viewer: (enabled: boolean) => ({
        async resolve({ sessionJwt, cookie, headers }) {
          if (!enabled) return { viewer: null as User | null };
          const viewer = await identify(deps, { sessionJwt, cookie, headers }).catch(() => null);
          return { viewer };
        },
      }),
    });
}

/** Signs a session for the user and sets the cookie on the reply. */
export async function startSession(
  sessionJwt: { sign(p: Record<string, unknown>): Promise<string> },
  cookie: Record<string, any>,
  userId: number,
  secure: boolean,
): Promise<void> {
  cookie[SESSION_COOKIE].set({
    value: await sessionJwt.sign({ id: userId }),
    httpOnly: true,
    sameSite: "lax",
    path: "/",
    maxAge: SESSION_MAX_AGE_SECONDS,
    secure,
  });
}
