// Channel choice for one (group, model): the highest priority tier that still has a channel this request
// has not tried, then a weighted random pick inside that tier.
import { statusInList } from "../modules/channel/status-codes.ts";

export interface Candidate {
  channelId: number;
  priority: number;
  weight: number;
}

/** Picks a channel id, skipping `tried`; null when every candidate has failed already. */
export function pickChannel(candidates: readonly Candidate[], tried: ReadonlySet<number>, random: () => number = Math.random): number | null {
  let top = -Infinity;
  for (const c of candidates) if (!tried.has(c.channelId) && c.priority > top) top = c.priority;
  if (top === -Infinity) return null;
  const tier = candidates.filter((c) => c.priority === top && !tried.has(c.channelId));
  const total = tier.reduce((s, c) => s + Math.max(0, c.weight), 0);
  // All weights zero means "no preference": pick uniformly.
  if (total <= 0) return tier[Math.floor(random() * tier.length)].channelId;
  let r = random() * total;
  for (const c of tier) {
    r -= Math.max(0, c.weight);
    if (r < 0) return c.channelId;
  }
  return tier[tier.length - 1].channelId;
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
