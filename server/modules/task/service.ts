// Read side of the drawing (Midjourney) and creative (Suno, video) task logs (spec 001 §2, §3, §7). Drawing
// times are milliseconds, creative task times seconds; pages start at 0 and the reply is a plain list, as the
// console loads more when it reaches the last loaded page. Rows go out field by field with fixed JSON types
// (numbers as numbers, text as strings, never null), so every database answers alike; private_data (who paid,
// the client's notifyHook) never leaves the server.
import { readerOf } from "../../infra/sqlite-reader.ts";
import type { AppDeps } from "../../deps.ts";
import type { Midjourney, Task } from "../../../db/schema.ts";
import { mjImageUrl } from "./links.ts";

export interface TaskQuery {
  page: number;
  size: number;
  userId?: number;
  channelId?: number;
  id?: string;
  start?: number;
  end?: number;
}

const num = (v: unknown) => Number(v ?? 0) || 0;
const str = (v: unknown) => (v === null || v === undefined ? "" : String(v));
function json(text: string | null | undefined): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A drawing task as the console gets it. Users see their own rows without the channel, an operator's detail. */
export function drawingView(deps: AppDeps, r: Midjourney, admin: boolean) {
  return {
    id: num(r.id),
    code: num(r.code),
    user_id: num(r.user_id),
    action: str(r.action),
    mj_id: str(r.mj_id),
    prompt: str(r.prompt),
    prompt_en: str(r.prompt_en),
    description: str(r.description),
    state: str(r.state),
    submit_time: num(r.submit_time),
    start_time: num(r.start_time),
    finish_time: num(r.finish_time),
    image_url: mjImageUrl(deps, str(r.mj_id), str(r.image_url)),
    status: str(r.status),
    progress: str(r.progress),
    fail_reason: str(r.fail_reason),
    channel_id: admin ? num(r.channel_id) : 0,
    quota: num(r.quota),
    buttons: str(r.buttons),
    properties: str(r.properties),
    created_at: num(r.created_at),
  };
}

/** A creative task as the console gets it: properties and data as JSON values (new-api's shape). */
export function taskView(r: Task, admin: boolean) {
  return {
    id: num(r.id),
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
    task_id: str(r.task_id),
    platform: str(r.platform),
    user_id: num(r.user_id),
    channel_id: admin ? num(r.channel_id) : 0,
    quota: num(r.quota),
    action: str(r.action),
    status: str(r.status),
    fail_reason: str(r.fail_reason),
    submit_time: num(r.submit_time),
    start_time: num(r.start_time),
    finish_time: num(r.finish_time),
    progress: str(r.progress),
    properties: json(r.properties),
    data: json(r.data),
  };
}

/** The rows of `table` the query's filters select (both tables share the filtered columns). */
function filtered<T extends "midjourneys" | "tasks">(deps: AppDeps, table: T, q: TaskQuery) {
  let qb = readerOf(deps.db).selectFrom(table as "tasks");
  if (q.userId !== undefined) qb = qb.where("user_id", "=", q.userId);
  if (q.channelId) qb = qb.where("channel_id", "=", q.channelId);
  if (q.id) qb = table === "tasks" ? qb.where("task_id", "=", q.id) : (qb as any).where("mj_id", "=", q.id);
  if (q.start) qb = qb.where("submit_time", ">=", q.start);
  if (q.end) qb = qb.where("submit_time", "<=", q.end);
  return qb;
}

/** How many rows the query's filters select, over all pages (new-api's consoles show the total). */
export async function countTasks(deps: AppDeps, table: "midjourneys" | "tasks", q: TaskQuery): Promise<number> {
  const row = await filtered(deps, table, q)
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

export async function listDrawings(
  deps: AppDeps,
  q: TaskQuery,
  admin: boolean,
): Promise<ReturnType<typeof drawingView>[]> {
  const rows = (await (filtered(deps, "midjourneys", q) as any)
    .selectAll()
    .orderBy("id", "desc")
    .limit(q.size)
    .offset(q.page * q.size)
    .execute()) as Midjourney[];
  return rows.map((r) => drawingView(deps, r, admin));
}

export async function listTasks(deps: AppDeps, q: TaskQuery, admin: boolean): Promise<ReturnType<typeof taskView>[]> {
  const rows = await filtered(deps, "tasks", q)
    .selectAll()
    .orderBy("id", "desc")
    .limit(q.size)
    .offset(q.page * q.size)
    .execute();
  return rows.map((r) => taskView(r, admin));
}
