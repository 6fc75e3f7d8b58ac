// Write-behind of everything the relay records after a call: consume/error logs, per-user, per-token
// and per-channel counters, the hourly quota_data rollup, and the settlement of each call's hold. The
// response never waits for these; they are written in one transaction every BATCH_UPDATE_INTERVAL ms and
// on graceful shutdown. A call's settlement (its debit, or the deletion of its hold row with the refund of
// what it did not use) goes into the same transaction as its log, so after a crash every unit that left a
// balance is either in a log or in a hold row that the ledger refunds (server/relay/core/ledger.ts).
// This rollup is the only writer of quota_data (the dashboard's source): it follows DataExportEnabled
// (off: nothing is gathered) and DataExportInterval (rollups gather that long between writes, which is
// the point of the option: fewer quota_data writes). Two instances may each insert a row for one
// (user, model, hour); the dashboard sums rows, so totals stay right.
// Balances are updated tokens first, then users, each in id order: the same order as the ledger's
// transactions, so concurrent writers on PostgreSQL and MySQL cannot deadlock.
import type { Database } from "../../db/index.ts";
import { dialectOf } from "../../db/index.ts";
import { insertRows } from "../../db/bulk.ts";
import type { NewLog } from "../../db/schema.ts";
import type { DataExportPolicy } from "../modules/dashboard/export.ts";

interface Rollup { user_id: number; username: string; model_name: string; created_at: number; token_used: number; count: number; quota: number }

/** One settled call's counters and log. */
export interface UsageEntry { userId: number; username: string; tokenId: number; channelId: number; model: string; quota: number; tokens: number; at: number }
export interface SettledEntry { usage: UsageEntry; log: NewLog | null }

/** The part of a ledger hold the write-behind settles (see server/relay/core/ledger.ts). */
interface HeldQuota { id: string | null; userId: number; tokenId: number; amount: number }
interface HoldSettlement { id: string; userId: number; tokenId: number; amount: number; taken: number }

const LOG_BATCH = 200;
/** SQLite runs statements on the event loop's own thread: smaller inserts, and a yield between them. */
const SQLITE_LOG_BATCH = 64;
const ID_BATCH = 500;
/** SQLite: the longest run of synchronous writing before the flush lets requests in (a whole second's
 * batch written in one go stalled every request for up to ~100 ms). */
const SLICE_MS = 0.5;

/** A function to await between statements: on SQLite it yields to the event loop once SLICE_MS of work
 * has run since the last yield; on PostgreSQL and MySQL statements are I/O already, so it does nothing. */
