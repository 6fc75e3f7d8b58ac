// Write-behind of everything the relay records after a call: consume/error logs, per-user, per-token
// and per-channel counters, and the hourly quota_data rollup. The response never waits for these;
// they are written in one transaction every BATCH_UPDATE_INTERVAL ms and on graceful shutdown.
// This rollup is the only writer of quota_data (the dashboard's source): it follows DataExportEnabled
// (off: nothing is gathered) and DataExportInterval (rollups gather that long between writes, which is
// the point of the option: fewer quota_data writes). Two instances may each insert a row for one
// (user, model, hour); the dashboard sums rows, so totals stay right.
// On SQLite it also carries the debits of "trusted" calls (a balance far above the call's hold, see
// server/relay/billing.ts): each flush applies them as one clamped UPDATE per user and token.
import type { Database } from "../../db/index.ts";
import { sql } from "kysely";
import { insertRows } from "../../db/bulk.ts";
import type { NewLog } from "../../db/schema.ts";
import type { DataExportPolicy } from "../modules/dashboard/export.ts";

interface Rollup { user_id: number; username: string; model_name: string; created_at: number; token_used: number; count: number; quota: number }

const LOG_BATCH = 200;

interface Batch {
  logs: NewLog[];
  users: Map<number, { quota: number; count: number }>;
  tokens: Map<number, number>;
  channels: Map<number, number>;
  rollups: Map<string, Rollup>;
  userDebits: Map<number, number>;
  tokenDebits: Map<number, number>;
}

const add = (m: Map<number, number>, k: number, v: number) => m.set(k, (m.get(k) ?? 0) + v);

export class WriteBehind {
  private logs: NewLog[] = [];
  private users = new Map<number, { quota: number; count: number }>();
  private tokens = new Map<number, number>();
  private channels = new Map<number, number>();
  private rollups = new Map<string, Rollup>();
  /** Quota trusted calls have spent (or, while running, hold) that the database does not show yet. */
  private userDebits = new Map<number, number>();
  private tokenDebits = new Map<number, number>();
  private userReserved = new Map<number, number>();
  private tokenReserved = new Map<number, number>();
  private pending = new Set<Promise<unknown>>();
  /** Streamed replies still being read from upstream: their settlement is not even tracked yet. */
  private streams = new Set<Promise<void>>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private flushing: Promise<void> | null = null;
  private rollupsWrittenAt = Date.now();

  constructor(private db: Database, private intervalMs: number, private dataExport: DataExportPolicy) {}

  start(): void {
    if (this.timer || this.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.flush().catch((e) => console.error("write-behind flush failed:", e.message)), this.intervalMs);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush(true);
  }

  /** Work (a settlement) whose results must land before the next flush completes. */
  track(p: Promise<unknown>): void {
    this.pending.add(p);
    p.catch((e) => console.error("settlement failed:", e?.message ?? e)).finally(() => this.pending.delete(p));
  }

  /** A streamed reply has started; call the returned function once its settlement is tracked. */
  streamOpened(): () => void {
    let end!: () => void;
    const p = new Promise<void>((resolve) => (end = resolve));
    this.streams.add(p);
    return () => {
      this.streams.delete(p);
      end();
    };
  }

