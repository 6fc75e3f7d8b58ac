// Prices and ratios → quota. Quota is an integer; balances move only through the ledger (core/ledger.ts).
import type { OptionStore } from "../modules/option/store.ts";
import { AppError } from "../http/errors.ts";
import { QUOTA_PER_UNIT } from "../catalogue/index.ts";
import { builtinCompletionRatio, thinkingBaseModel } from "../catalogue/ratios.ts";
import { catalogueOutputLimit, DEFAULT_OUTPUT_LIMIT } from "../catalogue/output-limits.ts";
import { groupRatioFor } from "../modules/group/auto.ts";
import type { Usage } from "./providers/types.ts";

/**
 * What a 1-hour cache write costs relative to a 5-minute one: Anthropic bills them at 2× and 1.25× the base
 * input price. new-api fixes this factor rather than reading an option, so CreateCacheRatio prices both.
 */
export const CACHE_1H_WRITE_FACTOR = 6 / 3.75;

/** CreateCacheRatio without an entry: Anthropic's 5-minute write price over its input price, as new-api defaults. */
export const DEFAULT_CREATE_CACHE_RATIO = 1.25;

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
  /** CreateCacheRatio: a cache write, and a 5-minute one where the upstream tells the TTL apart */
  cacheCreationRatio: number;
  /** a 1-hour cache write: CreateCacheRatio × CACHE_1H_WRITE_FACTOR (cacheWrite1hRatio() when absent) */
  cacheCreation1hRatio?: number;
  groupRatio: number;
  /** new-api's ImageRatio, AudioRatio, AudioCompletionRatio: image and audio tokens relative to text tokens */
  imageRatio?: number;
  audioRatio?: number;
  audioCompletionRatio?: number;
  /** The most output tokens one answer of the model can have (ModelOutputLimit, else the catalogue's; absent:
   * DEFAULT_OUTPUT_LIMIT). */
  outputLimit?: number;
}

/**
 * `userGroup`: the caller's own group, for GroupGroupRatio (what its users pay in `group`); without it, or
 * without an entry, GroupRatio[group] applies. CompletionRatio without an entry falls back to new-api's
 * built-in ratio for the model's family (catalogue/ratios.ts builtinCompletionRatio), then 1.
 */
export function priceFor(
  options: OptionStore,
  model: string,
  group: string,
  acceptUnset: boolean,
  userGroup?: string,
  admin = false,
): Price {
  // Read on every call and derived from eight option tables: memoised until any option changes.
  let memo = memos.get(options);
  if (!memo || memo.version !== options.version)
    memos.set(options, (memo = { version: options.version, prices: new Map() }));
  const key = `${model}\n${group}\n${userGroup ?? ""}\n${acceptUnset ? 1 : 0}`;
  let price = memo.prices.get(key);
  if (!price) {
    price = Object.freeze(computePrice(options, model, group, acceptUnset, userGroup, admin));
    // Model names come from clients: an unbounded number of distinct ones must not grow the memo forever.
    if (memo.prices.size >= PRICE_MEMO_SIZE) memo.prices.clear();
    memo.prices.set(key, price);
  }
  return price;
}

const PRICE_MEMO_SIZE = 4096;
const memos = new WeakMap<OptionStore, { version: number; prices: Map<string, Price> }>();

