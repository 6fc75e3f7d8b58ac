// API tokens of a user: create (optionally several at once), list, search, update, enable/disable, delete.
// Keys are stored without the "sk-" prefix (one-api layout) and shown to their owner with it.
import { maskedTokenKey } from "../../http/newapi-console.ts";
import type { AppDeps } from "../../deps.ts";
import type { Token, User } from "../../../db/schema.ts";
import { nowSeconds, type Database } from "../../../db/index.ts";
import { badRequest, notFound } from "../../http/errors.ts";
import { TOKEN_BATCH_MAX, TOKEN_KEY_LENGTH, TOKEN_KEY_PREFIX, TOKEN_STATUS } from "../../catalogue/index.ts";
import { BIGINT_COLUMN, INT_COLUMN } from "../../http/numbers.ts";
import { randomString } from "../../infra/random.ts";
import { parseAllowIps } from "./ips.ts";
import { notifyTokenChanged } from "./events.ts";
import { AUTO_GROUP } from "../group/auto.ts";
import { BUDGET_PERIODS, tokenUsage, type BudgetPeriod } from "./limits.ts";
import { editBalance, withLeasedTokens } from "../user/balance.ts";

export const TOKEN_NAME_MAX_LENGTH = 30;
const SUFFIX_LENGTH = 6;

export const MSG = {
  nameRequired: "token name cannot be empty",
  nameTooLong: `token name is too long (at most ${TOKEN_NAME_MAX_LENGTH} characters)`,
  badExpiry: "expiry time format error: use a unix timestamp in seconds, or -1 for never",
  expiredInPast: "the expiry time is in the past; choose a future time or -1 for never",
  badQuota: "remain_quota must be a non-negative integer",
  badCount: `count must be an integer from 1 to ${TOKEN_BATCH_MAX}`,
  badStatus: "status must be 1 (enabled) or 2 (disabled); expired and exhausted are set by the system",
  enableExpired: "the token has expired and cannot be enabled: change its expiry time first, or set it to never expire",
  enableExhausted:
    "the token's quota is used up and it cannot be enabled: raise its remaining quota first, or make it unlimited",
  notFound: "token not found",
  idsRequired: "ids is required: a list of token ids",
  badLimit: (field: "rpm_limit" | "tpm_limit" | "concurrency_limit" | "budget_quota") =>
    `${field} must be a whole number from 0 (no limit) to ${LIMIT_MAX[field]}`,
  badPeriod: "budget_period must be '' (no budget), daily, weekly or monthly",
  budgetNeedsPeriod: "a budget_quota needs a budget_period: daily, weekly or monthly",
} as const;

/** The per-token limit fields (server/modules/token/limits.ts), as the API sends and takes them. */
export const LIMIT_FIELDS = ["rpm_limit", "tpm_limit", "concurrency_limit", "budget_quota"] as const;
/** The largest value each limit column holds: rpm and concurrency are 32-bit int columns (db/migrations/tables.ts). */
export const LIMIT_MAX: Record<(typeof LIMIT_FIELDS)[number], number> = {
  rpm_limit: INT_COLUMN.max,
  tpm_limit: BIGINT_COLUMN.max,
  concurrency_limit: INT_COLUMN.max,
  budget_quota: BIGINT_COLUMN.max,
};

/** Rows new-api soft-deleted (deleted_at set) are gone for every token route, as they are for new-api. */
const live = <QB extends { where: (...a: any[]) => QB }>(qb: QB): QB => qb.where("deleted_at", "is", null);

export interface TokenInput {
  name?: string;
  remain_quota?: number;
  expired_time?: number;
  unlimited_quota?: boolean;
  model_limits_enabled?: boolean;
  model_limits?: string;
  allow_ips?: string;
  group?: string;
  status?: number;
  rpm_limit?: number;
  tpm_limit?: number;
  concurrency_limit?: number;
  budget_quota?: number;
  budget_period?: string;
}

/**
 * The shape sent to the token's owner: key with its sk- prefix, booleans as booleans. new-api's consoles
 * (`masked`) get the key as new-api lists it, masked and without the prefix they add themselves; they fetch
 * the full key with POST /api/token/{id}/key.
 */
