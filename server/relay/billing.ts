// Prices and ratios → quota, and the one storage boundary that moves balances. Quota is an integer;
// every balance movement is a single conditional UPDATE, so concurrent calls can never spend more
// than a token or user holds.
import type { Database, Dialect } from "../../db/index.ts";
import type { OptionStore } from "../modules/option/store.ts";
import { AppError } from "../http/errors.ts";
import { QUOTA_PER_UNIT, TOKEN_STATUS, USER_STATUS } from "../catalogue/index.ts";
import { thinkingBaseModel } from "../catalogue/ratios.ts";
import type { Usage } from "./providers/types.ts";

/** The ratio billed for a model nobody priced, when self-use mode or the user's setting accepts that. */
export const UNSET_MODEL_RATIO = 37.5;

export interface Price {
  /** true: a fixed price per call (ModelPrice); false: per token (ModelRatio). */
  perCall: boolean;
  /** dollars per call, -1 when billed per token (the log's model_price) */
  modelPrice: number;
  modelRatio: number;
  completionRatio: number;
  cacheRatio: number;
  cacheCreationRatio: number;
  groupRatio: number;
}

export function priceFor(options: OptionStore, model: string, group: string, acceptUnset: boolean): Price {
  const prices = options.json<Record<string, number>>("ModelPrice", {});
  const ratios = options.json<Record<string, number>>("ModelRatio", {});
  const completion = options.json<Record<string, number>>("CompletionRatio", {});
  const cache = options.json<Record<string, number>>("CacheRatio", {});
  // Each table is read under the name asked for first, then under the thinking-suffix base name, so an
  // operator's entry for "x-thinking" wins and an unconfigured "x-thinking-1024" costs what "x" costs.
  const base = thinkingBaseModel(model);
  const pick = (table: Record<string, number>): number | undefined => (priced(table[model]) ? table[model] : base !== model && priced(table[base]) ? table[base] : undefined);
  const groupRatio = numberOr(options.json<Record<string, number>>("GroupRatio", {})[group], 1);
  const rest = {
    completionRatio: pick(completion) ?? 1,
    cacheRatio: pick(cache) ?? 1,
    cacheCreationRatio: 1.25,
    groupRatio,
  };
  for (const name of base === model ? [model] : [model, base]) {
    if (priced(prices[name])) return { perCall: true, modelPrice: prices[name], modelRatio: 0, ...rest };
    if (priced(ratios[name])) return { perCall: false, modelPrice: -1, modelRatio: ratios[name], ...rest };
  }
  if (acceptUnset || options.bool("SelfUseModeEnabled")) return { perCall: false, modelPrice: -1, modelRatio: UNSET_MODEL_RATIO, ...rest };
  throw new AppError(403, `model ${model} has no price configured: an administrator must set its ratio (ModelRatio) or fixed price (ModelPrice), or enable self-use mode (SelfUseModeEnabled)`, "model_price_error");
}

function priced(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v) && v >= 0;
}

function numberOr(v: unknown, fallback: number): number {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : fallback;
}

/**
 * quota = group × model ratio × (uncached prompt + cached × cache ratio + cache writes × creation ratio
 * + completion × completion ratio), or price × QUOTA_PER_UNIT × group × calls for per-call models.
 * prompt_tokens includes cached tokens (OpenAI's convention), so they are billed once, at their ratio.
 */
export function quotaFor(price: Price, usage: Usage, calls = 1): number {
  if (price.perCall) return Math.round(price.modelPrice * QUOTA_PER_UNIT * price.groupRatio * calls);
  const cached = Math.min(usage.cached_tokens ?? 0, usage.prompt_tokens);
  const creation = Math.min(usage.cache_creation_tokens ?? 0, usage.prompt_tokens - cached);
  const plain = usage.prompt_tokens - cached - creation;
  const weighted = plain + cached * price.cacheRatio + creation * price.cacheCreationRatio + usage.completion_tokens * price.completionRatio;
  const quota = Math.round(price.groupRatio * price.modelRatio * weighted);
  // Any used tokens of a priced model cost at least one unit, so nothing is free by rounding.
  if (quota === 0 && price.modelRatio > 0 && price.groupRatio > 0 && usage.prompt_tokens + usage.completion_tokens > 0) return 1;
  return quota;
}

/** What to hold before the call: the prompt estimate, plus max_tokens when given, else PreConsumedQuota. */
export function preConsumeQuota(price: Price, promptEstimate: number, maxTokens: number, fallback: number, calls = 1): number {
  if (price.perCall) return quotaFor(price, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, calls);
  const estimate = quotaFor(price, { prompt_tokens: promptEstimate, completion_tokens: maxTokens, total_tokens: promptEstimate + maxTokens });
  return maxTokens > 0 ? estimate : estimate + Math.max(0, Math.round(fallback));
}