function computePrice(
  options: OptionStore,
  model: string,
  group: string,
  acceptUnset: boolean,
  userGroup: string | undefined,
  admin: boolean,
): Price {
  const prices = options.json<Record<string, number>>("ModelPrice", {});
  const ratios = options.json<Record<string, number>>("ModelRatio", {});
  const completion = options.json<Record<string, number>>("CompletionRatio", {});
  const cache = options.json<Record<string, number>>("CacheRatio", {});
  // Each table is read under the name asked for first, then under the thinking-suffix base name, so an
  // operator's entry for "x-thinking" wins and an unconfigured "x-thinking-1024" costs what "x" costs.
  const base = thinkingBaseModel(model);
  const pick = (table: Record<string, number>): number | undefined =>
    priced(table[model]) ? table[model] : base !== model && priced(table[base]) ? table[base] : undefined;
  const groupRatio = groupRatioFor(options, group, userGroup);
  const table = (key: string) => pick(options.json<Record<string, number>>(key, {}));
  const createCache = table("CreateCacheRatio") ?? DEFAULT_CREATE_CACHE_RATIO;
  const rest = {
    completionRatio: pick(completion) ?? builtinCompletionRatio(model) ?? builtinCompletionRatio(base) ?? 1,
    cacheRatio: pick(cache) ?? 1,
    cacheCreationRatio: createCache,
    cacheCreation1hRatio: createCache * CACHE_1H_WRITE_FACTOR,
    groupRatio,
    imageRatio: table("ImageRatio") ?? 1,
    audioRatio: table("AudioRatio") ?? 1,
    audioCompletionRatio: table("AudioCompletionRatio") ?? 1,
    outputLimit: outputLimitFor(options, model, base),
  };
  for (const name of base === model ? [model] : [model, base]) {
    if (priced(prices[name])) return { perCall: true, modelPrice: prices[name], modelRatio: 0, ...rest };
    if (priced(ratios[name])) return { perCall: false, modelPrice: -1, modelRatio: ratios[name], ...rest };
  }
  if (acceptUnset || options.bool("SelfUseModeEnabled"))
    return { perCall: false, modelPrice: -1, modelRatio: UNSET_MODEL_RATIO, ...rest };
  throw unpricedModel(model, admin);
}

/**
 * new-api's refusal of a model nobody priced (400 model_price_error, never retried on another channel): the
 * administrator is told where to price it, a user which setting lets such models through.
 */
export function unpricedModel(model: string, admin: boolean): AppError {
  const message = admin
    ? `model ${model} has no price: set its ratio (ModelRatio) or fixed price (ModelPrice) in the pricing settings, or turn on self-use mode (SelfUseModeEnabled) to serve models without a price; a user can also accept them in their personal settings (accept_unset_model_ratio_model)`
    : `model ${model} has no price set by the site's administrator yet: ask them to price it, or accept models without a price in your personal settings (accept_unset_model_ratio_model; they are billed at ratio ${UNSET_MODEL_RATIO})`;
  return new AppError(400, message, "model_price_error");
}

/** ModelOutputLimit's entry for the model (or its thinking-suffix base), else the catalogue's limit. */
function outputLimitFor(options: OptionStore, model: string, base: string): number {
  const limits = options.json<Record<string, number>>("ModelOutputLimit", {});
  for (const name of [model, base]) {
    const n = limits[name];
    if (typeof n === "number" && Number.isInteger(n) && n > 0) return n;
  }
  return catalogueOutputLimit(model);
}

function priced(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v) && v >= 0;
}

/** The ratio of a 1-hour cache write under this price. */
export function cacheWrite1hRatio(price: Price): number {
  return price.cacheCreation1hRatio ?? price.cacheCreationRatio * CACHE_1H_WRITE_FACTOR;
}

/** A call's cache writes split by TTL: 1-hour ones where the upstream reported them, the rest 5-minute ones. */
export function cacheWrites(usage: Usage): { total: number; fiveMinute: number; oneHour: number } {
  const cached = Math.min(usage.cached_tokens ?? 0, usage.prompt_tokens);
  const total = Math.min(usage.cache_creation_tokens ?? 0, usage.prompt_tokens - cached);
  const oneHour = Math.min(usage.cache_creation_1h_tokens ?? 0, total);
  return { total, fiveMinute: total - oneHour, oneHour };
}

/**
 * quota = group × model ratio × (uncached prompt + cache reads × CacheRatio + 5-minute cache writes ×
 * CreateCacheRatio + 1-hour cache writes × CreateCacheRatio × CACHE_1H_WRITE_FACTOR + image in × ImageRatio
 * + audio in × AudioRatio + text completion × completion ratio + audio completion × AudioRatio ×
 * AudioCompletionRatio), rounded half up as new-api rounds its decimal sum, or price × QUOTA_PER_UNIT ×
 * group × calls for per-call models. prompt_tokens includes cached, cache-write, image and audio tokens and
 * completion_tokens the audio ones (OpenAI's convention), so each token is billed once, at its ratio.
 */