export function tokenView(t: Token, masked = false) {
  return {
    id: t.id,
    user_id: t.user_id,
    name: t.name,
    key: masked ? maskedTokenKey(t.key) : TOKEN_KEY_PREFIX + t.key,
    status: t.status,
    created_time: t.created_time,
    accessed_time: t.accessed_time,
    expired_time: t.expired_time,
    remain_quota: t.remain_quota,
    used_quota: t.used_quota,
    unlimited_quota: Boolean(t.unlimited_quota),
    model_limits_enabled: Boolean(t.model_limits_enabled),
    model_limits: t.model_limits ?? "",
    allow_ips: t.allow_ips ?? "",
    group: t.group ?? "",
    rpm_limit: Number(t.rpm_limit ?? 0),
    tpm_limit: Number(t.tpm_limit ?? 0),
    concurrency_limit: Number(t.concurrency_limit ?? 0),
    budget_quota: Number(t.budget_quota ?? 0),
    budget_period: t.budget_period ?? "",
    // Spent in the current budget period (0 once it is over) and when it ends (0: none started).
    budget_used: Number(t.budget_reset_at ?? 0) > nowSeconds() ? Number(t.budget_used ?? 0) : 0,
    budget_reset_at: Number(t.budget_reset_at ?? 0) > nowSeconds() ? Number(t.budget_reset_at) : 0,
  };
}

/** Comma list without blanks or duplicates, as stored and sent. */
function cleanList(text: string): string {
  return [
    ...new Set(
      text
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ].join(",");
}

/** Groups the user may put on a token: the UserUsableGroups option plus the user's own group. */
export function usableGroups(deps: AppDeps, user: Pick<User, "group">): string[] {
  const groups = Object.keys(deps.options.json<Record<string, string>>("UserUsableGroups", {}));
  if (user.group && !groups.includes(user.group)) groups.push(user.group);
  return groups;
}

function checkName(name: string) {
  if (!name) throw badRequest(MSG.nameRequired);
  if (name.length > TOKEN_NAME_MAX_LENGTH) throw badRequest(MSG.nameTooLong);
}

function checkExpiry(v: number) {
  if (!Number.isInteger(v) || (v !== -1 && v <= 0)) throw badRequest(MSG.badExpiry);
}

function checkQuota(v: number) {
  if (!Number.isSafeInteger(v) || v < 0) throw badRequest(MSG.badQuota);
}

/** Validates the fields shared by create and update; returns the column values to write. */
function validatedFields(deps: AppDeps, user: User, input: TokenInput): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (input.name !== undefined) {
    const name = input.name.trim();
    checkName(name);
    out.name = name;
  }
  if (input.remain_quota !== undefined) {
    checkQuota(input.remain_quota);
    out.remain_quota = input.remain_quota;
  }
  if (input.expired_time !== undefined) {
    checkExpiry(input.expired_time);
    out.expired_time = input.expired_time;
  }
  if (input.unlimited_quota !== undefined) out.unlimited_quota = Boolean(input.unlimited_quota);
  if (input.model_limits_enabled !== undefined) out.model_limits_enabled = Boolean(input.model_limits_enabled);
  if (input.model_limits !== undefined) out.model_limits = cleanList(input.model_limits);
  if (input.allow_ips !== undefined) {
    const { invalid } = parseAllowIps(input.allow_ips);
    if (invalid.length) throw badRequest(`invalid IP address or CIDR range in allow_ips: ${invalid.join(", ")}`);
    out.allow_ips = input.allow_ips
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter(Boolean)
      .join("\n");
  }
  if (input.group !== undefined) {
    const group = input.group.trim();
    if (group && !usableGroups(deps, user).includes(group))
      throw badRequest(`group "${group}" is not available to you`);
    out.group = group;
  }
  for (const field of LIMIT_FIELDS) {
    const v = input[field];
    if (v === undefined) continue;
    if (!Number.isSafeInteger(v) || v < 0 || v > LIMIT_MAX[field]) throw badRequest(MSG.badLimit(field));
    out[field] = v;
  }
  if (input.budget_period !== undefined) {
    const period = input.budget_period.trim().toLowerCase();
    if (!BUDGET_PERIODS.includes(period as BudgetPeriod)) throw badRequest(MSG.badPeriod);
    out.budget_period = period;
  }
  return out;
}

/** A budget needs a period; a new period (or none) starts the count afresh at the next call. */
function checkBudget(current: Pick<Token, "budget_quota" | "budget_period"> | null, patch: Record<string, unknown>) {
  const quota = (patch.budget_quota as number | undefined) ?? Number(current?.budget_quota ?? 0);
  const period = (patch.budget_period as string | undefined) ?? current?.budget_period ?? "";
  if (quota > 0 && !period) throw badRequest(MSG.budgetNeedsPeriod);
  if (current && patch.budget_period !== undefined && patch.budget_period !== (current.budget_period ?? "")) {
    patch.budget_used = 0;
    patch.budget_reset_at = 0;
  }
}

