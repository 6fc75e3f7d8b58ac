import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { badRequest } from "../../http/errors.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ROLE } from "../../catalogue/index.ts";
import { optInt, optStr } from "../log/query.ts";
import { listDrawings, listTasks, type TaskQuery } from "./service.ts";

type Q = Record<string, string | undefined>;
import { taskList, taskQuery } from "./model.ts";

/** Page index from 0 (?p=), size from ?page_size= (default 10, at most 100). */
function parse(q: Q, idName: "mj_id" | "task_id", admin: boolean): TaskQuery {
  const page = optInt(q, "p") ?? 0;
  if (page < 0) throw badRequest("invalid parameter p: pages start at 0");
  const size = Math.min(Math.max(optInt(q, "page_size") ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
  return {
    page, size,
    channelId: admin ? optInt(q, "channel_id") : undefined,
    id: optStr(q, idName),
    start: optInt(q, "start_timestamp"),
    end: optInt(q, "end_timestamp"),
  };
}

export function taskModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api", tags: ["task"] })
    .use(authPlugin(deps))
    .get("/mj/", async ({ query }) => ok(await listDrawings(deps, parse(query, "mj_id", true), true)), { role: ROLE.admin, query: taskQuery, detail: { summary: "Midjourney drawings of every user" }, response: taskList })
    .get("/mj/self", async ({ query, user }) => ok(await listDrawings(deps, { ...parse(query, "mj_id", false), userId: user.id }, false)), {
      role: ROLE.common, query: taskQuery, detail: { summary: "The caller's Midjourney drawings" }, response: taskList,
    })
    .get("/task/", async ({ query }) => ok(await listTasks(deps, parse(query, "task_id", true), true)), { role: ROLE.admin, query: taskQuery, detail: { summary: "Tasks (Suno, video) of every user" }, response: taskList })
    .get("/task/self", async ({ query, user }) => ok(await listTasks(deps, { ...parse(query, "task_id", false), userId: user.id }, false)), {
      role: ROLE.common, query: taskQuery, detail: { summary: "The caller's tasks" }, response: taskList,
    });
}
