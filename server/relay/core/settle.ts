// Settlement: after the answer has gone out, the call's cost comes out of its hold and the call is
// recorded — counters, the consume log, the low-balance warning — through the write-behind, in the same
// transaction as the settlement itself (core/ledger.ts). Failed calls leave an error log.
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import { AppError } from "../../http/errors.ts";
import { LOG_TYPE } from "../../catalogue/index.ts";
import type { Usage } from "../providers/types.ts";
import { relayState } from "../state.ts";
import { cacheWrite1hRatio, cacheWrites, quotaFor, type Price } from "../billing.ts";
import type { SettledEntry } from "../../jobs/writebehind.ts";
import { maybeNotifyQuota } from "../../infra/notify.ts";
import type { Admission, RelayRequest } from "./admit.ts";
import { countedUsageExact } from "./meter.ts";
import { observeError, observeSettled, observeSettling } from "../observe.ts";
import type { FallbackFacts } from "./fallback.ts";

/** An admitted call that a channel served: what settling and recording it needs. */
export interface Served extends Admission {
  channel: Channel;
  upstreamModel: string;
  usedChannels: number[];
  firstByteMs: number;
  /** The answer's body goes straight to the client's connection, read by nothing in between (see exchange.ts
   * freeSent): a large answer's chunks are given back as soon as they are sent. */
  straightToSocket?: boolean;
  /** The upstream cut the stream before the answer was complete (logged in `other`). */
  interrupted?: boolean;
  /** Bills this fraction of the call's cost (a response-cache hit: ResponseCacheBillingRatio). */
  costRatio?: number;
  /** Hears the usage the call is billed for (the response cache keeps it with the answer). */
  onSettled?: (usage: Usage) => void;
  /** Served by a fallback model (core/fallback.ts): logged in `other.fallback`. */
  fallback?: FallbackFacts | null;
  /** Cut when its cost reached what its payer can pay (core/stream-budget.ts): billed at most its hold. */
  cutAtHold?: boolean;
}

/** Settles and records a served call; the write-behind waits for it on flush. `usage` null: counted from
 * the request and `generated` text. `other`: an endpoint's own facts for the log (realtime's audio counts).
 * Resolves once the settlement is queued. */
export function finish(
  deps: AppDeps,
  s: Served,
  usage: Usage | null,
  generated?: () => string,
  other?: Record<string, unknown>,
): Promise<void> {
  s.ticket.succeeded();
  observeSettling(s);
  const { ledger, writer } = relayState(deps);
  // The usual call (usage known, no token limits, a cost its hold or its lease covers) settles before this
  // returns: no promises to create, track and collect per call, and nothing for a flush to wait on.
  if (usage && ledger.settleNow && !s.limits) {
    try {
      const taken = ledger.settleNow(s.hold, costOf(s, usage), (q) => records(deps, s, usage, q, other));
      if (taken !== null) {
        s.onSettled?.(usage);
        observeSettled(s, usage, taken);
        warnIfLow(deps, s, taken);
        return SETTLED;
      }
    } catch (e) {
      console.error("settlement failed:", (e as Error)?.message ?? e);
      return SETTLED;
    }
  }
  const job = (async () => {
    try {
      const u = usage ?? (await countedUsageExact(s.req.body, generated?.() ?? ""));
      s.onSettled?.(u);
      const taken = await ledger.settle(s.hold, costOf(s, u), (q) => records(deps, s, u, q, other));
      observeSettled(s, u, taken);
      if (s.limits) await s.limits.spend(taken, u.prompt_tokens + u.completion_tokens);
      warnIfLow(deps, s, taken);
    } finally {
      // A realtime session settles each response here and frees its slot when it closes (release()).
      if (s.limits && s.req.mode !== "realtime") await s.limits.end();
    }
  })();
  writer.track(job);
  return job;
}

const SETTLED: Promise<void> = Promise.resolve();

