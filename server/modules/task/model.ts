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

/**
 * One page of drawings or tasks, newest first: an array (the console asks for the next page until one comes back
 * short), or for new-api's consoles (Cache-Control: no-store) new-api's page {page, page_size, total, items}.
 */
export const taskList = envelope(
  t.Union([
    t.Array(t.Any()),
    t.Object({ page: t.Integer(), page_size: t.Integer(), total: t.Integer(), items: t.Array(t.Any()) }),
  ]),
  "one page, newest first",
);
