// Daily check-in (new-api's checkin_setting.* and table checkins): while checkin_setting.enabled is on, a user may
// check in once per calendar day (the server's time zone) and gets a random quota between min_quota and
// max_quota. The row, the credit and a system log are one transaction; the unique (user_id, checkin_date)
// index makes a second check-in the same day fail on every database, however many arrive at once.
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";
import { nowSeconds } from "../../../db/index.ts";
import { badRequest, forbidden } from "../../http/errors.ts";
import { LOG_TYPE, formatQuota } from "../../catalogue/index.ts";
import { writeLog } from "../log/write.ts";

export const MSG = {
  disabled: "check-in is not enabled",
  already: "you have already checked in today",
  badMonth: "month must be YYYY-MM",
} as const;

/** YYYY-MM-DD of `at` in the server's time zone. */
export function localDate(at = new Date()): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${at.getFullYear()}-${p(at.getMonth() + 1)}-${p(at.getDate())}`;
}

/** The award range, ordered and never negative (an admin saving min > max is not an error). */
export function quotaRange(deps: AppDeps): [number, number] {
  const a = Math.max(0, Math.floor(deps.options.number("checkin_setting.min_quota", 1000)));
  const b = Math.max(0, Math.floor(deps.options.number("checkin_setting.max_quota", 10000)));
  return a <= b ? [a, b] : [b, a];
}

function requireEnabled(deps: AppDeps) {
  if (!deps.options.bool("checkin_setting.enabled")) throw forbidden(MSG.disabled);
}

export async function checkinStatus(deps: AppDeps, userId: number, month?: string) {
  requireEnabled(deps);
  const m = month ?? localDate().slice(0, 7);
  if (!/^\d{4}-\d{2}$/.test(m)) throw badRequest(MSG.badMonth);
  const records = await deps.db
    .selectFrom("checkins")
    .select(["checkin_date", "quota_awarded"])
    .where("user_id", "=", userId)
    .where("checkin_date", ">=", `${m}-01`)
    .where("checkin_date", "<=", `${m}-31`)
    .orderBy("checkin_date", "desc")
    .execute();
  const [totals] = await deps.db
    .selectFrom("checkins")
    .where("user_id", "=", userId)
    .select((eb) => [eb.fn.countAll<number>().as("n"), sql<number>`coalesce(sum(quota_awarded), 0)`.as("q")])
    .execute();
  const today = await deps.db
    .selectFrom("checkins")
    .select("id")
    .where("user_id", "=", userId)
    .where("checkin_date", "=", localDate())
    .executeTakeFirst();
  const [min, max] = quotaRange(deps);
  return {
    enabled: true,
    min_quota: min,
    max_quota: max,
    stats: {
      total_quota: Number(totals?.q ?? 0),
      total_checkins: Number(totals?.n ?? 0),
      checkin_count: records.length,
      checked_in_today: !!today,
      records: records.map((r) => ({ checkin_date: String(r.checkin_date), quota_awarded: Number(r.quota_awarded) })),
    },
  };
}

export async function checkIn(
  deps: AppDeps,
  user: { id: number; username: string },
  random: () => number = Math.random,
) {
  requireEnabled(deps);
  const [min, max] = quotaRange(deps);
  const award = min + Math.floor(random() * (max - min + 1));
  const date = localDate();
  try {
    await deps.db.transaction().execute(async (trx) => {
      await trx
        .insertInto("checkins")
        .values({ user_id: user.id, checkin_date: date, quota_awarded: award, created_at: nowSeconds() })
        .execute();
      await trx
        .updateTable("users")
        .set({ quota: sql`quota + ${award}` })
        .where("id", "=", user.id)
        .execute();
      await writeLog(trx, {
        user_id: user.id,
        username: user.username,
        type: LOG_TYPE.system,
        quota: award,
        content: `daily check-in: quota added ${formatQuota(award)}`,
        other: JSON.stringify({ checkin_date: date }),
      });
    });
  } catch (e) {
    // The unique (user_id, checkin_date) index: this user already has today's row.
    const taken = await deps.db
      .selectFrom("checkins")
      .select("id")
      .where("user_id", "=", user.id)
      .where("checkin_date", "=", date)
      .executeTakeFirst();
    if (taken) throw badRequest(MSG.already);
    throw e;
  }
  return { quota_awarded: award, checkin_date: date };
}
