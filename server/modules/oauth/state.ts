// The OAuth state: a random value kept in the shared cache for a few minutes AND in an HttpOnly cookie of
// the browser that asked for it. The callback must bring both, so a link carrying someone else's code and
// state (login CSRF, or binding an attacker's account to a signed-in victim) is refused. Each state works once.
import type { AppDeps } from "../../deps.ts";
import { forbidden } from "../../http/errors.ts";
import { randomString } from "../../infra/random.ts";

export const STATE_COOKIE = "oauth_state";
export const STATE_COOKIE_PATH = "/api/oauth";
export const STATE_TTL_SECONDS = 600;
export const STATE_REFUSED = "the sign-in state is missing, expired or does not match this browser; start the sign-in again";

const stateKey = (state: string) => `oauth:state:${state}`;
const usedKey = (state: string) => `oauth:state-used:${state}`;

/** A new state; aff (an invite code) rides along to the registration it may lead to. */
export async function issueState(deps: AppDeps, aff?: string): Promise<string> {
  const state = randomString(32);
  await deps.cache.set(stateKey(state), JSON.stringify({ aff: aff ?? "" }), STATE_TTL_SECONDS);
  return state;
}

/** Checks the callback's state against the browser's cookie and the cache, and uses it up. */
export async function consumeState(deps: AppDeps, state: string | undefined, cookieValue: unknown): Promise<{ aff: string }> {
  if (!state || cookieValue === undefined || cookieValue === null || String(cookieValue) !== state) throw forbidden(STATE_REFUSED);
  const raw = await deps.cache.get(stateKey(state));
  // setNx makes the use atomic: of two simultaneous callbacks with one state, only one gets through.
  if (raw === null || !(await deps.cache.setNx(usedKey(state), "1", STATE_TTL_SECONDS))) throw forbidden(STATE_REFUSED);
  await deps.cache.del(stateKey(state));
  try {
    return { aff: String(JSON.parse(raw).aff ?? "") };
  } catch {
    return { aff: "" };
  }
}
