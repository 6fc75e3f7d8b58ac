// Mail-based routes (spec 000 §7.2): verification codes, password reset, email binding.
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import { checkTurnstile } from "../../http/turnstile.ts";
import { ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import { anyReply, okReply } from "../../http/schema.ts";

const emailQuery = t.Object(
  { email: t.Optional(t.String()), turnstile: t.Optional(t.String()) },
  { additionalProperties: true },
);
const bindQuery = t.Object(
  { email: t.Optional(t.String()), code: t.Optional(t.String()) },
  { additionalProperties: true },
);
const resetBody = t.Object(
  { email: t.Optional(t.String()), token: t.Optional(t.String()) },
  { additionalProperties: true },
);

export function verificationModule(deps: AppDeps) {
  const ipOf = (request: Request, server: unknown) => clientIp(request, server as any, deps.config.trustProxy);
  return new Elysia({ prefix: "/api", tags: ["verification"] })
    .use(authPlugin(deps))
    .get(
      "/verification",
      async ({ query, request, server, viewer }) => {
        const ip = ipOf(request, server);
        await enforceLimit(deps, "critical", ip);
        // A signed-in caller (binding an address) passed Turnstile at login, as one-api's session remembers.
        if (!viewer) await checkTurnstile(deps, query.turnstile, ip);
        await svc.sendVerificationCode(deps, query.email, viewer);
        return ok(undefined, "verification code sent");
      },
      { viewer: true, query: emailQuery, detail: { summary: "Send an email verification code" }, response: okReply },
    )
    .get(
      "/reset_password",
      async ({ query, request, server, viewer }) => {
        const ip = ipOf(request, server);
        await enforceLimit(deps, "critical", ip);
        if (!viewer) await checkTurnstile(deps, query.turnstile, ip);
        await svc.sendResetLink(deps, query.email);
        return ok(undefined, svc.VERIFY_MSG.resetSent);
      },
      { viewer: true, query: emailQuery, detail: { summary: "Send a password reset link" }, response: okReply },
    )
    .post(
      "/user/reset",
      async ({ body, request, server }) => {
        await enforceLimit(deps, "critical", ipOf(request, server));
        return ok(await svc.resetPassword(deps, body.email, body.token));
      },
      { body: resetBody, detail: { summary: "Reset a password with the emailed token" }, response: anyReply },
    )
    .get(
      "/oauth/email/bind",
      async ({ query, request, server, user }) => {
        await enforceLimit(deps, "critical", ipOf(request, server));
        await svc.bindEmail(deps, user, query.email, query.code);
        return ok(undefined, svc.VERIFY_MSG.bound);
      },
      {
        role: ROLE.common,
        query: bindQuery,
        detail: { summary: "Bind an email address with its code" },
        response: okReply,
      },
    );
}