function pacer(sqlite: boolean): () => Promise<void> {
  if (!sqlite) return async () => {};
  let since = performance.now();
  return async () => {
    if (performance.now() - since < SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    since = performance.now();
  };
}

interface Batch {
  logs: NewLog[];
  users: Map<number, { quota: number; count: number }>;
  tokens: Map<number, number>;
  channels: Map<number, number>;
  rollups: Map<string, Rollup>;
  userDebits: Map<number, number>;
  tokenDebits: Map<number, number>;
  holds: HoldSettlement[];
}

const add = (m: Map<number, number>, k: number, v: number) => m.set(k, (m.get(k) ?? 0) + v);

export class WriteBehind {
  private logs: NewLog[] = [];
  private users = new Map<number, { quota: number; count: number }>();
  private tokens = new Map<number, number>();
  private channels = new Map<number, number>();
  private rollups = new Map<string, Rollup>();
  /** SQLite: quota settled calls have spent that the database does not show yet, written with their logs. */
  private userDebits = new Map<number, number>();
  private tokenDebits = new Map<number, number>();
  /** SQLite: the holds of running calls (memory reservations). */
  private userReserved = new Map<number, number>();
  private tokenReserved = new Map<number, number>();
  /** Debits of the batch being written: still invisible to a reader outside the write until it commits. */
  private userWriting = new Map<number, number>();
  private tokenWriting = new Map<number, number>();
  /** PostgreSQL / MySQL: settled hold rows to delete (and refund the unused part of) with their logs. */
  private holds: HoldSettlement[] = [];
  private pending = new Set<Promise<unknown>>();
  /** Streamed replies still being read from upstream: their settlement is not even tracked yet. */
  private streams = new Set<Promise<void>>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private flushing: Promise<void> | null = null;
  private rollupsWrittenAt = Date.now();
  /** Hears which users' and tokens' balances a flush has just committed (the ledger drops its kept rows). */
  onCommitted: ((users: Iterable<number>, tokens: Iterable<number>) => void) | null = null;

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

  /** What a user or token has reserved or spent beyond what the database shows (SQLite's memory holds). */
  unsettled(kind: "user" | "token", id: number): number {
    return kind === "user"
      ? (this.userDebits.get(id) ?? 0) + (this.userReserved.get(id) ?? 0) + (this.userWriting.get(id) ?? 0)
      : (this.tokenDebits.get(id) ?? 0) + (this.tokenReserved.get(id) ?? 0) + (this.tokenWriting.get(id) ?? 0);
  }

  /** A call starts on a memory hold: its amount counts against the balances until it is settled. */
  reserve(userId: number, tokenId: number, amount: number): void {
    add(this.userReserved, userId, amount);
    if (tokenId) add(this.tokenReserved, tokenId, amount);
  }

  unreserve(userId: number, tokenId: number, amount: number): void {
    drop(this.userReserved, userId, amount);
    if (tokenId) drop(this.tokenReserved, tokenId, amount);
  }

  /** A call is settled: its hold becomes `taken` and its records are queued, all for the same transaction. */
  settled(hold: HeldQuota, taken: number, entry: SettledEntry): void {
    if (hold.id) {
      this.holds.push({ id: hold.id, userId: hold.userId, tokenId: hold.tokenId, amount: hold.amount, taken });
    } else {
      this.unreserve(hold.userId, hold.tokenId, hold.amount);
      if (taken > 0) {
        add(this.userDebits, hold.userId, taken);
        if (hold.tokenId) add(this.tokenDebits, hold.tokenId, taken);
      }
    }
    this.usage(entry.usage);
    if (entry.log) this.logs.push(entry.log);
  }

  log(entry: NewLog): void {
    this.logs.push(entry);
  }

  /** One settled call: quota to the user's, token's and channel's used_quota, a request to the user, and the hourly rollup. */
  usage(u: UsageEntry): void {
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
    return this.logs.length + this.users.size + this.tokens.size + this.channels.size + this.rollups.size + this.userDebits.size + this.tokenDebits.size + this.holds.length;
  }

  private isEmpty(withRollups: boolean) {
    return this.logs.length === 0 && this.users.size === 0 && this.tokens.size === 0 && this.channels.size === 0
      && (!withRollups || this.rollups.size === 0) && this.userDebits.size === 0 && this.tokenDebits.size === 0 && this.holds.length === 0;
  }

  private async write(withRollups: boolean): Promise<void> {
    const batch: Batch = {
      logs: this.logs, users: this.users, tokens: this.tokens, channels: this.channels, rollups: withRollups ? this.rollups : new Map(),
      userDebits: this.userDebits, tokenDebits: this.tokenDebits, holds: this.holds,
    };
    this.logs = [];
    this.users = new Map();
    this.tokens = new Map();
    this.channels = new Map();
    if (withRollups) this.rollups = new Map();
    this.userDebits = new Map();
    this.tokenDebits = new Map();
    this.holds = [];
    for (const [id, q] of batch.userDebits) add(this.userWriting, id, q);
    for (const [id, q] of batch.tokenDebits) add(this.tokenWriting, id, q);
    try {
      await this.db.transaction().execute((trx) => this.writeBatch(trx, batch));
      // Synchronously with dropping `writing` below: a balance read before this commit is never used after it.
      this.onCommitted?.(batch.userDebits.keys(), batch.tokenDebits.keys());
      if (withRollups) this.rollupsWrittenAt = Date.now();
    } catch (e) {
      // Nothing is lost on a failed write: the batch goes back in front of whatever arrived meanwhile.
      this.requeue(batch);
      throw e;
    } finally {
      for (const [id, q] of batch.userDebits) drop(this.userWriting, id, q);
      for (const [id, q] of batch.tokenDebits) drop(this.tokenWriting, id, q);
    }
  }

  private async writeBatch(trx: Database, batch: Batch): Promise<void> {
    const sqlite = dialectOf(trx) === "sqlite";
    const pace = pacer(sqlite);
    await insertRows(trx, "logs", batch.logs as Record<string, unknown>[], sqlite ? SQLITE_LOG_BATCH : LOG_BATCH, pace);
    // Balance changes: memory debits, and for hold rows the unused part refunded — or, for a row another
    // instance already refunded as abandoned (this one stalled past the lease), the cost charged again.
    const userDelta = new Map<number, number>();
    const tokenDelta = new Map<number, number>();
    for (const [id, q] of batch.userDebits) add(userDelta, id, -q);
    for (const [id, q] of batch.tokenDebits) add(tokenDelta, id, -q);
    const alive = await claimHolds(trx, batch.holds.map((h) => h.id));
    for (const h of batch.holds) {
      const change = alive.has(h.id) ? h.amount - h.taken : -h.taken;
      if (change === 0) continue;
      add(userDelta, h.userId, change);
      if (h.tokenId) add(tokenDelta, h.tokenId, change);
    }
    const now = Math.floor(Date.now() / 1000);
    for (const id of sortedKeys(batch.tokens, tokenDelta)) {
      const used = batch.tokens.get(id);
      const delta = tokenDelta.get(id) ?? 0;
      if (used === undefined && delta === 0) continue;
      await trx.updateTable("tokens").set((eb) => ({
        ...(used !== undefined ? { used_quota: eb("used_quota", "+", used), accessed_time: now } : {}),
        ...(delta ? { remain_quota: eb("remain_quota", "+", delta) } : {}),
      })).where("id", "=", id).execute();
      await pace();
    }
    for (const id of sortedKeys(batch.users, userDelta)) {
      const u = batch.users.get(id);
      const delta = userDelta.get(id) ?? 0;
      if (!u && delta === 0) continue;
      await trx.updateTable("users").set((eb) => ({
        ...(u ? { used_quota: eb("used_quota", "+", u.quota), request_count: eb("request_count", "+", u.count) } : {}),
        ...(delta ? { quota: eb("quota", "+", delta) } : {}),
      })).where("id", "=", id).execute();
      await pace();
    }
    for (const id of [...batch.channels.keys()].sort((a, b) => a - b)) {
      const q = batch.channels.get(id)!;
      await trx.updateTable("channels").set((eb) => ({ used_quota: eb("used_quota", "+", q) })).where("id", "=", id).execute();
      await pace();
    }
    for (const r of batch.rollups.values()) {
      const res = await trx.updateTable("quota_data")
        .set((eb) => ({ token_used: eb("token_used", "+", r.token_used), count: eb("count", "+", r.count), quota: eb("quota", "+", r.quota) }))
        .where("user_id", "=", r.user_id).where("model_name", "=", r.model_name).where("created_at", "=", r.created_at)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) await trx.insertInto("quota_data").values(r).execute();
      await pace();
    }
  }

  private requeue(b: Batch) {
    for (const [id, q] of b.userDebits) add(this.userDebits, id, q);
    for (const [id, q] of b.tokenDebits) add(this.tokenDebits, id, q);
    this.holds = [...b.holds, ...this.holds];
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

function drop(m: Map<number, number>, k: number, v: number) {
  const left = (m.get(k) ?? 0) - v;
  if (left === 0) m.delete(k);
  else m.set(k, left);
}

function sortedKeys(a: Map<number, unknown>, b: Map<number, unknown>): number[] {
  return [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => x - y);
}

/** Deletes the settled hold rows and answers which of them still existed (a row an instance refunded as
 * abandoned is gone). PostgreSQL and SQLite say so with RETURNING; MySQL locks and reads them first. */
async function claimHolds(trx: Database, ids: string[]): Promise<Set<string>> {
  const alive = new Set<string>();
  if (ids.length === 0) return alive;
  const mysql = dialectOf(trx) === "mysql";
  for (let i = 0; i < ids.length; i += ID_BATCH) {
    const part = ids.slice(i, i + ID_BATCH);
    if (mysql) {
      for (const r of await trx.selectFrom("quota_holds").select("id").where("id", "in", part).forUpdate().execute()) alive.add(r.id);
      await trx.deleteFrom("quota_holds").where("id", "in", part).execute();
    } else {
      for (const r of await trx.deleteFrom("quota_holds").where("id", "in", part).returning("id").execute()) alive.add(r.id);
    }
  }
  return alive;
}
