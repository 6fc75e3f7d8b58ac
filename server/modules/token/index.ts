import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { badRequest } from "../../http/errors.ts";
import { ok, paging } from "../../http/envelope.ts";
import { ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import * as m from "./model.ts";
import { envelope, okReply } from "../../http/schema.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import { fromNewApiConsole } from "../../http/newapi-console.ts";
import { t } from "elysia";

export function tokenModule(deps: AppDeps) {
  return (
    new Elysia({ prefix: "/api/token", tags: ["token"] })
      .use(authPlugin(deps))
      .get(
        "/",
        async ({ user, query, request }) =>
          ok(await svc.listTokens(deps, user, { ...paging(query), masked: fromNewApiConsole(request) })),
        {
          role: ROLE.common,
          query: m.listQuery,
          detail: { summary: "The caller's tokens (one page)" },
          response: m.tokenPage,
        },
      )
      .get(
        "/search",
        async ({ user, query, request }) =>
          ok(
            await svc.listTokens(deps, user, {
              ...paging(query),
              keyword: query.keyword,
              token: query.token,
              masked: fromNewApiConsole(request),
            }),
          ),
        {
          role: ROLE.common,
          query: m.listQuery,
          detail: { summary: "Search the caller's tokens by name or key" },
          response: m.tokenPage,
        },
      )
      .get(
        "/:id",
        async ({ user, params, request }) =>
          ok(svc.tokenView(await svc.shownToken(deps, user, params.id), fromNewApiConsole(request))),
        {
          role: ROLE.common,
          params: m.idParam,
          detail: { summary: "One of the caller's tokens" },
          response: m.tokenReply,
        },
      )
      // new-api's consoles fetch a key on demand (copy, chat links) and add the sk- prefix themselves. The owner
      // sees the key in the list already, so this asks for no more than the list does.
      .post(
        "/:id/key",
        async ({ user, params, request, server, set }) => {
          await enforceLimit(deps, "critical", clientIp(request, server as any, deps.config.trustProxy));
          set.headers["cache-control"] = "no-store";
          return ok({ key: (await svc.shownToken(deps, user, params.id)).key });
        },
        {
          role: ROLE.common,
          params: m.idParam,
          detail: { summary: "One of the caller's token keys, without the sk- prefix (new-api's consoles)" },
          response: envelope(t.Object({ key: t.String({ description: "the key without its sk- prefix" }) })),
        },
      )
      .post(
        "/batch/keys",
        async ({ user, body, request, server, set }) => {
          await enforceLimit(deps, "critical", clientIp(request, server as any, deps.config.trustProxy));
          set.headers["cache-control"] = "no-store";
          return ok({ keys: await svc.tokenKeys(deps, user, body?.ids) });
        },
        {
          role: ROLE.common,
          body: m.batchBody,
          detail: { summary: "Several of the caller's token keys, without the sk- prefix (new-api's consoles)" },
          response: envelope(
            t.Object({ keys: t.Record(t.String(), t.String(), { description: "token id → key without sk-" }) }),
          ),
        },
      )
      .post("/", async ({ user, body }) => ok(await svc.createTokens(deps, user, body), "token created"), {
        role: ROLE.common,
        body: m.tokenBody,
        detail: { summary: "Create tokens (count for several)" },
        response: m.tokensReply,
      })
      .put(
        "/",
        async ({ user, body, query }) => {
          if (body.id === undefined) throw badRequest("id is required");
          const statusOnly = query.status_only === "true" || query.status_only === "1";
          return ok(await svc.updateToken(deps, user, body.id, body, statusOnly));
        },
        {
          role: ROLE.common,
          body: m.tokenBody,
          query: m.updateQuery,
          detail: { summary: "Update a token (or only its status)" },
          response: m.tokenReply,
        },
      )
      // new-api's batch delete: {ids}; data is how many of the caller's tokens went
      .post("/batch", async ({ user, body }) => ok(await svc.deleteTokens(deps, user, body?.ids)), {
        role: ROLE.common,
        body: m.batchBody,
        detail: { summary: "Delete several of the caller's tokens" },
        response: m.countReply,
      })
      .delete(
        "/:id",
        async ({ user, params }) => {
          await svc.deleteToken(deps, user, params.id);
          return ok(undefined, "token deleted");
        },
        { role: ROLE.common, params: m.idParam, detail: { summary: "Delete a token" }, response: okReply },
      )
  );
}
