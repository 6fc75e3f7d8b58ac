import { t } from "elysia";
import { envelope, loose } from "../../http/schema.ts";
import { str, timeRange } from "../log/model.ts";

/** GET /api/mj/, /api/task/ (and their /self): pages from 0. */
export const taskQuery = loose({
  p: str("page, from 0"),
  page_size: str("rows per page (at most 100)"),
  channel_id: str("channel id (admins)"),
  mj_id: str("Midjourney task id (drawings)"),
  task_id: str("task id (tasks)"),
  ...timeRange,
});

/** One page of drawings or tasks (an array; the console asks for the next page until one comes back short). */
export const taskList = envelope(t.Array(t.Any()), "one page, newest first");
