// Password sign-in: register, login, logout (spec 000 §2.3-2.4, §7.2).
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin, endSession } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import { checkTurnstile } from "../../http/turnstile.ts";
import * as svc from "../user/service.ts";
import { loginBody, registerBody, signInResult, turnstileQuery } from "../user/model.ts";
import { okReply } from "../../http/schema.ts";
import { signInReply } from "../twofa/signin.ts";
import { dummyHash } from "../user/password.ts";

export function authModule(deps: AppDeps) {
  // The dummy hash an unknown name is checked against is made now, not on the first such sign-in.
  void dummyHash(deps.config.passwordHash);
  /** The critical rate limit, then Turnstile (in one-api's order), before any account is looked at. */
  const guard = async (request: Request, server: unknown, turnstile: string | undefined) => {
    const ip = clientIp(request, server as any, deps.config.trustProxy);
    await enforceLimit(deps, "critical", ip);
    await checkTurnstile(deps, turnstile, ip);
  };
  return (
    new Elysia({ prefix: "/api/user", tags: ["auth"] })
      .use(authPlugin(deps))
      .post(
        "/register",
        async ({ body, query, request, server }) => {
          await guard(request, server, query.turnstile);
          await svc.register(deps, body as svc.RegisterInput);
          return ok(undefined, "registered");
        },
        {
          body: registerBody,
          query: turnstileQuery,
          detail: { summary: "Register with a password" },
          response: okReply,
        },
      )
      .post(
        "/login",
        async ({ body, query, request, server, sessionJwt, cookie }) => {
          await guard(request, server, query.turnstile);
          const { user, message } = await svc.login(deps, body.username ?? "", body.password ?? "");
          // With two-factor sign-in on, the password only opens a short pending sign-in (new-api's require_2fa).
          return signInReply(deps, { sessionJwt, cookie, request }, user, message);
        },
        {
          body: loginBody,
          query: turnstileQuery,
          detail: { summary: "Sign in with a password" },
          response: signInResult,
        },
      )
      // GET as one-api/new-api consoles call it (with New-Api-User), or POST.
      .get(
        "/logout",
        async ({ cookie, headers, sessionJwt }) => {
          await endSession(deps, sessionJwt, cookie, headers, "GET");
          return ok(undefined, "logged out");
        },
        {
          detail: { summary: "Sign out (ends every session of the account); needs the New-Api-User header" },
          response: okReply,
        },
      )
      .post(
        "/logout",
        async ({ cookie, headers, sessionJwt }) => {
          await endSession(deps, sessionJwt, cookie, headers, "POST");
          return ok(undefined, "logged out");
        },
        { detail: { summary: "Sign out (ends every session of the account)" }, response: okReply },
      )
  );
}
