// Prices and ratios → quota. Quota is an integer; balances move only through the ledger (core/ledger.ts).
import type { OptionStore } from "../modules/option/store.ts";
import { AppError } from "../http/errors.ts";
import { QUOTA_PER_UNIT } from "../catalogue/index.ts";
import { builtinCompletionRatio, thinkingBaseModel } from "../catalogue/ratios.ts";
import { groupRatioFor } from "../modules/group/auto.ts";
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
  /** new-api's ImageRatio, AudioRatio, AudioCompletionRatio: image and audio tokens relative to text tokens */
  imageRatio?: number;
  audioRatio?: number;
  audioCompletionRatio?: number;
}

/**
 * `userGroup`: the caller's own group, for GroupGroupRatio (what its users pay in `group`); without it, or
 * without an entry, GroupRatio[group] applies. CompletionRatio without an entry falls back to new-api's
 * built-in ratio for the model's family (catalogue/ratios.ts builtinCompletionRatio), then 1.
 */
export function priceFor(options: OptionStore, model: string, group: string, acceptUnset: boolean, userGroup?: string): Price {
  // Read on every call and derived from eight option tables: memoised until any option changes.
  let memo = memos.get(options);
  if (!memo || memo.version !== options.version) memos.set(options, (memo = { version: options.version, prices: new Map() }));
  const key = `${model}\n${group}\n${userGroup ?? ""}\n${acceptUnset ? 1 : 0}`;
  let price = memo.prices.get(key);
  if (!price) {
    price = Object.freeze(computePrice(options, model, group, acceptUnset, userGroup));
    // Model names come from clients: an unbounded number of distinct ones must not grow the memo forever.
    if (memo.prices.size >= PRICE_MEMO_SIZE) memo.prices.clear();
    memo.prices.set(key, price);
  }
  return price;
}

const PRICE_MEMO_SIZE = 4096;
const memos = new WeakMap<OptionStore, { version: number; prices: Map<string, Price> }>();

function computePrice(options: OptionStore, model: string, group: string, acceptUnset: boolean, userGroup?: string): Price {
  const prices = options.json<Record<string, number>>("ModelPrice", {});
  const ratios = options.json<Record<string, number>>("ModelRatio", {});
  const completion = options.json<Record<string, number>>("CompletionRatio", {});
  const cache = options.json<Record<string, number>>("CacheRatio", {});
  // Each table is read under the name asked for first, then under the thinking-suffix base name, so an
  // operator's entry for "x-thinking" wins and an unconfigured "x-thinking-1024" costs what "x" costs.
  const base = thinkingBaseModel(model);
  const pick = (table: Record<string, number>): number | undefined => (priced(table[model]) ? table[model] : base !== model && priced(table[base]) ? table[base] : undefined);
  const groupRatio = groupRatioFor(options, group, userGroup);
  const table = (key: string) => pick(options.json<Record<string, number>>(key, {}));
  const rest = {
    completionRatio: pick(completion) ?? builtinCompletionRatio(model) ?? builtinCompletionRatio(base) ?? 1,
    cacheRatio: pick(cache) ?? 1,
    cacheCreationRatio: table("CreateCacheRatio") ?? 1.25,
    groupRatio,
    imageRatio: table("ImageRatio") ?? 1,
    audioRatio: table("AudioRatio") ?? 1,
    audioCompletionRatio: table("AudioCompletionRatio") ?? 1,
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

/**
 * quota = group × model ratio × (uncached prompt + cached × cache ratio + cache writes × creation ratio
 * + image in × ImageRatio + audio in × AudioRatio + text completion × completion ratio
 * + audio completion × AudioRatio × AudioCompletionRatio), or price × QUOTA_PER_UNIT × group × calls for
 * per-call models. prompt_tokens includes cached, image and audio tokens and completion_tokens the audio
 * ones (OpenAI's convention), so each token is billed once, at its ratio.
 */
export function quotaFor(price: Price, usage: Usage, calls = 1): number {
  if (price.perCall) return Math.round(price.modelPrice * QUOTA_PER_UNIT * price.groupRatio * calls);
  const cached = Math.min(usage.cached_tokens ?? 0, usage.prompt_tokens);
  const creation = Math.min(usage.cache_creation_tokens ?? 0, usage.prompt_tokens - cached);
  const image = Math.min(usage.image_tokens ?? 0, usage.prompt_tokens - cached - creation);
  const audioIn = Math.min(usage.audio_prompt_tokens ?? 0, usage.prompt_tokens - cached - creation - image);
  const audioOut = Math.min(usage.audio_completion_tokens ?? 0, usage.completion_tokens);
  const plain = usage.prompt_tokens - cached - creation - image - audioIn;
  const weighted = plain + cached * price.cacheRatio + creation * price.cacheCreationRatio + image * (price.imageRatio ?? 1)
    + audioIn * (price.audioRatio ?? 1) + (usage.completion_tokens - audioOut) * price.completionRatio
    + audioOut * (price.audioRatio ?? 1) * (price.audioCompletionRatio ?? 1);
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

export type { Payer } from "./core/ledger.ts";
