// Redemption codes: admin CRUD (spec 001 §4–§5, §7) and the one-time redeem that credits a user.
import { sql, type ExpressionBuilder } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { DB, Redemption } from "../../../db/schema.ts";
import { nowSeconds } from "../../../db/index.ts";
import { dbTime } from "../../../db/datetime.ts";
import { badRequest, notFound } from "../../http/errors.ts";
import {
  LOG_TYPE,
  REDEMPTION_KEY_LENGTH,
  REDEMPTION_MAX_BATCH,
  REDEMPTION_NAME_MAX_LENGTH,
  REDEMPTION_STATUS,
  formatQuota,
} from "../../catalogue/index.ts";
import { randomString } from "../../infra/random.ts";
import { writeLog } from "../log/write.ts";

export const MSG = {
  nameLength: `redemption code name length must be between 1 and ${REDEMPTION_NAME_MAX_LENGTH}`,
  countPositive: "redemption code count must be greater than 0",
  countMax: `at most ${REDEMPTION_MAX_BATCH} redemption codes per batch`,
  notFound: "redemption code not found",
  editUsed: "only unused redemption codes can be edited",
  statusUsed: "a used redemption code cannot be enabled or disabled",
  badStatus: "status must be 1 (enabled) or 2 (disabled)",
  keyEmpty: "enter redemption code",
  invalid: "invalid redemption code",
  disabled: "this redemption code has been disabled",
  used: "redemption code already used",
  expired: "this redemption code has expired",
  expiryInPast: "the expiry time must be in the future (0 for never)",
} as const;

export const statusRequired = () => badRequest("status is required with status_only=true");

export interface Page {
  page: number;
  size: number;
  offset: number;
  keyword?: string;
}

const live = () => (eb: ExpressionBuilder<DB, "redemptions">) => eb("deleted_at", "is", null);

/** The code as clients get it: new-api's fields, the same JSON types on every database. */
export function redemptionView(r: Redemption) {
  const n = (v: unknown) => Number(v ?? 0) || 0;
  return {
    id: n(r.id),
    user_id: n(r.user_id),
    key: String(r.key ?? ""),
    status: n(r.status),
    name: String(r.name ?? ""),
    quota: n(r.quota),
    created_time: n(r.created_time),
    redeemed_time: n(r.redeemed_time),
    used_user_id: n(r.used_user_id),
    expired_time: n(r.expired_time),
  };
}

/** new-api's expiry: unix seconds, 0 (or absent) never expires; a time already past is refused on save. */
function checkExpiry(v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < 0) throw badRequest(MSG.expiryInPast);
  if (v !== 0 && v <= nowSeconds()) throw badRequest(MSG.expiryInPast);
  return v;
}

const isExpired = (r: Pick<Redemption, "expired_time">, now = nowSeconds()) =>
  Number(r.expired_time ?? 0) !== 0 && Number(r.expired_time) < now;

export async function listRedemptions(deps: AppDeps, q: Page) {
  let base = deps.db.selectFrom("redemptions").where(live());
  const kw = q.keyword?.trim();
  if (kw) {
    base = base.where((eb) => {
      const ors = [eb("name", "like", `${kw}%`), eb("key", "=", kw)];
      if (/^\d+$/.test(kw)) ors.push(eb("id", "=", Number(kw)));
      return eb.or(ors);
    });
  }
  const [{ n }] = await base.select((eb) => eb.fn.countAll<number>().as("n")).execute();
  const items = await base.selectAll().orderBy("id", "desc").limit(q.size).offset(q.offset).execute();
  return { items: items.map(redemptionView), page: q.page, page_size: q.size, total: Number(n) };
}

export async function getRedemption(deps: AppDeps, id: number): Promise<Redemption> {
  const row = await deps.db.selectFrom("redemptions").selectAll().where("id", "=", id).where(live()).executeTakeFirst();
  if (!row) throw notFound(MSG.notFound);
  return row;
}

function checkName(name: string) {
  const len = [...name].length;
  if (len < 1 || len > REDEMPTION_NAME_MAX_LENGTH) throw badRequest(MSG.nameLength);
}

/** Creates `count` codes; returns their keys in creation order. All or none are stored. */
export async function createRedemptions(
  deps: AppDeps,
  creatorId: number,
  input: { name?: string; quota: number; count?: number; expired_time?: number },
): Promise<string[]> {
  const count = input.count ?? 1;
  if (count <= 0) throw badRequest(MSG.countPositive);
  if (count > REDEMPTION_MAX_BATCH) throw badRequest(MSG.countMax);
  const name = (input.name ?? "").trim() || formatQuota(input.quota);
  checkName(name);
  const expired_time = checkExpiry(input.expired_time) ?? 0;
  const now = nowSeconds();
  const keys = Array.from({ length: count }, () => randomString(REDEMPTION_KEY_LENGTH));
  await deps.db
    .insertInto("redemptions")
    .values(
      keys.map((key) => ({
        user_id: creatorId,
        key,
        name,
        quota: input.quota,
        status: REDEMPTION_STATUS.unused,
        created_time: now,
        expired_time,
      })),
    )
    .execute();
  return keys;
}

