// Dashboard data from quota_data: quota, tokens and requests per model per time bucket (hour, day, week).
// The relay writes hourly rows; this groups them into the granularity asked for, in the server's time zone.
import { readerOf } from "../../infra/sqlite-reader.ts";
import type { AppDeps } from "../../deps.ts";
import { nowSeconds } from "../../../db/index.ts";
import { badRequest } from "../../http/errors.ts";
import { DASHBOARD_GRANULARITIES, DASHBOARD_SELF_MAX_SPAN_SECONDS, type DashboardGranularity } from "../../catalogue/index.ts";

export interface DashboardQuery {
  start?: number;
  end?: number;
  username?: string;
  granularity?: string;
}

export interface DashboardRow { model_name: string; created_at: number; token_used: number; count: number; quota: number }

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
  if (!(DASHBOARD_GRANULARITIES as readonly string[]).includes(g)) throw badRequest("granularity must be hour, day or week");
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
  const rows = await qb.select((eb) => [
    "model_name", "created_at",
    eb.fn.sum<number>("token_used").as("token_used"), eb.fn.sum<number>("count").as("count"), eb.fn.sum<number>("quota").as("quota"),
  ]).groupBy(["model_name", "created_at"]).execute();

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
  const rows = await readerOf(deps.db).selectFrom("quota_data").where("created_at", ">=", start).where("created_at", "<=", end)
    .select((eb) => [
      "username", "created_at",
      eb.fn.sum<number>("token_used").as("token_used"), eb.fn.sum<number>("count").as("count"), eb.fn.sum<number>("quota").as("quota"),
    ]).groupBy(["username", "created_at"]).orderBy("created_at").orderBy("username").execute();
  return rows.map((r) => ({ username: r.username, created_at: Number(r.created_at), token_used: Number(r.token_used), count: Number(r.count), quota: Number(r.quota) }));
}
