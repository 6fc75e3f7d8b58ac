import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { badRequest } from "../../http/errors.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ROLE } from "../../catalogue/index.ts";
import { optInt, optStr } from "../log/query.ts";
import { countTasks, listDrawings, listTasks, type TaskQuery } from "./service.ts";
import { taskList, taskQuery } from "./model.ts";
import { fromNewApiConsole } from "../../http/newapi-console.ts";

type Q = Record<string, string | undefined>;

/** Page index from 0 (?p=; from 1 for new-api's consoles, which read {items, total}: they page from 1), size from ?page_size= (default 10, at most 100). */
function parse(q: Q, idName: "mj_id" | "task_id", admin: boolean, newApi = false): TaskQuery {
  const p = optInt(q, "p");
  const page = newApi ? Math.max(p ?? 1, 1) - 1 : (p ?? 0);
  if (page < 0) throw badRequest("invalid parameter p: pages start at 0");
  const size = Math.min(Math.max(optInt(q, "page_size") ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
  return {
    page,
    size,
    channelId: admin ? optInt(q, "channel_id") : undefined,
    id: optStr(q, idName),
    start: optInt(q, "start_timestamp"),
    end: optInt(q, "end_timestamp"),
  };
}

export function taskModule(deps: AppDeps) {
  async function list(request: Request, query: Q, table: "midjourneys" | "tasks", admin: boolean, userId?: number) {
    const newApi = fromNewApiConsole(request);
    const q = { ...parse(query, table === "tasks" ? "task_id" : "mj_id", admin, newApi), userId };
    const items = table === "tasks" ? await listTasks(deps, q, admin) : await listDrawings(deps, q, admin);
    if (!newApi) return ok(items);
    return ok({ page: q.page + 1, page_size: q.size, total: await countTasks(deps, table, q), items });
  }
  return new Elysia({ prefix: "/api", tags: ["task"] })
    .use(authPlugin(deps))
    .get("/mj/", ({ query, request }) => list(request, query, "midjourneys", true), {
      role: ROLE.admin,
      query: taskQuery,
      detail: { summary: "Midjourney drawings of every user" },
      response: taskList,
    })
    .get("/mj/self", ({ query, request, user }) => list(request, query, "midjourneys", false, user.id), {
      role: ROLE.common,
      query: taskQuery,
      detail: { summary: "The caller's Midjourney drawings" },
      response: taskList,
    })
    .get("/task/", ({ query, request }) => list(request, query, "tasks", true), {
      role: ROLE.admin,
      query: taskQuery,
      detail: { summary: "Tasks (Suno, video) of every user" },
      response: taskList,
    })
    .get("/task/self", ({ query, request, user }) => list(request, query, "tasks", false, user.id), {
      role: ROLE.common,
      query: taskQuery,
      detail: { summary: "The caller's tasks" },
      response: taskList,
    });
}