/** What the call is billed: its price for the usage, times the cache's billing ratio on a response-cache hit;
 * a stream cut at its hold, at most the hold. */
export function costOf(s: Served, u: Usage): number {
  const full = quotaFor(s.price, u, s.calls);
  const cost = s.costRatio === undefined ? full : Math.round(full * s.costRatio);
  return s.cutAtHold ? Math.min(cost, s.hold.amount) : cost;
}

/**
 * Takes `more` quota into the call's hold (at least `least` of it, as far as the balances pay): the answer costs
 * more than the call held, because an upstream went past the bound it was sent or a model answered longer than
 * its catalogued limit. Null when taken; else the error naming the short balance, and the hold is as it was.
 */
export async function extendHold(deps: AppDeps, adm: Admission, more: number, least = more): Promise<AppError | null> {
  if (more <= 0) return null;
  const { ledger } = relayState(deps);
  const c = adm.req.caller;
  const payer = { userId: c.userId, tokenId: c.tokenId, unlimited: c.unlimited };
  let extra;
  try {
    extra = ledger.takeNow?.(payer, more, least) ?? (await ledger.take(payer, more, least));
  } catch (e) {
    return e instanceof AppError
      ? e
      : new AppError(403, "user quota is not enough for this request", "insufficient_user_quota");
  }
  // A hold is one lease's (PostgreSQL, MySQL): quota given from another (the payer's lease was replaced since)
  // cannot join it.
  if (extra.amount > 0 && extra.lease !== adm.hold.lease) {
    await ledger.giveBack(extra);
    return new AppError(403, "user quota is not enough for this request", "insufficient_user_quota");
  }
  adm.hold.amount += extra.amount;
  return null;
}

/** The call was not served (or its answer was unusable): the hold goes back in full. */
export async function release(deps: AppDeps, adm: Admission): Promise<void> {
  try {
    await relayState(deps).ledger.giveBack(adm.hold);
  } finally {
    // The token's slot and unspent budget estimate too (modules/token/limits.ts); once, whichever path ends the call.
    if (adm.limits) await adm.limits.end();
  }
}

/** Quota warning: the balance left after this call; the check costs no I/O while it is above the threshold. */
function warnIfLow(deps: AppDeps, s: Served, taken: number): void {
  const c = s.req.caller;
  maybeNotifyQuota(deps, c.userId, relayState(deps).ledger.remaining(c.userId, c.userQuota - taken), c.userSetting);
}

/** The counters and the consume log of a settled call, written together with its settlement. */
function records(deps: AppDeps, s: Served, u: Usage, quota: number, extra?: Record<string, unknown>): SettledEntry {
  const { req, price } = s;
  const now = Math.floor(Date.now() / 1000);
  const usage = {
    userId: req.caller.userId,
    username: req.caller.username,
    tokenId: req.caller.tokenId,
    channelId: s.channel.id,
    model: req.model,
    quota,
    tokens: u.prompt_tokens + u.completion_tokens,
    at: now,
  };
  if (!deps.options.bool("LogConsumeEnabled")) return { usage, log: null };
  // Optional keys are assigned, not spread: three spreads of mostly empty objects cost a quarter of the
  // object's building and stringifying (~55 ns a call in a microbenchmark).
  const other: Record<string, unknown> = {
    model_ratio: price.modelRatio,
    group_ratio: price.groupRatio,
    completion_ratio: price.completionRatio,
    model_price: price.modelPrice,
    cache_tokens: u.cached_tokens ?? 0,
    cache_ratio: price.cacheRatio,
    cache_creation_tokens: u.cache_creation_tokens ?? 0,
    cache_creation_ratio: price.cacheCreationRatio,
    frt: Math.round(s.firstByteMs),
    is_model_mapped: s.upstreamModel !== req.model,
    upstream_model_name: s.upstreamModel,
    admin_info: { use_channel: s.usedChannels.map(String) },
    request_path: req.path,
  };
  if (u.cache_creation_1h_tokens !== undefined) cacheWriteDetails(other, price, u);
  // Served by the channel the conversation was pinned to (not by one it fell back to).
  if (s.affinity?.used && s.affinity.pin?.channel === s.channel.id)
    (other.admin_info as Record<string, unknown>).channel_affinity = s.affinity.logInfo(s.channel.id);
  if (s.interrupted) other.stream_interrupted = true;
  if (s.fallback) other.fallback = s.fallback;
  if (extra) Object.assign(other, extra);
  const content = contentOf(price);
  return {
    usage,
    log: {
      user_id: req.caller.userId,
      created_at: now,
      type: LOG_TYPE.consume,
      content,
      username: req.caller.username,
      token_name: req.caller.tokenName,
      model_name: req.model,
      quota,
      prompt_tokens: u.prompt_tokens,
      completion_tokens: u.completion_tokens,
      use_time: Math.round((performance.now() - s.started) / 1000),
      is_stream: req.stream,
      channel_id: s.channel.id,
      token_id: req.caller.tokenId,
      group: req.caller.group,
      ip: loggedIp(req),
      other: JSON.stringify(other),
    },
  };
}

