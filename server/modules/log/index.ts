import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok, paging } from "../../http/envelope.ts";
import { MAX_PAGE_SIZE, ROLE } from "../../catalogue/index.ts";
import { listLogs, logStat, deleteLogsBefore, type LogFilter } from "./service.ts";
import { optInt, optStr } from "./query.ts";

type Q = Record<string, string | undefined>;
import * as m from "./model.ts";
import { okReply } from "../../http/schema.ts";

const DEPRECATED = "this endpoint is retired: filter GET /api/log/ (or /api/log/self) instead";

/** Filters as the console sends them; username and channel only count for admins. */
function filterFrom(q: Q, admin: boolean): LogFilter {
  const f: LogFilter = {
    type: optInt(q, "type"),
    tokenName: optStr(q, "token_name"),
    modelName: optStr(q, "model_name"),
    start: optInt(q, "start_timestamp"),
    end: optInt(q, "end_timestamp"),
    group: optStr(q, "group"),
    requestId: optStr(q, "request_id"),
    upstreamRequestId: optStr(q, "upstream_request_id"),
  };
  if (admin) {
    f.username = optStr(q, "username");
    f.channel = optInt(q, "channel");
  }
  return f;
}

export function logModule(deps: AppDeps) {
  return (
    new Elysia({ prefix: "/api/log", tags: ["log"] })
      .use(authPlugin(deps))
      .get(
        "/",
        async ({ query }) => ok(await listLogs(deps, filterFrom(query, true), paging(query, 10, MAX_PAGE_SIZE), true)),
        {
          role: ROLE.admin,
          query: m.logQuery,
          detail: { summary: "Usage logs of every user (one page)" },
          response: m.logPage,
        },
      )
      // retired in new-api (its consoles filter GET /api/log/ instead); answered as new-api answers them
      .get("/search", () => ({ success: false, message: DEPRECATED }), {
        role: ROLE.admin,
        detail: { summary: "Retired (new-api): filter GET /api/log/ instead" },
        response: okReply,
      })
      .get("/self/search", () => ({ success: false, message: DEPRECATED }), {
        role: ROLE.common,
        detail: { summary: "Retired (new-api): filter GET /api/log/self instead" },
        response: okReply,
      })
      .get(
        "/self",
        async ({ query, user }) =>
          ok(
            await listLogs(
              deps,
              { ...filterFrom(query, false), userId: user.id },
              paging(query, 10, MAX_PAGE_SIZE),
              false,
            ),
          ),
        {
          role: ROLE.common,
          query: m.logQuery,
          detail: { summary: "The caller's usage logs (one page)" },
          response: m.logPage,
        },
      )
      .get("/stat", async ({ query }) => ok(await logStat(deps, filterFrom(query, true))), {
        role: ROLE.admin,
        query: m.logQuery,
        detail: { summary: "Totals of the filtered logs (quota, rpm, tpm)" },
        response: m.statReply,
      })
      .get(
        "/self/stat",
        async ({ query, user }) => ok(await logStat(deps, { ...filterFrom(query, false), userId: user.id })),
        {
          role: ROLE.common,
          query: m.logQuery,
          detail: { summary: "Totals of the caller's filtered logs" },
          response: m.statReply,
        },
      )
      .delete(
        "/",
        async ({ query }) => ok(await deleteLogsBefore(deps, optInt(query, "target_timestamp")), "logs deleted"),
        {
          role: ROLE.admin,
          query: m.deleteQuery,
          detail: { summary: "Delete logs older than a time" },
          response: m.deletedReply,
        },
      )
  );
}
