// Password sign-in: register, login, logout (spec 000 §2.3-2.4, §7.2).
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin, endSession, startSession } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import * as svc from "../user/service.ts";
import { publicUser } from "../user/view.ts";
import { loginBody, registerBody } from "../user/model.ts";

export function authModule(deps: AppDeps) {
  const limit = (request: Request, server: unknown) => enforceLimit(deps, "critical", clientIp(request, server as any, deps.config.trustProxy));
  return new Elysia({ prefix: "/api/user" })
    .use(authPlugin(deps))
    .post("/register", async ({ body, request, server }) => {
      await limit(request, server);
      await svc.register(deps, body as svc.RegisterInput);
      return ok(undefined, "registered");
    }, { body: registerBody })
    .post("/login", async ({ body, request, server, sessionJwt, cookie }) => {
      await limit(request, server);
      const { user, message } = await svc.login(deps, body.username ?? "", body.password ?? "");
      await startSession(sessionJwt, cookie, user, new URL(request.url).protocol === "https:");
      return ok(publicUser(user), message);
    }, { body: loginBody })
    .get("/logout", async ({ cookie, headers, sessionJwt }) => {
      await endSession(deps, sessionJwt, cookie, headers);
      return ok(undefined, "logged out");
    });
}