/**
 * A call whose balances are at least TRUST_FACTOR × its hold skips the hold: its cost is debited by the
 * write-behind flush (one clamped UPDATE per user and token per batch) instead of two conditional
 * UPDATEs before and two after the call. Holds — and with them the exact "never more calls than the
 * balance pays for" guarantee — apply whenever a balance is anywhere near a call's cost.
 */
export const TRUST_FACTOR = 100;

/**
 * Skipping the hold is safe only when this process sees every spend of a balance, which is what its
 * in-memory unsettled amounts stand for. SQLite is one process; PostgreSQL and MySQL may be shared by
 * several instances, each blind to the others' unsettled debits, so together they could overspend.
 */
export function trustedBillingAllowed(dialect: Dialect): boolean {
  return dialect === "sqlite";
}

/** `floor` (PreConsumedQuota) keeps tiny estimates — a short prompt with a low max_tokens — from making small balances look large. */
export function trusted(dialect: Dialect, hold: number, floor: number, userAvailable: number, tokenAvailable: number | null): boolean {
  if (!trustedBillingAllowed(dialect)) return false;
  const need = Math.max(hold, floor) * TRUST_FACTOR;
  return hold > 0 && userAvailable >= need && (tokenAvailable === null || tokenAvailable >= need);
}

export interface Payer {
  userId: number;
  /** 0 for the playground (billed to the user only) */
  tokenId: number;
  unlimited: boolean;
}

/** Holds `amount` on the token and the user, or throws 403 naming which balance is short; changes nothing then. */
export async function preConsume(db: Database, payer: Payer, amount: number): Promise<void> {
  if (amount <= 0) return;
  const tokenHeld = await spendToken(db, payer, amount);
  if (!tokenHeld) {
    await markExhausted(db, payer.tokenId);
    throw new AppError(403, "token quota is not enough for this request", "insufficient_token_quota");
  }
  const res = await db.updateTable("users")
    .set((eb) => ({ quota: eb("quota", "-", amount) }))
    .where("id", "=", payer.userId).where("status", "=", USER_STATUS.enabled).where("quota", ">=", amount)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) {
    await giveBack(db, payer, amount, false);
    const user = await db.selectFrom("users").select("status").where("id", "=", payer.userId).executeTakeFirst();
    if (user && user.status !== USER_STATUS.enabled) throw new AppError(403, "user has been banned", "user_banned");
    throw new AppError(403, "user quota is not enough for this request", "insufficient_user_quota");
  }
}

async function spendToken(db: Database, payer: Payer, amount: number): Promise<boolean> {
  if (payer.tokenId === 0 || payer.unlimited) return true;
  const res = await db.updateTable("tokens")
    .set((eb) => ({ remain_quota: eb("remain_quota", "-", amount) }))
    .where("id", "=", payer.tokenId).where("status", "=", TOKEN_STATUS.enabled).where("remain_quota", ">=", amount)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

async function giveBack(db: Database, payer: Payer, amount: number, user = true): Promise<void> {
  if (amount <= 0) return;
  if (payer.tokenId !== 0 && !payer.unlimited) {
    await db.updateTable("tokens").set((eb) => ({ remain_quota: eb("remain_quota", "+", amount) })).where("id", "=", payer.tokenId).execute();
  }
  if (user) await db.updateTable("users").set((eb) => ({ quota: eb("quota", "+", amount) })).where("id", "=", payer.userId).execute();
}

async function markExhausted(db: Database, tokenId: number): Promise<void> {
  if (tokenId === 0) return;
  await db.updateTable("tokens").set({ status: TOKEN_STATUS.exhausted })
    .where("id", "=", tokenId).where("status", "=", TOKEN_STATUS.enabled).where("remain_quota", "<=", 0)
    .where("unlimited_quota", "=", false).execute().catch(() => {});
}

/**
 * Settles a call that held `held`: refunds when it cost less; when it cost more, charges the difference
 * but never beyond what token and user still hold (a concurrent call may have spent it). Returns the
 * quota actually taken in total, which is what the consume log records.
 */
export async function settle(db: Database, payer: Payer, held: number, cost: number): Promise<number> {
  if (cost === held) return held;
  if (cost < held) {
    await giveBack(db, payer, held - cost);
    return cost;
  }
  let extra = cost - held;
  for (let attempt = 0; attempt < 5 && extra > 0; attempt++) {
    try {
      await preConsume(db, payer, extra);
      return held + extra;
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
    }
    // Short: take what is left, read and taken in one conditional step so a racing spend is not lost.
    extra = Math.min(extra, await available(db, payer));
  }
  return held;
}

async function available(db: Database, payer: Payer): Promise<number> {
  const user = await db.selectFrom("users").select("quota").where("id", "=", payer.userId).executeTakeFirst();
  let left = Math.max(0, Number(user?.quota ?? 0));
  if (payer.tokenId !== 0 && !payer.unlimited) {
    const token = await db.selectFrom("tokens").select("remain_quota").where("id", "=", payer.tokenId).executeTakeFirst();
    left = Math.min(left, Math.max(0, Number(token?.remain_quota ?? 0)));
  }
  return left;
}