async function uniqueKey(deps: AppDeps): Promise<string> {
  // 62^48 makes a clash practically impossible; the unique index still guards it, so look once.
  for (;;) {
    const key = randomString(TOKEN_KEY_LENGTH);
    // soft-deleted rows keep their key in the unique index, so they count here
    const taken = await deps.db.selectFrom("tokens").select("id").where("key", "=", key).executeTakeFirst();
    if (!taken) return key;
  }
}

export async function createTokens(deps: AppDeps, user: User, input: TokenInput & { count?: number }) {
  const count = input.count ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > TOKEN_BATCH_MAX) throw badRequest(MSG.badCount);
  const name = (input.name ?? "").trim();
  checkName(name);
  if (input.status !== undefined && input.status !== TOKEN_STATUS.enabled && input.status !== TOKEN_STATUS.disabled) {
    throw badRequest(MSG.badStatus);
  }
  const fields = validatedFields(deps, user, input);
  checkBudget(null, fields);
  // new-api's DefaultUseAutoGroup: a token created without a group routes through the auto groups.
  if (
    input.group === undefined
    && deps.options.bool("DefaultUseAutoGroup")
    && usableGroups(deps, user).includes(AUTO_GROUP)
  )
    fields.group = AUTO_GROUP;
  const max = deps.options.number("token_setting.max_user_tokens", 1000);
  const [{ n: owned }] = await live(
    deps.db
      .selectFrom("tokens")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("user_id", "=", user.id),
  ).execute();
  if (max > 0 && Number(owned) + count > max)
    throw badRequest(`you can have at most ${max} tokens (token_setting.max_user_tokens); you have ${Number(owned)}`);
  const expired = (fields.expired_time as number | undefined) ?? -1;
  if (expired !== -1 && expired <= nowSeconds()) throw badRequest(MSG.expiredInPast);
  const now = nowSeconds();
  const rows = [];
  for (let i = 0; i < count; i++) {
    rows.push({
      user_id: user.id,
      key: await uniqueKey(deps),
      status: input.status ?? TOKEN_STATUS.enabled,
      name: count > 1 && i > 0 ? `${name}-${randomString(SUFFIX_LENGTH)}` : name,
      created_time: now,
      accessed_time: now,
      expired_time: expired,
      remain_quota: (fields.remain_quota as number | undefined) ?? 0,
      unlimited_quota: (fields.unlimited_quota as boolean | undefined) ?? false,
      model_limits_enabled: (fields.model_limits_enabled as boolean | undefined) ?? false,
      model_limits: (fields.model_limits as string | undefined) ?? "",
      allow_ips: (fields.allow_ips as string | undefined) ?? "",
      used_quota: 0,
      group: (fields.group as string | undefined) ?? "",
      ...Object.fromEntries(LIMIT_FIELDS.map((f) => [f, (fields[f] as number | undefined) ?? 0])),
      budget_period: (fields.budget_period as string | undefined) ?? "",
    });
  }
  await deps.db.insertInto("tokens").values(rows).execute();
  const created = await deps.db
    .selectFrom("tokens")
    .selectAll()
    .where(
      "key",
      "in",
      rows.map((r) => r.key),
    )
    .orderBy("id")
    .execute();
  return created.map((t) => tokenView(t));
}

export interface TokenListQuery {
  page: number;
  size: number;
  offset: number;
  keyword?: string;
  token?: string;
  masked?: boolean;
}

export async function listTokens(deps: AppDeps, user: User, q: TokenListQuery) {
  let base = live(deps.db.selectFrom("tokens").where("user_id", "=", user.id));
  const keyword = q.keyword?.trim();
  if (keyword) base = base.where("name", "like", `%${keyword}%`);
  const token = q.token?.trim().replace(/^sk-/, "");
  if (token) base = base.where("key", "like", `%${token}%`);
  const [{ n }] = await base.select((eb) => eb.fn.countAll<number>().as("n")).execute();
  const rows = await base.selectAll().orderBy("id", "desc").limit(q.size).offset(q.offset).execute();
  // Usage against the limits: rpm_used, tpm_used (this minute), concurrency_used (calls in flight).
  const usage = await tokenUsage(deps, rows);
  const items = (await withLeasedTokens(deps, rows)).map((r) => ({ ...tokenView(r, q.masked), ...usage.get(r.id) }));
  return { items, page: q.page, page_size: q.size, total: Number(n) };
}

/** The user's own token; another user's id answers "not found", never "forbidden". */
export async function ownToken(deps: AppDeps, user: User, id: number): Promise<Token> {
  const t = await live(
    deps.db.selectFrom("tokens").selectAll().where("id", "=", id).where("user_id", "=", user.id),
  ).executeTakeFirst();
  if (!t) throw notFound(MSG.notFound);
  return t;
}

