// A password sign-in waiting for its second factor. It lives in the shared cache for a few minutes, so
// any instance can finish it (with Redis), and is bound to the account's session version: a password
// change or a ban in between voids it. The browser holds it as an HttpOnly cookie (new-api's console sends
// only the code) and, for other clients, as the flow_token of the login answer.
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { badRequest } from "../../http/errors.ts";
import { findActiveUser } from "../../http/auth.ts";
import { randomString } from "../../infra/random.ts";
import { verifySecondFactor } from "./service.ts";

export const PENDING_LOGIN_TTL_SECONDS = 300;
export const PENDING_LOGIN_COOKIE = "pending_2fa";
export const PENDING_EXPIRED = "the sign-in has expired, log in with your password again";

const keyOf = (token: string) => `2fa:login:${token}`;

export async function startPendingLogin(
  deps: AppDeps,
  user: User,
): Promise<{ flow_token: string; expires_at: number }> {
  const token = randomString(40);
  await deps.cache.set(
    keyOf(token),
    JSON.stringify({ id: user.id, sv: user.session_version }),
    PENDING_LOGIN_TTL_SECONDS,
  );
  return { flow_token: token, expires_at: Math.floor(Date.now() / 1000) + PENDING_LOGIN_TTL_SECONDS };
}

/** Checks the code for the pending sign-in and spends it (once, across instances); answers the user to sign in. */
export async function completePendingLogin(
  deps: AppDeps,
  token: string | undefined,
  code: string | undefined,
): Promise<User> {
  if (!token || !/^[A-Za-z0-9]{16,64}$/.test(token)) throw badRequest(PENDING_EXPIRED);
  const raw = await deps.cache.get(keyOf(token));
  if (!raw) throw badRequest(PENDING_EXPIRED);
  const pending = JSON.parse(raw) as { id: number; sv: number };
  const user = await findActiveUser(deps, pending.id);
  if (user.session_version !== pending.sv) throw badRequest(PENDING_EXPIRED);
  await verifySecondFactor(deps, user.id, code);
  if (!(await deps.cache.setNx(`${keyOf(token)}:used`, "1", PENDING_LOGIN_TTL_SECONDS)))
    throw badRequest(PENDING_EXPIRED);
  await deps.cache.del(keyOf(token));
  return user;
}