export async function updateRedemption(
  deps: AppDeps,
  input: { id: number; name?: string; quota?: number; expired_time?: number },
): Promise<Redemption> {
  const row = await getRedemption(deps, input.id);
  if (row.status !== REDEMPTION_STATUS.unused) throw badRequest(MSG.editUsed);
  const patch: { name?: string; quota?: number; expired_time?: number } = {};
  if (input.expired_time !== undefined && input.expired_time !== Number(row.expired_time ?? 0))
    patch.expired_time = checkExpiry(input.expired_time);
  if (input.name !== undefined) {
    patch.name = input.name.trim();
    checkName(patch.name);
  }
  if (input.quota !== undefined) patch.quota = input.quota;
  if (Object.keys(patch).length) {
    // Conditional on status so a code redeemed between the read and the write is not changed.
    const res = await deps.db
      .updateTable("redemptions")
      .set(patch)
      .where("id", "=", row.id)
      .where("status", "=", REDEMPTION_STATUS.unused)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) throw badRequest(MSG.editUsed);
  }
  return getRedemption(deps, row.id);
}

export async function setRedemptionStatus(deps: AppDeps, id: number, status: number): Promise<Redemption> {
  if (status !== REDEMPTION_STATUS.unused && status !== REDEMPTION_STATUS.disabled) throw badRequest(MSG.badStatus);
  const row = await getRedemption(deps, id);
  if (row.status === REDEMPTION_STATUS.used) throw badRequest(MSG.statusUsed);
  const res = await deps.db
    .updateTable("redemptions")
    .set({ status })
    .where("id", "=", id)
    .where("status", "!=", REDEMPTION_STATUS.used)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) throw badRequest(MSG.statusUsed);
  return getRedemption(deps, id);
}

/** DELETE /api/redemption/invalid (new-api): hides every used, disabled or expired code; answers how many. */
export async function deleteInvalidRedemptions(deps: AppDeps): Promise<number> {
  const now = nowSeconds();
  const res = await deps.db
    .updateTable("redemptions")
    .set({ deleted_at: dbTime(deps.db, Date.now()) })
    .where(live())
    .where((eb) =>
      eb.or([
        eb("status", "in", [REDEMPTION_STATUS.used, REDEMPTION_STATUS.disabled]),
        eb.and([eb("expired_time", "!=", 0), eb("expired_time", "<", now)]),
      ]),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

export async function deleteRedemption(deps: AppDeps, id: number): Promise<void> {
  const res = await deps.db
    .updateTable("redemptions")
    .set({ deleted_at: dbTime(deps.db, Date.now()) })
    .where("id", "=", id)
    .where(live())
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) throw notFound(MSG.notFound);
}

/**
 * Redeems a code for a user and returns the quota added. The code's status moves 1 → 3 in one conditional
 * UPDATE inside the same transaction as the credit and the log, so of any number of concurrent attempts
 * exactly one succeeds and a failed credit leaves the code unused.
 */
export async function redeem(
  deps: AppDeps,
  user: { id: number; username: string },
  rawKey: string | undefined,
): Promise<number> {
  const key = (rawKey ?? "").trim();
  if (!key) throw badRequest(MSG.keyEmpty);
  const code = await deps.db
    .selectFrom("redemptions")
    .selectAll()
    .where("key", "=", key)
    .where(live())
    .executeTakeFirst();
  if (!code) throw badRequest(MSG.invalid);
  if (code.status === REDEMPTION_STATUS.disabled) throw badRequest(MSG.disabled);
  if (code.status !== REDEMPTION_STATUS.unused) throw badRequest(MSG.used);
  if (isExpired(code)) throw badRequest(MSG.expired);
  const claimed = await deps.db.transaction().execute(async (trx) => {
    const res = await trx
      .updateTable("redemptions")
      .set({ status: REDEMPTION_STATUS.used, redeemed_time: nowSeconds(), used_user_id: user.id })
      .where("id", "=", code.id)
      .where("status", "=", REDEMPTION_STATUS.unused)
      .where("deleted_at", "is", null)
      .where((eb) => eb.or([eb("expired_time", "=", 0), eb("expired_time", ">=", nowSeconds())]))
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    await trx
      .updateTable("users")
      .set({ quota: sql`quota + ${code.quota}` })
      .where("id", "=", user.id)
      .execute();
    await writeLog(trx, {
      user_id: user.id,
      username: user.username,
      type: LOG_TYPE.topup,
      content: `redeemed a code: quota added ${formatQuota(code.quota)}, code id ${code.id}`,
      quota: code.quota,
      // The console words the details from this in the reader's language; content stays as one-api's.
      other: JSON.stringify({ redemption_id: code.id }),
    });
    return true;
  });
  if (!claimed) {
    const now = await deps.db.selectFrom("redemptions").select("status").where("id", "=", code.id).executeTakeFirst();
    throw badRequest(now?.status === REDEMPTION_STATUS.disabled ? MSG.disabled : MSG.used);
  }
  return code.quota;
}
