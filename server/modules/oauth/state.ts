// The OAuth state: a random value kept in the shared cache for a few minutes AND in an HttpOnly cookie of
// the browser that asked for it. The callback must bring both, so a link carrying someone else's code and
// state (login CSRF, or binding an attacker's account to a signed-in victim) is refused. Each state works once.
import type { AppDeps } from "../../deps.ts";
import { forbidden } from "../../http/errors.ts";
import { randomString } from "../../infra/random.ts";

export const STATE_COOKIE = "oauth_state";
export const STATE_COOKIE_PATH = "/api/oauth";
export const STATE_TTL_SECONDS = 600;
export const STATE_REFUSED =
  "the sign-in state is missing, expired or does not match this browser; start the sign-in again";

const stateKey = (state: string) => `oauth:state:${state}`;
const usedKey = (state: string) => `oauth:state-used:${state}`;

export interface StateData {
  /** Invite code for the registration the sign-in may lead to. */
  aff: string;
  /** The signed-in user who asked for the state (a binding), 0 for a guest (a sign-in). */
  bindFor: number;
  /** OIDC only, when the server built the authorisation URL: the PKCE code verifier and the ID token nonce. */
  pkce?: string;
  nonce?: string;
}

export async function issueState(deps: AppDeps, data: StateData): Promise<string> {
  const state = randomString(32);
  await deps.cache.set(stateKey(state), JSON.stringify(data), STATE_TTL_SECONDS);
  return state;
}

/** Checks the callback's state against the browser's cookie and the cache, and uses it up. */
export async function consumeState(deps: AppDeps, state: string | undefined, cookieValue: unknown): Promise<StateData> {
  if (!state || cookieValue === undefined || cookieValue === null || String(cookieValue) !== state)
    throw forbidden(STATE_REFUSED);
  const raw = await deps.cache.get(stateKey(state));
  // setNx makes the use atomic: of two simultaneous callbacks with one state, only one gets through.
  if (raw === null || !(await deps.cache.setNx(usedKey(state), "1", STATE_TTL_SECONDS))) throw forbidden(STATE_REFUSED);
  await deps.cache.del(stateKey(state));
  try {
    const data = JSON.parse(raw);
    const text = (v: unknown) => (typeof v === "string" && v ? v : undefined);
    return {
      aff: String(data.aff ?? ""),
      bindFor: Number(data.bindFor) || 0,
      pkce: text(data.pkce),
      nonce: text(data.nonce),
    };
  } catch {
    return { aff: "", bindFor: 0 };
  }
}
