// Cloudflare Turnstile on the routes one-api guards with it (login, register, verification mail, reset
// mail): with TurnstileCheckEnabled the caller's ?turnstile= widget token must pass Cloudflare's siteverify.
//
// Cloudflare accepts a token once, but the register page spends one widget token on two calls (send code,
// then register). one-api gets away with that by keeping a passed check in the session; here a token
// Cloudflare accepted is accepted again from the same client address for the token's own lifetime.
import { createHash } from "node:crypto";
import type { AppDeps } from "../deps.ts";
import { AppError } from "./errors.ts";

export const TURNSTILE_MSG = {
  missing: "the Turnstile check is missing: retry in a few seconds, Turnstile is checking the environment",
  failed: "the Turnstile check failed, please refresh the page and try again",
  unreachable: "cannot reach Cloudflare Turnstile to check this request, please try again later",
  unconfigured: "the Turnstile check is on but its secret key is not set; please tell the administrator",
} as const;

/** Cloudflare's own limits: tokens are at most 2048 characters and live 300 seconds. */
const TOKEN_MAX_LENGTH = 2048;
const TOKEN_LIFETIME_SECONDS = 300;
const SITEVERIFY_TIMEOUT_MS = 5000;

const memoKey = (token: string) => `turnstile:${createHash("sha256").update(token).digest("hex")}`;

/** Throws unless the check is off or `token` passes; `ip` is the client address ("local" when unknown). */
export async function checkTurnstile(deps: AppDeps, token: string | undefined, ip: string): Promise<void> {
  if (!deps.options.bool("TurnstileCheckEnabled")) return;
  const response = (token ?? "").trim();
  if (!response) throw new AppError(400, TURNSTILE_MSG.missing);
  if (response.length > TOKEN_MAX_LENGTH) throw new AppError(403, TURNSTILE_MSG.failed);
  const memo = memoKey(response);
  if ((await deps.cache.get(memo)) === ip) return;
  const secret = deps.options.get("TurnstileSecretKey");
  if (!secret) throw new AppError(503, TURNSTILE_MSG.unconfigured);

  const form = new URLSearchParams({ secret, response });
  if (ip && ip !== "local") form.set("remoteip", ip);
  let verdict: { success?: unknown };
  try {
    const res = await fetch(deps.config.turnstileVerifyUrl, {
      method: "POST",
      body: form,
      redirect: "error",
      signal: AbortSignal.timeout(SITEVERIFY_TIMEOUT_MS),
    });
    if (!res.ok) throw new Error(`siteverify answered ${res.status}`);
    verdict = await res.json();
  } catch (e) {
    console.error("Turnstile siteverify failed:", (e as Error)?.message ?? e);
    throw new AppError(502, TURNSTILE_MSG.unreachable);
  }
  if (verdict?.success !== true) throw new AppError(403, TURNSTILE_MSG.failed);
  await deps.cache.set(memo, ip, TOKEN_LIFETIME_SECONDS);
}
