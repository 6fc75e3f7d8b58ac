import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { ROLE } from "../../catalogue/index.ts";
import { optInt, optStr } from "../log/query.ts";
import { quotaData, quotaDataByToken, quotaDataByUser, type DashboardQuery } from "./service.ts";

import { dataQuery, dataReply, dataByUserReply, dataByTokenReply } from "./model.ts";

function parse(q: Record<string, string | undefined>): DashboardQuery {
  return {
    start: optInt(q, "start_timestamp"),
    end: optInt(q, "end_timestamp"),
    username: optStr(q, "username"),
    granularity: optStr(q, "granularity") ?? optStr(q, "default_time"),
  };
}

export function dashboardModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api/data", tags: ["dashboard"] })
    .use(authPlugin(deps))
    .get("/", async ({ query }) => ok(await quotaData(deps, parse(query), null)), {
      role: ROLE.admin,
      query: dataQuery,
      detail: { summary: "Quota usage over time, every user" },
      response: dataReply,
    })
    .get("/users", async ({ query }) => ok(await quotaDataByUser(deps, parse(query))), {
      role: ROLE.admin,
      query: dataQuery,
      detail: { summary: "Quota usage over time per user (new-api's user analytics)" },
      response: dataByUserReply,
    })
    .get(
      "/tokens",
      async ({ query }) =>
        ok(await quotaDataByToken(deps, { ...parse(query), tokenName: optStr(query, "token_name") }, null)),
      {
        role: ROLE.admin,
        query: dataQuery,
        detail: { summary: "Consumption per token, model and hour, every user (new-api's token analytics)" },
        response: dataByTokenReply,
      },
    )
    .get(
      "/self/tokens",
      async ({ query, user }) =>
        ok(
          await quotaDataByToken(
            deps,
            { ...parse(query), tokenName: optStr(query, "token_name") },
            { userId: user.id },
          ),
        ),
      {
        role: ROLE.common,
        query: dataQuery,
        detail: { summary: "The caller's consumption per token, model and hour" },
        response: dataByTokenReply,
      },
    )
    .get("/self", async ({ query, user }) => ok(await quotaData(deps, parse(query), { userId: user.id })), {
      role: ROLE.common,
      query: dataQuery,
      detail: { summary: "The caller's quota usage over time" },
      response: dataReply,
    });
}
