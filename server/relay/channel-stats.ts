// Recent latency and errors per channel, for ChannelSelectionStrategy "latency" (select.ts pickFastest).
// Kept in this process's memory only: each instance learns from the calls it makes (nothing is written or
// shared; a restart starts afresh, and the first calls measure every channel). Recorded and read only when
// the strategy is "latency"; with "weighted" nothing here runs.
//
// Per channel: the last WINDOW latencies of answered attempts (time from sending the request to the
// upstream's response headers: time to first byte for streams, about the whole answer for non-stream calls),
// their median kept up to date on each record (so a pick reads one number), the last WINDOW outcomes
// (answered or failed) for the error rate, and the time until which the channel cools down after a failure.

export const WINDOW = 16;

export interface ChannelStat {
  /** median of the recent latencies (ms); NaN until the channel has answered once */
  p50: number;
  /** failed share of the recent attempts, 0..1 */
  errorRate: number;
  /** epoch ms until which the channel is tried only when nothing else is left; 0 when not cooling */
  coolUntil: number;
  samples: number;
}

interface Entry extends ChannelStat {
  lat: number[];
  latAt: number;
  outcomes: boolean[];
  outAt: number;
}

export class ChannelStats {
  private map = new Map<number, Entry>();

  get(channelId: number): ChannelStat | undefined {
    return this.map.get(channelId);
  }

  private entry(channelId: number): Entry {
    let e = this.map.get(channelId);
    if (!e) {
      if (this.map.size > 100_000) this.map.clear();
      e = { p50: NaN, errorRate: 0, coolUntil: 0, samples: 0, lat: [], latAt: 0, outcomes: [], outAt: 0 };
      this.map.set(channelId, e);
    }
    return e;
  }

  private outcome(e: Entry, ok: boolean): void {
    if (e.outcomes.length < WINDOW) e.outcomes.push(ok);
    else e.outcomes[e.outAt] = ok;
    e.outAt = (e.outAt + 1) % WINDOW;
    let failed = 0;
    for (const o of e.outcomes) if (!o) failed++;
    e.errorRate = failed / e.outcomes.length;
  }

  /** The channel answered after `ms`: its latency counts and any cooldown ends. */
  succeeded(channelId: number, ms: number): void {
    const e = this.entry(channelId);
    if (e.lat.length < WINDOW) e.lat.push(ms);
    else e.lat[e.latAt] = ms;
    e.latAt = (e.latAt + 1) % WINDOW;
    e.samples++;
    const sorted = [...e.lat].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    e.p50 = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    e.coolUntil = 0;
    this.outcome(e, true);
  }

  /** The channel failed (a status another channel may not fail with, a timeout, no connection). */
  failed(channelId: number, cooldownMs: number, now = Date.now()): void {
    const e = this.entry(channelId);
    e.coolUntil = cooldownMs > 0 ? now + cooldownMs : 0;
    this.outcome(e, false);
  }
}

const perApp = new WeakMap<object, ChannelStats>();

/** The stats of one app (keyed by its option store: channel ids are per database, tests run several apps). */
export function channelStatsOf(app: object): ChannelStats {
  let s = perApp.get(app);
  if (!s) perApp.set(app, (s = new ChannelStats()));
  return s;
}