/** Cache writes by TTL, under new-api's log keys (each where non-zero), when the upstream reported the TTLs. */
function cacheWriteDetails(other: Record<string, unknown>, price: Price, u: Usage): void {
  const writes = cacheWrites(u);
  if (writes.fiveMinute) {
    other.cache_creation_tokens_5m = writes.fiveMinute;
    other.cache_creation_ratio_5m = price.cacheCreationRatio;
  }
  if (writes.oneHour) {
    other.cache_creation_tokens_1h = writes.oneHour;
    other.cache_creation_ratio_1h = cacheWrite1hRatio(price);
  }
}

/**
 * The consume log's content line, made once per (memoised) price (hot-path rule 5): made per call it would print
 * the ratios again, and send a new string in every row the SQLite worker is sent. Splicing
 * `other` from per-price pieces the same way made calls slower instead (a concatenated string, flattened
 * later), so `other` stays one JSON.stringify.
 */
const contents = new WeakMap<Price, string>();
function contentOf(price: Price): string {
  let c = contents.get(price);
  if (c === undefined) {
    c = price.perCall
      ? `model price $${price.modelPrice}, group ratio ${price.groupRatio}`
      : `model ratio ${price.modelRatio}, completion ratio ${price.completionRatio}, group ratio ${price.groupRatio}`;
    contents.set(price, c);
  }
  return c;
}

/** The error log of a call that failed (LogErrorEnabled). */
export function recordError(
  deps: AppDeps,
  req: RelayRequest,
  err: AppError,
  channelId: number,
  used: number[],
  started: number,
  fallback?: FallbackFacts | null,
): void {
  observeError(req, err, channelId);
  if (!deps.options.bool("LogErrorEnabled")) return;
  relayState(deps).writer.log({
    user_id: req.caller.userId,
    created_at: Math.floor(Date.now() / 1000),
    type: LOG_TYPE.error,
    content: err.message,
    username: req.caller.username,
    token_name: req.caller.tokenName,
    model_name: req.model,
    quota: 0,
    use_time: Math.round((performance.now() - started) / 1000),
    is_stream: req.stream,
    channel_id: channelId,
    token_id: req.caller.tokenId,
    group: req.caller.group,
    ip: loggedIp(req),
    other: JSON.stringify({
      status_code: err.status,
      admin_info: { use_channel: used.map(String) },
      request_path: req.path,
      ...(fallback ? { fallback } : {}),
    }),
  });
}

/** The address a consume or error log keeps: the client's when its user asked for it (record_ip_log, as in
 * new-api), else none. */
export function loggedIp(req: { caller: { recordIp: boolean }; ip: string }): string {
  return req.caller.recordIp ? req.ip : "";
}
