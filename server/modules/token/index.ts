import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { badRequest } from "../../http/errors.ts";
import { ok, paging } from "../../http/envelope.ts";
import { ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import * as m from "./model.ts";

export function tokenModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api/token" })
    .use(authPlugin(deps))
    .get("/", ({ user, query }) => svc.listTokens(deps, user, paging(query)).then(ok), { role: ROLE.common, query: m.listQuery })
    .get("/search", ({ user, query }) => svc.listTokens(deps, user, { ...paging(query), keyword: query.keyword, token: query.token }).then(ok), {
      role: ROLE.common, query: m.listQuery,
    })
    .get("/:id", async ({ user, params }) => ok(svc.tokenView(await svc.ownToken(deps, user, params.id))), { role: ROLE.common, params: m.idParam })
    .post("/", async ({ user, body }) => ok(await svc.createTokens(deps, user, body), "token created"), { role: ROLE.common, body: m.tokenBody })
    .put("/", async ({ user, body, query }) => {
      if (body.id === undefined) throw badRequest("id is required");
      const statusOnly = query.status_only === "true" || query.status_only === "1";
      return ok(await svc.updateToken(deps, user, body.id, body, statusOnly));
    }, { role: ROLE.common, body: m.tokenBody, query: m.updateQuery })
    // new-api's batch delete: {ids}; data is how many of the caller's tokens went
    .post("/batch", async ({ user, body }) => ok(await svc.deleteTokens(deps, user, (body as { ids?: unknown } | null)?.ids)), { role: ROLE.common })
    .delete("/:id", async ({ user, params }) => {
      await svc.deleteToken(deps, user, params.id);
      return ok(undefined, "token deleted");
    }, { role: ROLE.common, params: m.idParam });
}