export function quotaFor(price: Price, usage: Usage, calls = 1): number {
  if (price.perCall) return Math.round(price.modelPrice * QUOTA_PER_UNIT * price.groupRatio * calls);
  const n = billedTerms(price, usage);
  let weighted = 0;
  for (let i = 0; i < n; i += 2) weighted += TERMS[i]! * TERMS[i + 1]!;
  const quota = roundedQuota(price.groupRatio, price.modelRatio, weighted, n);
  // Any used tokens of a priced model cost at least one unit, so nothing is free by rounding.
  if (quota === 0 && price.modelRatio > 0 && price.groupRatio > 0 && usage.prompt_tokens + usage.completion_tokens > 0)
    return 1;
  return quota;
}

/** (tokens, ratio) pairs of one call, written into TERMS (reused: quotaFor runs on every settled call). */
const TERMS = new Float64Array(16);
function billedTerms(price: Price, usage: Usage): number {
  const cached = Math.min(usage.cached_tokens ?? 0, usage.prompt_tokens);
  const writes = cacheWrites(usage);
  const image = Math.min(usage.image_tokens ?? 0, usage.prompt_tokens - cached - writes.total);
  const audioIn = Math.min(usage.audio_prompt_tokens ?? 0, usage.prompt_tokens - cached - writes.total - image);
  const audioOut = Math.min(usage.audio_completion_tokens ?? 0, usage.completion_tokens);
  let n = 0;
  const term = (tokens: number, ratio: number) => {
    if (tokens > 0) {
      TERMS[n++] = tokens;
      TERMS[n++] = ratio;
    }
  };
  term(usage.prompt_tokens - cached - writes.total - image - audioIn, 1);
  term(cached, price.cacheRatio);
  term(writes.fiveMinute, price.cacheCreationRatio);
  term(writes.oneHour, cacheWrite1hRatio(price));
  term(image, price.imageRatio ?? 1);
  term(audioIn, price.audioRatio ?? 1);
  term(usage.completion_tokens - audioOut, price.completionRatio);
  term(audioOut, (price.audioRatio ?? 1) * (price.audioCompletionRatio ?? 1));
  return n;
}

/**
 * round(ratio × weighted) as new-api computes it: in decimals made from each ratio's shortest printed form
 * (what the operator typed), rounded half away from zero. Binary floating point agrees except within a hair
 * of a half, where it may fall on either side (0.1 × 3 × 5 is 1.5000000000000002): there the terms are summed
 * again exactly.
 */
function roundedQuota(groupRatio: number, modelRatio: number, weighted: number, n: number): number {
  const x = groupRatio * modelRatio * weighted;
  const frac = x - Math.floor(x);
  if (Math.abs(frac - 0.5) > 1e-9 * Math.max(1, x)) return Math.round(x);
  let sum = Dec.ZERO;
  for (let i = 0; i < n; i += 2) sum = sum.add(Dec.of(TERMS[i]!).mul(Dec.of(TERMS[i + 1]!)));
  return sum.mul(Dec.of(modelRatio).mul(Dec.of(groupRatio))).roundHalfUp();
}

/** A non-negative decimal as a BigInt over a power of ten: enough for new-api's decimal sums. */
class Dec {
  static ZERO = new Dec(0n, 0);
  constructor(
    readonly units: bigint,
    readonly scale: number,
  ) {}
  static of(x: number): Dec {
    const [mant, exp] = String(x).split("e");
    const [int, frac = ""] = mant!.split(".");
    const shift = Number(exp ?? 0);
    const digits = BigInt(int! + frac);
    const scale = frac.length - shift;
    return scale >= 0 ? new Dec(digits, scale) : new Dec(digits * 10n ** BigInt(-scale), 0);
  }
  private at(scale: number): bigint {
    return this.units * 10n ** BigInt(scale - this.scale);
  }
  add(o: Dec): Dec {
    const scale = Math.max(this.scale, o.scale);
    return new Dec(this.at(scale) + o.at(scale), scale);
  }
  mul(o: Dec): Dec {
    return new Dec(this.units * o.units, this.scale + o.scale);
  }
  roundHalfUp(): number {
    const one = 10n ** BigInt(this.scale);
    return Number((this.units * 2n + one) / (one * 2n));
  }
}

