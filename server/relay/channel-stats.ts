// Recent latency and errors per channel, for ChannelSelectionStrategy "latency" (select.ts pickFastest).
// Kept in this process's memory only: each instance learns from the calls it makes (nothing is written or
// shared; a restart starts afresh, and the first calls measure every channel). Recorded and read only when
// the strategy is "latency"; with "weighted" nothing here runs.
//
// Per channel and model (a channel serving a small and a large model answers them at different speeds): the
// last WINDOW latencies of answered attempts (time from sending the request to the upstream's response
// headers: time to first byte for streams, about the whole answer for non-stream calls), their median kept up
// to date on each record (so a pick reads one number), and the last WINDOW outcomes (answered or failed) for
// the error rate. Per channel: the time until which it cools down after a failure (a dead upstream or key is
// dead for every model it serves).

export const WINDOW = 16;
/** Entries kept at most (channel × model pairs); past it the figures start afresh. */
const MAX_ENTRIES = 100_000;

export interface ChannelStat {
  /** median of the recent latencies (ms); NaN until the channel has answered once */
  p50: number;
  /** failed share of the recent attempts, 0..1 */
  errorRate: number;
  /** answered attempts recorded */
  samples: number;
}

interface Entry extends ChannelStat {
  lat: number[];
  latAt: number;
  outcomes: boolean[];
  outAt: number;
}

export class ChannelStats {
  private byModel = new Map<string, Map<number, Entry>>();
  private cooling = new Map<number, number>();
  private entries = 0;

  /** The figures of one model's channels (read once per pick). */
  model(model: string): ReadonlyMap<number, ChannelStat> | undefined {
    return this.byModel.get(model);
  }

  get(channelId: number, model: string): ChannelStat | undefined {
    return this.byModel.get(model)?.get(channelId);
  }

  /** Epoch ms until which the channel is tried only when nothing else is left; 0 when it is not cooling. */
  coolUntil(channelId: number): number {
    return this.cooling.get(channelId) ?? 0;
  }

  private entry(channelId: number, model: string): Entry {
    let m = this.byModel.get(model);
    if (!m) this.byModel.set(model, (m = new Map()));
    let e = m.get(channelId);
    if (!e) {
      if (++this.entries > MAX_ENTRIES) {
        this.byModel.clear();
        this.byModel.set(model, m);
        m.clear();
        this.entries = 1;
      }
      e = { p50: NaN, errorRate: 0, samples: 0, lat: [], latAt: 0, outcomes: [], outAt: 0 };
      m.set(channelId, e);
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

  /** The channel answered a call for `model` after `ms`: its latency counts and any cooldown ends. */
  succeeded(channelId: number, model: string, ms: number): void {
    const e = this.entry(channelId, model);
    if (e.lat.length < WINDOW) e.lat.push(ms);
    else e.lat[e.latAt] = ms;
    e.latAt = (e.latAt + 1) % WINDOW;
    e.samples++;
    const sorted = [...e.lat].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    e.p50 = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    this.cooling.delete(channelId);
    this.outcome(e, true);
  }

  /** The channel failed a call for `model` (a status another channel may not fail with, a timeout, no connection). */
  failed(channelId: number, model: string, cooldownMs: number, now = Date.now()): void {
    if (cooldownMs > 0) this.cooling.set(channelId, now + cooldownMs);
    else this.cooling.delete(channelId);
    this.outcome(this.entry(channelId, model), false);
  }
}

const perApp = new WeakMap<object, ChannelStats>();

/** The stats of one app (keyed by its option store: channel ids are per database, tests run several apps). */
export function channelStatsOf(app: object): ChannelStats {
  let s = perApp.get(app);
  if (!s) perApp.set(app, (s = new ChannelStats()));
  return s;
}