/** The token as its owner sees it: its remaining quota counts what leases hold of it. */
export async function shownToken(deps: AppDeps, user: User, id: number): Promise<Token> {
  return (await withLeasedTokens(deps, [await ownToken(deps, user, id)]))[0];
}

/**
 * Enabling is refused while the token would still be expired or exhausted, judged on the values after
 * this update, so fixing the expiry or quota in the same request is enough.
 */
function checkEnable(current: Token, next: { expired_time: number; remain_quota: number; unlimited_quota: boolean }) {
  if (next.expired_time !== -1 && next.expired_time <= nowSeconds()) throw badRequest(MSG.enableExpired);
  if (current.status === TOKEN_STATUS.exhausted && !next.unlimited_quota && next.remain_quota <= 0)
    throw badRequest(MSG.enableExhausted);
}

export async function updateToken(deps: AppDeps, user: User, id: number, input: TokenInput, statusOnly: boolean) {
  const current = await shownToken(deps, user, id);
  let patch: Record<string, unknown> = {};
  if (!statusOnly) {
    patch = validatedFields(deps, user, input);
    checkBudget(current, patch);
    // The console sends the remaining quota back with every edit: unchanged, it is no edit.
    if (patch.remain_quota === Number(current.remain_quota)) delete patch.remain_quota;
  }
  const wantsStatus = input.status !== undefined && input.status !== current.status;
  if (wantsStatus && input.status !== TOKEN_STATUS.enabled && input.status !== TOKEN_STATUS.disabled)
    throw badRequest(MSG.badStatus);
  if (statusOnly && input.status === undefined) throw badRequest(MSG.badStatus);
  const next = {
    expired_time: (patch.expired_time as number | undefined) ?? current.expired_time,
    remain_quota: (patch.remain_quota as number | undefined) ?? current.remain_quota,
    unlimited_quota: (patch.unlimited_quota as boolean | undefined) ?? Boolean(current.unlimited_quota),
  };
  if (wantsStatus && input.status === TOKEN_STATUS.enabled) checkEnable(current, next);
  if (wantsStatus) patch.status = input.status;
  const write = (db: Database = deps.db) => db.updateTable("tokens").set(patch).where("id", "=", current.id).execute();
  // A new remaining quota is set absolutely: the token's leases are given back first (modules/user/balance.ts).
  if (patch.remain_quota !== undefined) await editBalance(deps, { userId: user.id, tokenId: current.id }, write);
  else if (Object.keys(patch).length) await write();
  await notifyTokenChanged(deps, { key: current.key });
  // Every instance stops giving calls from the leases the edit gave back.
  if (patch.remain_quota !== undefined) await notifyTokenChanged(deps, { userId: user.id });
  return tokenView(await shownToken(deps, user, id));
}

export async function deleteToken(deps: AppDeps, user: User, id: number): Promise<void> {
  const current = await ownToken(deps, user, id);
  // A hard delete: a token that no longer exists can never authenticate again, whatever the relay caches.
  await deps.db.deleteFrom("tokens").where("id", "=", current.id).where("user_id", "=", user.id).execute();
  await notifyTokenChanged(deps, { key: current.key });
}

/** POST /api/token/batch {ids} (new-api): deletes those of the caller's tokens; answers how many went. */
function assertIds(ids: unknown): asserts ids is number[] {
  if (!Array.isArray(ids) || !ids.length || ids.some((i) => !Number.isInteger(i) || i < 1))
    throw badRequest(MSG.idsRequired);
}

/** POST /api/token/batch/keys (new-api's consoles): id → full key without sk-, for the caller's own tokens among `ids`. */
export async function tokenKeys(deps: AppDeps, user: User, ids: unknown): Promise<Record<number, string>> {
  assertIds(ids);
  if (ids.length > TOKEN_BATCH_MAX) throw badRequest(`ids: at most ${TOKEN_BATCH_MAX} tokens at a time`);
  const rows = await live(
    deps.db.selectFrom("tokens").select(["id", "key"]).where("user_id", "=", user.id).where("id", "in", ids),
  ).execute();
  return Object.fromEntries(rows.map((r) => [r.id, r.key]));
}

export async function deleteTokens(deps: AppDeps, user: User, ids: unknown): Promise<number> {
  assertIds(ids);
  const rows = await live(
    deps.db
      .selectFrom("tokens")
      .select(["id", "key"])
      .where("user_id", "=", user.id)
      .where("id", "in", ids as number[]),
  ).execute();
  if (!rows.length) return 0;
  await deps.db
    .deleteFrom("tokens")
    .where("user_id", "=", user.id)
    .where(
      "id",
      "in",
      rows.map((r) => r.id),
    )
    .execute();
  for (const r of rows) await notifyTokenChanged(deps, { key: r.key });
  return rows.length;
}
