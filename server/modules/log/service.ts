// Usage logs: the admin and self lists with filters, the {quota, rpm, tpm} stats and clearing old rows.
// Lists sort newest first by (created_at, id) so that every filter can walk an index on
// (<filter column>, created_at) backwards and stop after one page (see db/migrations/tables.ts).
import type { Expression, ExpressionBuilder, SelectQueryBuilder, SqlBool } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { DB, Log } from "../../../db/schema.ts";
import { nowSeconds } from "../../../db/index.ts";
import { readerOf } from "../../infra/sqlite-reader.ts";
import { writeOffLoop } from "../../infra/statement-worker.ts";
import { badRequest } from "../../http/errors.ts";
import { LOG_RATE_WINDOW_SECONDS, LOG_TYPE } from "../../catalogue/index.ts";

export interface LogFilter {
  type?: number;
  userId?: number;
  username?: string;
  tokenName?: string;
  modelName?: string;
  start?: number;
  end?: number;
  channel?: number;
  group?: string;
  requestId?: string;
  upstreamRequestId?: string;
}

export interface LogPage {
  page: number;
  size: number;
  offset: number;
}

type Query<O> = SelectQueryBuilder<DB, "logs", O>;

/** Filters that are not about time; shared by the list, the quota sum and the 60-second rates. */
function applyFilters<O>(qb: Query<O>, f: LogFilter, withType: boolean): Query<O> {
  if (withType && f.type !== undefined && f.type !== LOG_TYPE.unknown) qb = qb.where("type", "=", f.type);
  if (f.userId !== undefined) qb = qb.where("user_id", "=", f.userId);
  if (f.username) qb = qb.where("username", "=", f.username);
  if (f.tokenName) qb = qb.where("token_name", "=", f.tokenName);
  if (f.modelName) qb = qb.where("model_name", "=", f.modelName);
  if (f.channel) qb = qb.where("channel_id", "=", f.channel);
  if (f.group) qb = qb.where("group", "=", f.group);
  if (f.requestId) qb = qb.where("request_id", "=", f.requestId);
  if (f.upstreamRequestId) qb = qb.where("upstream_request_id", "=", f.upstreamRequestId);
  return qb;
}

function applyTime<O>(qb: Query<O>, f: LogFilter): Query<O> {
  if (f.start) qb = qb.where("created_at", ">=", f.start);
  if (f.end) qb = qb.where("created_at", "<=", f.end);
  return qb;
}

function parseOther(raw: string): Record<string, unknown> | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(raw);
    return v && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

/** The wire shape of a log row (new-api names: channel, channel_name). */
export function logView(row: Log, channelName: string, admin: boolean) {
  const { channel_id, is_stream, ...rest } = row;
  let other = row.other;
  if (!admin) {
    const o = parseOther(other);
    if (o && "admin_info" in o) {
      delete o.admin_info;
      other = JSON.stringify(o);
    }
  }
  return {
    ...rest,
    is_stream: Boolean(is_stream),
    other,
    channel: admin ? channel_id : 0,
    channel_name: admin ? channelName : "",
    request_id: row.request_id ?? "",
    upstream_request_id: row.upstream_request_id ?? "",
  };
}

export async function listLogs(deps: AppDeps, f: LogFilter, page: LogPage, admin: boolean) {
  // The page's total counts every matching row: on SQLite it runs off the event loop (infra/sqlite-reader.ts).
  const base = applyTime(applyFilters(readerOf(deps.db).selectFrom("logs"), f, true), f);
  const [countRow, rows] = await Promise.all([
    base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirst(),
    base.selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(page.size).offset(page.offset).execute(),
  ]);
  const names = new Map<number, string>();
  if (admin) {
    const ids = [...new Set(rows.map((r) => r.channel_id).filter((id) => id > 0))];
    if (ids.length) {
      for (const c of await deps.db.selectFrom("channels").select(["id", "name"]).where("id", "in", ids).execute())
        names.set(c.id, c.name);
    }
  }
  return {
    items: rows.map((r) => logView(r, names.get(r.channel_id) ?? "", admin)),
    page: page.page,
    page_size: page.size,
    total: Number(countRow?.n ?? 0),
  };
}

/**
 * quota: consumption summed over the filters and time range. rpm/tpm: consumption requests and tokens in
 * the last 60 seconds under the same non-time filters, as one-api computes them.
 */
export async function logStat(deps: AppDeps, f: LogFilter, now = nowSeconds()) {
  const consume = { ...f, type: LOG_TYPE.consume };
  const reader = readerOf(deps.db);
  const quotaQ = applyTime(applyFilters(reader.selectFrom("logs"), consume, true), f).select((eb) =>
    eb.fn.coalesce(eb.fn.sum<number>("quota"), eb.lit(0)).as("quota"),
  );
  const rateQ = applyFilters(reader.selectFrom("logs"), consume, true)
    .where("created_at", ">=", now - LOG_RATE_WINDOW_SECONDS)
    .select((eb) => [
      eb.fn.countAll<number>().as("rpm"),
      eb.fn.coalesce(eb.fn.sum<number>(eb("prompt_tokens", "+", eb.ref("completion_tokens"))), eb.lit(0)).as("tpm"),
    ]);
  const [q, r] = await Promise.all([quotaQ.executeTakeFirst(), rateQ.executeTakeFirst()]);
  return { quota: Number(q?.quota ?? 0), rpm: Number(r?.rpm ?? 0), tpm: Number(r?.tpm ?? 0) };
}

const DELETE_BATCH = 5000;

/** Deletes logs created before `target` (unix seconds) in batches, so a huge table is not locked at once. */
export async function deleteLogsBefore(deps: AppDeps, target: number | undefined): Promise<number> {
  if (target === undefined || target <= 0) throw badRequest("target_timestamp is required");
  let removed = 0;
  for (;;) {
    const batch = await deleteLogBatch(deps, (eb) => eb("created_at", "<", target), DELETE_BATCH);
    removed += batch.deleted;
    if (batch.found < DELETE_BATCH) break;
  }
  return removed;
}

/** Which logs a batch delete takes. */
export type LogCondition = (eb: ExpressionBuilder<DB, "logs">) => Expression<SqlBool>;

/**
 * Deletes the oldest `limit` logs (by id) that `where` picks; answers how many it found and how many went. The
 * batch is found as its size and last id (the rows `where` picks up to that id are the batch: ids only grow), so
 * neither the read nor the delete carries thousands of ids. On SQLite the read runs on the reader thread and the
 * delete on the write worker (hot-path rule 2): on the event loop a batch of 5,000 (each row with its seven index
 * entries) would hold every relay call for tens of milliseconds, and a large delete's batches run back to back.
 * There the count is the batch's (this process is SQLite's only writer).
 */
export async function deleteLogBatch(
  deps: AppDeps,
  where: LogCondition,
  limit: number,
): Promise<{ found: number; deleted: number }> {
  const reader = readerOf(deps.db);
  const batch = await reader
    .selectFrom(reader.selectFrom("logs").select("id").where(where).orderBy("id").limit(limit).as("batch"))
    .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.max<number>("id").as("last")])
    .executeTakeFirst();
  const found = Number(batch?.n ?? 0);
  if (found === 0 || batch?.last == null) return { found: 0, deleted: 0 };
  const done = await writeOffLoop(
    deps.db,
    deps.db.deleteFrom("logs").where(where).where("id", "<=", Number(batch.last)),
  );
  return { found, deleted: done ? Number(done[0]?.numDeletedRows ?? 0) : found };
}
