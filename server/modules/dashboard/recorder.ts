// Collects per-user, per-model, per-hour usage in memory and writes it to quota_data every
// DataExportInterval minutes (and on shutdown), so the relay adds no database write per request for the
// dashboard. Rows are keyed by (user_id, model_name, hour); a flush adds to an existing row or inserts one.
// Two instances may each insert a row for the same key; the dashboard sums rows, so totals stay right.
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";

interface Pending { userId: number; username: string; model: string; hour: number; tokens: number; count: number; quota: number }

export class QuotaDataRecorder {
  private pending = new Map<string, Pending>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private flushing: Promise<void> | null = null;

  constructor(private deps: AppDeps) {}

  /** Counts one finished request. Does nothing when DataExportEnabled is off. */
  record(e: { userId: number; username: string; model: string; tokens: number; quota: number; at?: number }): void {
    if (!this.deps.options.bool("DataExportEnabled")) return;
    const hour = Math.floor((e.at ?? Date.now() / 1000) / 3600) * 3600;
    const key = `${e.userId}\u0000${e.model}\u0000${hour}`;
    const p = this.pending.get(key) ?? { userId: e.userId, username: e.username, model: e.model, hour, tokens: 0, count: 0, quota: 0 };
    p.tokens += e.tokens;
    p.count += 1;
    p.quota += e.quota;
    this.pending.set(key, p);
  }

  /** Starts the periodic flush; the interval is re-read from DataExportInterval (minutes) after each run. */
  start(): void {
    if (this.timer) return;
    const schedule = () => {
      const minutes = Math.max(1, this.deps.options.number("DataExportInterval", 5));
      this.timer = setTimeout(() => this.flush().catch((err) => console.error("quota_data flush failed:", err)).finally(schedule), minutes * 60_000);
      this.timer.unref?.();
    };
    schedule();
    this.deps.shutdownHooks.push(async () => {
      this.stop();
      await this.flush();
    });
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  get size(): number {
    return this.pending.size;
  }

  async flush(): Promise<void> {
    if (this.flushing) await this.flushing;
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending.clear();
    this.flushing = (async () => {
      let firstError: unknown = null;
      for (const p of batch) {
        try {
          await this.deps.db.transaction().execute(async (trx) => {
            const res = await trx.updateTable("quota_data").set({
              token_used: sql`token_used + ${p.tokens}`, count: sql`count + ${p.count}`, quota: sql`quota + ${p.quota}`,
            }).where("user_id", "=", p.userId).where("model_name", "=", p.model).where("created_at", "=", p.hour).executeTakeFirst();
            if (Number(res.numUpdatedRows) === 0) {
              await trx.insertInto("quota_data").values({
                user_id: p.userId, username: p.username, model_name: p.model, created_at: p.hour, token_used: p.tokens, count: p.count, quota: p.quota,
              }).execute();
            }
          });
        } catch (err) {
          // Keep what could not be written for the next flush instead of losing it.
          const key = `${p.userId}\u0000${p.model}\u0000${p.hour}`;
          const cur = this.pending.get(key);
          if (cur) { cur.tokens += p.tokens; cur.count += p.count; cur.quota += p.quota; } else this.pending.set(key, p);
          firstError ??= err;
        }
      }
      if (firstError) throw firstError;
    })();
    try {
      await this.flushing;
    } finally {
      this.flushing = null;
    }
  }
}

const recorders = new WeakMap<AppDeps, QuotaDataRecorder>();

/**
 * The process-wide recorder for these deps, started on first use (periodic flush plus a shutdown hook).
 * The relay calls `quotaRecorder(deps).record({...})` after settling a request.
 */
export function quotaRecorder(deps: AppDeps): QuotaDataRecorder {
  let r = recorders.get(deps);
  if (!r) {
    r = new QuotaDataRecorder(deps);
    r.start();
    recorders.set(deps, r);
  }
  return r;
}
