// Read side of the drawing (Midjourney) and creative (Suno) task logs (spec 001 §2, §3, §7). Drawing times
// are milliseconds, creative task times seconds; pages start at 0 and the reply is a plain list, as the
// console loads more when it reaches the last loaded page.
import type { AppDeps } from "../../deps.ts";
import type { Midjourney, Task } from "../../../db/schema.ts";

export interface TaskQuery {
  page: number;
  size: number;
  userId?: number;
  channelId?: number;
  id?: string;
  start?: number;
  end?: number;
}

/** Users see their own rows without the channel, which is an operator's detail. */
const hideChannel = <T extends { channel_id: number }>(row: T, admin: boolean): T => (admin ? row : { ...row, channel_id: 0 });

export async function listDrawings(deps: AppDeps, q: TaskQuery, admin: boolean): Promise<Midjourney[]> {
  let qb = deps.db.selectFrom("midjourneys").selectAll();
  if (q.userId !== undefined) qb = qb.where("user_id", "=", q.userId);
  if (q.channelId) qb = qb.where("channel_id", "=", q.channelId);
  if (q.id) qb = qb.where("mj_id", "=", q.id);
  if (q.start) qb = qb.where("submit_time", ">=", q.start);
  if (q.end) qb = qb.where("submit_time", "<=", q.end);
  const rows = await qb.orderBy("id", "desc").limit(q.size).offset(q.page * q.size).execute();
  return rows.map((r) => hideChannel(r, admin));
}

export async function listTasks(deps: AppDeps, q: TaskQuery, admin: boolean): Promise<Task[]> {
  let qb = deps.db.selectFrom("tasks").selectAll();
  if (q.userId !== undefined) qb = qb.where("user_id", "=", q.userId);
  if (q.channelId) qb = qb.where("channel_id", "=", q.channelId);
  if (q.id) qb = qb.where("task_id", "=", q.id);
  if (q.start) qb = qb.where("submit_time", ">=", q.start);
  if (q.end) qb = qb.where("submit_time", "<=", q.end);
  const rows = await qb.orderBy("id", "desc").limit(q.size).offset(q.page * q.size).execute();
  return rows.map((r) => hideChannel(r, admin));
}
