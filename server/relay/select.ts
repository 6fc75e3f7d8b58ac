// Channel choice for one (group, model): the highest priority tier that still has a channel this request
// has not tried, then a weighted random pick inside that tier (ChannelSelectionStrategy "weighted", the
// default), or the fastest healthy channel of the tier ("latency": pickFastest, channel-stats.ts).
import { statusInList } from "../modules/channel/status-codes.ts";
import type { ChannelStats } from "./channel-stats.ts";

export interface Candidate {
  channelId: number;
  priority: number;
  weight: number;
}

/** Picks a channel id, skipping `tried`; null when every candidate has failed already. */
export function pickChannel(
  candidates: readonly Candidate[],
  tried: ReadonlySet<number>,
  random: () => number = Math.random,
): number | null {
  // Two passes over the candidates and no arrays or callbacks: this runs on every call.
  let top = -Infinity;
  let size = 0;
  let total = 0;
  for (const c of candidates) {
    if (tried.has(c.channelId)) continue;
    if (c.priority > top) {
      top = c.priority;
      size = 0;
      total = 0;
    }
    if (c.priority === top) {
      size++;
      total += Math.max(0, c.weight);
    }
  }
  if (size === 0) return null;
  // All weights zero means "no preference": pick uniformly.
  const uniform = total <= 0;
  let r = uniform ? Math.floor(random() * size) : random() * total;
  let last = -1;
  for (const c of candidates) {
    if (c.priority !== top || tried.has(c.channelId)) continue;
    last = c.channelId;
    r -= uniform ? 1 : Math.max(0, c.weight);
    if (r < 0) return c.channelId;
  }
  return last;
}

/** Share of latency-aware picks that go to a random channel of the tier instead of the fastest, so a channel
 * that was slow (or failing) and has recovered is measured again. */
export const EXPLORE_SHARE = 0.1;

/**
 * ChannelSelectionStrategy "latency": among the channels not tried yet and not cooling down after a failure,
 * the highest priority tier, and inside it a channel never measured for `model` on this instance first (by
 * weight), else — but for EXPLORE_SHARE of picks, a random one — the lowest expected latency: recent p50 ÷
 * (1 − error rate), so a fast channel that fails often loses to a slightly slower reliable one. Cooling
 * channels are picked only when nothing else is left (highest priority, the soonest to end its cooldown
 * first). One pass over the candidates to find the tier and one over it: O(channels).
 */
export function pickFastest(
  candidates: readonly Candidate[],
  tried: ReadonlySet<number>,
  stats: ChannelStats,
  model: string,
  now = Date.now(),
  random: () => number = Math.random,
): number | null {
  let top = -Infinity;
  let cooling: Candidate | null = null;
  let coolingEnd = Infinity;
  for (const c of candidates) {
    if (tried.has(c.channelId)) continue;
    const end = stats.coolUntil(c.channelId);
    if (end > now) {
      if (!cooling || c.priority > cooling.priority || (c.priority === cooling.priority && end < coolingEnd)) {
        cooling = c;
        coolingEnd = end;
      }
    } else if (c.priority > top) top = c.priority;
  }
  if (top === -Infinity) return cooling ? cooling.channelId : null;
  const measured = stats.model(model);
  const tier: Candidate[] = [];
  const unmeasured: Candidate[] = [];
  let best: Candidate | null = null;
  let bestScore = Infinity;
  for (const c of candidates) {
    if (c.priority !== top || tried.has(c.channelId) || stats.coolUntil(c.channelId) > now) continue;
    tier.push(c);
    const s = measured?.get(c.channelId);
    if (!s) {
      unmeasured.push(c);
      continue;
    }
    // A channel that has only failed so far (its cooldown over) comes last, but exploration still reaches it.
    const score = s.samples ? s.p50 / (1 - Math.min(s.errorRate, 0.9)) : Infinity;
    if (!best || score < bestScore) {
      best = c;
      bestScore = score;
    }
  }
  if (unmeasured.length) return pickChannel(unmeasured, tried, random);
  if (tier.length > 1 && random() < EXPLORE_SHARE) return tier[Math.floor(random() * tier.length)].channelId;
  return best!.channelId;
}

/** Retryable upstream outcomes: rate limits, server errors, timeouts (status 0 = no answer at all). */
/** Whether another channel may be tried after this upstream status: AutomaticRetryStatusCodes (new-api's
 * key; default 408, 429, 500–599), and always after no answer at all (status 0). */
export function retryable(status: number, options?: { get(key: string): string }): boolean {
  if (status === 0) return true;
  const list = options?.get("AutomaticRetryStatusCodes");
  if (list === undefined) return status === 408 || status === 429 || status >= 500;
  return statusInList(list, status);
}
