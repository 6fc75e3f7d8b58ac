// Dashboard data from quota_data: quota, tokens and requests per model per time bucket (hour, day, week).
// The relay writes hourly rows; this groups them into the granularity asked for, in the server's time zone.
import { readerOf } from "../../infra/sqlite-reader.ts";
import type { AppDeps } from "../../deps.ts";
import { nowSeconds } from "../../../db/index.ts";
import { badRequest } from "../../http/errors.ts";
import { sql } from "kysely";
import {
  LOG_TYPE,
  DASHBOARD_GRANULARITIES,
  DASHBOARD_SELF_MAX_SPAN_SECONDS,
  type DashboardGranularity,
} from "../../catalogue/index.ts";

export interface DashboardQuery {
  start?: number;
  end?: number;
  username?: string;
  granularity?: string;
}

export interface DashboardRow {
  model_name: string;
  created_at: number;
  token_used: number;
  count: number;
  quota: number;
}

const DAY = 86_400;
const DEFAULT_SPAN: Record<DashboardGranularity, number> = { hour: DAY, day: 7 * DAY, week: 28 * DAY };

/** Start of the bucket holding `sec`, in local time (process TZ comes from the TZ setting). */
export function bucketStart(sec: number, g: DashboardGranularity): number {
  if (g === "hour") return Math.floor(sec / 3600) * 3600;
  const d = new Date(sec * 1000);
  const day = new Date(d.getFullYear(), d.getMonth(), d.getDate());
  if (g === "week") day.setDate(day.getDate() - ((day.getDay() + 6) % 7)); // weeks start on Monday
  return Math.floor(day.getTime() / 1000);
}

function granularity(deps: AppDeps, raw: string | undefined): DashboardGranularity {
  const g = raw || deps.options.get("DataExportDefaultTime") || "hour";
  if (!(DASHBOARD_GRANULARITIES as readonly string[]).includes(g))
    throw badRequest("granularity must be hour, day or week");
  return g as DashboardGranularity;
}

export async function quotaData(deps: AppDeps, q: DashboardQuery, self: { userId: number } | null) {
  // While DataExportEnabled is off nothing new is recorded, but what was is still answered: new-api answers
  // these calls either way, and its dashboard throws on a refusal.
  const g = granularity(deps, q.granularity);
  const end = q.end ?? nowSeconds();
  const start = q.start ?? end - DEFAULT_SPAN[g];
  if (start > end) throw badRequest("start_timestamp must not be after end_timestamp");
  if (self && end - start > DASHBOARD_SELF_MAX_SPAN_SECONDS) throw badRequest("the time span cannot exceed one month");

  let qb = readerOf(deps.db).selectFrom("quota_data").where("created_at", ">=", start).where("created_at", "<=", end);
  if (self) qb = qb.where("user_id", "=", self.userId);
  else if (q.username) qb = qb.where("username", "=", q.username);
  const rows = await qb
    .select((eb) => [
      "model_name",
      "created_at",
      eb.fn.sum<number>("token_used").as("token_used"),
      eb.fn.sum<number>("count").as("count"),
      eb.fn.sum<number>("quota").as("quota"),
    ])
    .groupBy(["model_name", "created_at"])
    .execute();

  const buckets = new Map<string, DashboardRow>();
  for (const r of rows) {
    const at = bucketStart(Number(r.created_at), g);
    const key = `${r.model_name}\u0000${at}`;
    const b = buckets.get(key) ?? { model_name: r.model_name, created_at: at, token_used: 0, count: 0, quota: 0 };
    b.token_used += Number(r.token_used);
    b.count += Number(r.count);
    b.quota += Number(r.quota);
    buckets.set(key, b);
  }
  return [...buckets.values()].sort((a, b) => a.created_at - b.created_at || a.model_name.localeCompare(b.model_name));
}

/** GET /api/data/users (new-api's user analytics): usage per user and hour, every model summed. */
export async function quotaDataByUser(deps: AppDeps, q: DashboardQuery) {
  const end = q.end ?? nowSeconds();
  const start = q.start ?? end - DEFAULT_SPAN[granularity(deps, q.granularity)];
  if (start > end) throw badRequest("start_timestamp must not be after end_timestamp");
  const rows = await readerOf(deps.db)
    .selectFrom("quota_data")
    .where("created_at", ">=", start)
    .where("created_at", "<=", end)
    .select((eb) => [
      "username",
      "created_at",
      eb.fn.sum<number>("token_used").as("token_used"),
      eb.fn.sum<number>("count").as("count"),
      eb.fn.sum<number>("quota").as("quota"),
    ])
    .groupBy(["username", "created_at"])
    .orderBy("created_at")
    .orderBy("username")
    .execute();
  return rows.map((r) => ({
    username: r.username,
    created_at: Number(r.created_at),
    token_used: Number(r.token_used),
    count: Number(r.count),
    quota: Number(r.quota),
  }));
}

/** The longest span the per-token analytics read at once (new-api's: 90 days for admins, 30 for a user). */
export const TOKEN_DATA_MAX_SPAN_SECONDS = { admin: 90 * 86400, self: 30 * 86400 } as const;

/**
 * GET /api/data/tokens and /api/data/self/tokens (new-api's token analytics): consumption per token, model and
 * hour, summed from the consume logs, in new-api's row shape. The range is required, as new-api requires it.
 */
export async function quotaDataByToken(
  deps: AppDeps,
  q: DashboardQuery & { tokenName?: string },
  self: { userId: number } | null,
) {
  const { start, end } = q;
  if (!start || !end || start <= 0 || end < start)
    throw badRequest("start_timestamp and end_timestamp are required, start before end");
  if (end - start > TOKEN_DATA_MAX_SPAN_SECONDS[self ? "self" : "admin"])
    throw badRequest(`the time span cannot exceed ${self ? 30 : 90} days`);
  let qb = readerOf(deps.db)
    .selectFrom("logs")
    .where("type", "=", LOG_TYPE.consume)
    .where("created_at", ">=", start)
    .where("created_at", "<=", end);
  if (self) qb = qb.where("user_id", "=", self.userId);
  else if (q.username) qb = qb.where("username", "=", q.username);
  if (q.tokenName) qb = qb.where("token_name", "=", q.tokenName);
  const hour = sql<number>`created_at - created_at % 3600`;
  const rows = await qb
    .select((eb) => [
      "user_id",
      "username",
      "token_id",
      "token_name",
      "model_name",
      hour.as("hour"),
      eb.fn.countAll<number>().as("count"),
      eb.fn.sum<number>("quota").as("quota"),
      eb.fn.sum<number>(eb("prompt_tokens", "+", eb.ref("completion_tokens"))).as("token_used"),
    ])
    .groupBy(["user_id", "username", "token_id", "token_name", "model_name", hour])
    .execute();
  return rows
    .map((r) => ({
      user_id: Number(r.user_id),
      username: r.username,
      token_id: Number(r.token_id),
      token_name: r.token_name,
      model_name: r.model_name,
      created_at: Number(r.hour),
      token_used: Number(r.token_used),
      count: Number(r.count),
      quota: Number(r.quota),
    }))
    .sort((a, b) => a.created_at - b.created_at || a.token_id - b.token_id || a.model_name.localeCompare(b.model_name));
}