/**
 * What to hold before a call that has no output bound (embeddings, moderations, audio): the prompt estimate plus
 * PreConsumedQuota; a per-call price, its price.
 */
export function preConsumeQuota(
  price: Price,
  promptEstimate: number,
  maxTokens: number,
  fallback: number,
  calls = 1,
): number {
  if (price.perCall) return quotaFor(price, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, calls);
  const estimate = quotaFor(price, {
    prompt_tokens: promptEstimate,
    completion_tokens: maxTokens,
    total_tokens: promptEstimate + maxTokens,
  });
  return maxTokens > 0 ? estimate : estimate + Math.max(0, Math.round(fallback));
}

/** The fewest output tokens an answer is worth sending upstream for: a balance that cannot pay the prompt and
 * this many is refused instead of capped. */
export const MIN_ANSWER_TOKENS = 1;

/** Prompt tokens a hold adds to the prompt estimate, at the least: an upstream counts a chat's framing (roles,
 * message separators, a system prompt of its own) that the estimate does not see. */
const PROMPT_SLACK_TOKENS = 16;

/** The prompt tokens a generating call's hold is worked out for: the estimate plus a quarter (at least
 * PROMPT_SLACK_TOKENS), so that an answer capped to its hold is not found short by the upstream's own count. */
export function heldPrompt(promptEstimate: number): number {
  return promptEstimate + Math.max(PROMPT_SLACK_TOKENS, Math.ceil(promptEstimate / 4));
}

/** The output tokens a generating call may produce at most: what it asked for, never more than the model's limit. */
export function outputBound(price: Price, asked: number): number {
  const limit = price.outputLimit ?? DEFAULT_OUTPUT_LIMIT;
  return asked > 0 ? Math.min(asked, limit) : limit;
}

/** The worst case of a generating call: the prompt estimate plus `outputTokens` of output, at its price. */
export function worstCaseQuota(price: Price, promptEstimate: number, outputTokens: number): number {
  return quotaFor(price, {
    prompt_tokens: promptEstimate,
    completion_tokens: outputTokens,
    total_tokens: promptEstimate + outputTokens,
  });
}

/**
 * The most output tokens (at most `bound`) whose worst case, with the prompt estimate, `quota` pays: the cap
 * sent upstream when a payer cannot pay the whole bound. 0 when not even MIN_ANSWER_TOKENS are paid.
 */
export function affordableOutput(price: Price, promptEstimate: number, quota: number, bound: number): number {
  if (worstCaseQuota(price, promptEstimate, bound) <= quota) return bound;
  const perToken = price.groupRatio * price.modelRatio * price.completionRatio;
  // A free output (a zero ratio) is paid by anything; otherwise the estimate from the rates, then corrected
  // for rounding (quotaFor rounds the whole and charges at least one unit).
  let n = perToken > 0 ? Math.floor((quota - price.groupRatio * price.modelRatio * promptEstimate) / perToken) : bound;
  n = Math.max(0, Math.min(bound, n));
  while (n > 0 && worstCaseQuota(price, promptEstimate, n) > quota) n--;
  while (n < bound && worstCaseQuota(price, promptEstimate, n + 1) <= quota) n++;
  return n >= MIN_ANSWER_TOKENS ? n : 0;
}

/** QuotaCreditLimit: how many units below zero a payer's balance (its user's, its limited token's) may be taken,
 * which is the most an operator can lose on one payer. 0, the default: none. */
export function creditLimit(deps: { options: OptionStore }): number {
  const n = Math.floor(deps.options.number("QuotaCreditLimit", 0));
  return n > 0 ? n : 0;
}

export type { Payer } from "./core/ledger.ts";