  /** Waits (at most maxWaitMs) for open streams to settle, then flushes. A client can have read a
   * stream's last event before the upstream closes it, so only this makes its charge observable. */
  async drain(maxWaitMs: number): Promise<void> {
    if (this.streams.size > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, maxWaitMs)));
      await Promise.race([Promise.allSettled([...this.streams]), expired]);
      clearTimeout(timer);
    }
    await this.flush(true);
  }

  /** What a user or token has spent beyond what the database (and so a cached balance) shows. */
  unsettled(kind: "user" | "token", id: number): number {
    return kind === "user"
      ? (this.userDebits.get(id) ?? 0) + (this.userReserved.get(id) ?? 0)
      : (this.tokenDebits.get(id) ?? 0) + (this.tokenReserved.get(id) ?? 0);
  }

  /** A trusted call starts: its estimate counts against the balance until it is debited. */
  reserve(userId: number, tokenId: number, amount: number): void {
    add(this.userReserved, userId, amount);
    if (tokenId) add(this.tokenReserved, tokenId, amount);
  }

  /** A trusted call ends: drop its reservation and queue the real cost for the next flush. */
  debit(userId: number, tokenId: number, reserved: number, cost: number): void {
    add(this.userReserved, userId, -reserved);
    if (tokenId) add(this.tokenReserved, tokenId, -reserved);
    if (cost <= 0) return;
    add(this.userDebits, userId, cost);
    if (tokenId) add(this.tokenDebits, tokenId, cost);
  }

  log(entry: NewLog): void {
    this.logs.push(entry);
  }

  /** One settled call: quota to the user's, token's and channel's used_quota, a request to the user, and the hourly rollup. */
  usage(u: { userId: number; username: string; tokenId: number; channelId: number; model: string; quota: number; tokens: number; at: number }): void {
    const user = this.users.get(u.userId) ?? { quota: 0, count: 0 };
    user.quota += u.quota;
    user.count += 1;
    this.users.set(u.userId, user);
    if (u.tokenId) this.tokens.set(u.tokenId, (this.tokens.get(u.tokenId) ?? 0) + u.quota);
    if (u.channelId) this.channels.set(u.channelId, (this.channels.get(u.channelId) ?? 0) + u.quota);
    if (!this.dataExport.enabled()) return;
    const hour = u.at - (u.at % 3600);
    const key = `${u.userId}\n${u.model}\n${hour}`;
    const r = this.rollups.get(key) ?? { user_id: u.userId, username: u.username, model_name: u.model, created_at: hour, token_used: 0, count: 0, quota: 0 };
    r.token_used += u.tokens;
    r.count += 1;
    r.quota += u.quota;
    this.rollups.set(key, r);
  }

  /** `all`: write the rollups too even if DataExportInterval has not passed (shutdown, drain). */
  async flush(all = false): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
    // One flush at a time: a second caller waits for the running one, then writes what came after it.
    while (this.flushing) await this.flushing;
    const rollups = all || Date.now() - this.rollupsWrittenAt >= this.dataExport.intervalMs();
    if (this.isEmpty(rollups)) return;
    this.flushing = this.write(rollups).finally(() => (this.flushing = null));
    await this.flushing;
  }

  /** Rows and counters waiting for the next flush (the metrics backlog gauge). */
  backlog(): number {
    return this.logs.length + this.users.size + this.tokens.size + this.channels.size + this.rollups.size + this.userDebits.size + this.tokenDebits.size;
  }

  private isEmpty(withRollups: boolean) {
    return this.logs.length === 0 && this.users.size === 0 && this.tokens.size === 0 && this.channels.size === 0
      && (!withRollups || this.rollups.size === 0) && this.userDebits.size === 0 && this.tokenDebits.size === 0;
  }

  private async write(withRollups: boolean): Promise<void> {
    const batch: Batch = {
      logs: this.logs, users: this.users, tokens: this.tokens, channels: this.channels, rollups: withRollups ? this.rollups : new Map(),
      userDebits: this.userDebits, tokenDebits: this.tokenDebits,
    };
    this.logs = [];
    this.users = new Map();
    this.tokens = new Map();
    this.channels = new Map();
    if (withRollups) this.rollups = new Map();
    this.userDebits = new Map();
    this.tokenDebits = new Map();
    try {
      await this.db.transaction().execute(async (trx) => {
        await insertRows(trx, "logs", batch.logs as Record<string, unknown>[], LOG_BATCH);
        for (const [id, u] of batch.users) {
          await trx.updateTable("users")
            .set((eb) => ({ used_quota: eb("used_quota", "+", u.quota), request_count: eb("request_count", "+", u.count) }))
            .where("id", "=", id).execute();
        }
        const now = Math.floor(Date.now() / 1000);
        for (const [id, q] of batch.tokens) {
          await trx.updateTable("tokens").set((eb) => ({ used_quota: eb("used_quota", "+", q), accessed_time: now })).where("id", "=", id).execute();
        }
        // Clamped at zero: trusted calls were admitted on a balance far above their cost, so only a
        // balance drained elsewhere within one cache period could be short, and it never goes negative.
        for (const [id, q] of batch.userDebits) {
          await trx.updateTable("users").set({ quota: sql<number>`case when quota >= ${q} then quota - ${q} else 0 end` }).where("id", "=", id).execute();
        }
        for (const [id, q] of batch.tokenDebits) {
          await trx.updateTable("tokens").set({ remain_quota: sql<number>`case when remain_quota >= ${q} then remain_quota - ${q} else 0 end` })
            .where("id", "=", id).where("unlimited_quota", "=", false).execute();
        }
        for (const [id, q] of batch.channels) {
          await trx.updateTable("channels").set((eb) => ({ used_quota: eb("used_quota", "+", q) })).where("id", "=", id).execute();
        }
        for (const r of batch.rollups.values()) {
          const res = await trx.updateTable("quota_data")
            .set((eb) => ({ token_used: eb("token_used", "+", r.token_used), count: eb("count", "+", r.count), quota: eb("quota", "+", r.quota) }))
            .where("user_id", "=", r.user_id).where("model_name", "=", r.model_name).where("created_at", "=", r.created_at)
            .executeTakeFirst();
          if (Number(res.numUpdatedRows) === 0) await trx.insertInto("quota_data").values(r).execute();
        }
      });
      if (withRollups) this.rollupsWrittenAt = Date.now();
    } catch (e) {
      // Nothing is lost on a failed write: the batch goes back in front of whatever arrived meanwhile.
      this.requeue(batch);
      throw e;
    }
  }

  private requeue(b: Batch) {
    for (const [id, q] of b.userDebits) add(this.userDebits, id, q);
    for (const [id, q] of b.tokenDebits) add(this.tokenDebits, id, q);
    this.logs = [...b.logs, ...this.logs];
    for (const [id, u] of b.users) {
      const cur = this.users.get(id) ?? { quota: 0, count: 0 };
      this.users.set(id, { quota: cur.quota + u.quota, count: cur.count + u.count });
    }
    for (const [id, q] of b.tokens) this.tokens.set(id, (this.tokens.get(id) ?? 0) + q);
    for (const [id, q] of b.channels) this.channels.set(id, (this.channels.get(id) ?? 0) + q);
    for (const [k, r] of b.rollups) {
      const cur = this.rollups.get(k);
      this.rollups.set(k, cur ? { ...cur, token_used: cur.token_used + r.token_used, count: cur.count + r.count, quota: cur.quota + r.quota } : r);
    }
  }
}
