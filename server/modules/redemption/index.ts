import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok, paging } from "../../http/envelope.ts";
import { ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import * as m from "./model.ts";
import { okReply } from "../../http/schema.ts";

export function redemptionModule(deps: AppDeps) {
  return (
    new Elysia({ prefix: "/api", tags: ["redemption"] })
      .use(authPlugin(deps))
      .get("/redemption/", async ({ query }) => ok(await svc.listRedemptions(deps, paging(query))), {
        role: ROLE.admin,
        query: m.listQuery,
        detail: { summary: "List redemption codes (one page)" },
        response: m.redemptionPage,
      })
      .get(
        "/redemption/search",
        async ({ query }) => ok(await svc.listRedemptions(deps, { ...paging(query), keyword: query.keyword })),
        {
          role: ROLE.admin,
          query: m.listQuery,
          detail: { summary: "Search redemption codes" },
          response: m.redemptionPage,
        },
      )
      .get("/redemption/:id", async ({ params }) => ok(svc.redemptionView(await svc.getRedemption(deps, params.id))), {
        role: ROLE.admin,
        params: m.idParam,
        detail: { summary: "One redemption code" },
        response: m.redemptionReply,
      })
      .post("/redemption/", async ({ user, body }) => ok(await svc.createRedemptions(deps, user.id, body)), {
        role: ROLE.admin,
        body: m.createBody,
        detail: { summary: "Create redemption codes" },
        response: m.keysReply,
      })
      .put(
        "/redemption/",
        async ({ body, query }) => {
          if (query.status_only === "true") {
            if (body.status === undefined) throw svc.statusRequired();
            return ok(svc.redemptionView(await svc.setRedemptionStatus(deps, body.id, body.status)));
          }
          return ok(svc.redemptionView(await svc.updateRedemption(deps, body)));
        },
        {
          role: ROLE.admin,
          body: m.updateBody,
          query: m.updateQuery,
          detail: { summary: "Update a redemption code (or only its status)" },
          response: m.redemptionReply,
        },
      )
      // new-api's clean-up: used, disabled and expired codes; data is how many were removed
      .delete("/redemption/invalid", async () => ok(await svc.deleteInvalidRedemptions(deps)), {
        role: ROLE.admin,
        detail: { summary: "Delete used, disabled and expired codes" },
        response: m.countReply,
      })
      .delete(
        "/redemption/:id",
        async ({ params }) => {
          await svc.deleteRedemption(deps, params.id);
          return ok(undefined, "deleted");
        },
        { role: ROLE.admin, params: m.idParam, detail: { summary: "Delete a redemption code" }, response: okReply },
      )
      .post("/user/topup", async ({ user, body }) => ok(await svc.redeem(deps, user, body.key), "redeemed"), {
        role: ROLE.common,
        body: m.redeemBody,
        detail: { summary: "Redeem a code into the caller's balance" },
        response: m.redeemReply,
      })
  );
}
