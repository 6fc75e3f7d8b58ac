// Write-behind of everything the relay records after a call: consume/error logs, per-user, per-token
// and per-channel counters, the hourly quota_data rollup, and the settlement of each call's hold. The
// response never waits for these; they are written in one transaction every BATCH_UPDATE_INTERVAL ms and
// on graceful shutdown. A call's settlement (its debit on SQLite; on PostgreSQL and MySQL its cost moved
// out of the lease row that paid for it) goes into the same transaction as its log, so after a crash every
// unit that left a balance is either in a log or in a lease row that the ledger refunds
// (server/relay/core/ledger.ts).
// This rollup is the only writer of quota_data (the dashboard's source): it follows DataExportEnabled
// (off: nothing is gathered) and DataExportInterval (rollups gather that long between writes, which is
// the point of the option: fewer quota_data writes). Two instances may each insert a row for one
// (user, model, hour); the dashboard sums rows, so totals stay right.
// Balances are updated tokens first, then users, each in id order, then lease rows: the same order as the
// ledger's top-ups, so concurrent writers on PostgreSQL and MySQL cannot deadlock.
// The transactions run on a worker thread's own connection, off the event loop: SQLite's worker with a database
// file (infra/sqlite-worker.ts), PostgreSQL's and MySQL's (infra/sql-worker.ts). The statements are compiled
// here, so the worker and the main-connection fallback write the same SQL.
import type { Database } from "../../db/index.ts";
import { dialectOf } from "../../db/index.ts";
import { CompiledQuery } from "kysely";
import { compileInserts, insertRows, RowBatch } from "../../db/bulk.ts";
import { updateStatement, type SetTerm } from "../../db/update-text.ts";
import type { Dialect } from "../../db/dialect.ts";
import { workerFor, writeOffLoop, type WorkerStatement } from "../infra/statement-worker.ts";
import type { Journal, JournalRecord, JournalUsage } from "./journal.ts";
import type { NewLog } from "../../db/schema.ts";
import type { DataExportPolicy } from "../modules/dashboard/export.ts";

interface Rollup {
  user_id: number;
  username: string;
  model_name: string;
  created_at: number;
  token_used: number;
  count: number;
  quota: number;
}

/** One settled call's counters and log. */
export interface UsageEntry {
  userId: number;
  username: string;
  tokenId: number;
  channelId: number;
  model: string;
  quota: number;
  tokens: number;
  at: number;
}
export interface SettledEntry {
  usage: UsageEntry;
  log: NewLog | null;
}

/** The part of a ledger hold the write-behind settles (see server/relay/core/ledger.ts): a memory
 * reservation (SQLite, `lease` null) or a call paid from the lease row `lease`. */
interface HeldQuota {
  lease: { readonly id: string } | null;
  userId: number;
  tokenId: number;
  amount: number;
}
/** What the settled calls of one lease row spent: moved out of the row in the same transaction as their logs. */
export interface LeaseSpend {
  userId: number;
  tokenId: number;
  taken: number;
  calls: number;
}

/** SQLite on the main connection runs statements on the event loop's own thread: smaller inserts, and a
 * yield between them. */
const SQLITE_LOG_BATCH = 64;
/** SQLite: the longest run of synchronous writing before the flush lets requests in (a whole second's
 * batch written in one go stalled every request for up to ~100 ms). */
const SLICE_MS = 0.5;
/** Records per transaction. A flush writes its records in slices of this many, each slice one transaction
 * holding its logs together with its debits and counters (so the books balance after a crash between two),
 * which bounds how long a flush holds SQLite's write lock against the main connection's other writes. */
export const SLICE_RECORDS = 256;
/** PostgreSQL and MySQL: no lock to bound, and each transaction is several round trips and a WAL flush;
 * with 256 records per transaction PostgreSQL fell behind at ~17,000 calls/s. Their logs still go in
 * INSERTs of SLICE_RECORDS rows: the driver encodes a statement's parameters in one piece on the event loop,
 * and 2,048-row statements stalled it for several milliseconds. */
export const SERVER_SLICE_RECORDS = 1024;
/**
 * Records waiting to be written beyond which new calls wait (WriteBehind.room) until the writer is back
 * under BACKLOG_RESUME: when the database cannot write as fast as calls settle, calls slow down to its pace
 * instead of the gateway's memory growing without bound (~1 KB per record).
 */
export const BACKLOG_LIMIT = 60_000;
const BACKLOG_RESUME = 30_000;
/** The longest a call waits for the writer: a database that stopped writing must not stop the relay. */
const BACKLOG_WAIT_MS = 10_000;
/** Slices the write worker failed and the main connection then committed, in a row, before the worker is retired. */
export const WORKER_STRIKES = 3;

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

/** Records written in one transaction: logs, the counters of their calls and the debits that pay for them. */
interface Slice {
  logs: RowBatch;
  users: Map<number, { quota: number; count: number }>;
  tokens: Map<number, number>;
  channels: Map<number, number>;
  userDebits: Map<number, number>;
  tokenDebits: Map<number, number>;
  leases: Map<string, LeaseSpend>;
  records: number;
  /** Which write this slice went out with (WriteBehind.writesStarted when its write began). */
  writeSeq: number;
  /** Its write receipt in the database and its name in the journal (server/jobs/journal.ts). */
  id: string;
}

/** Slice ids: this process's prefix and a counter. */
const SLICE_LIFE = crypto.randomUUID().slice(0, 13);
let sliceCount = 0;

const newSlice = (id = `${SLICE_LIFE}-${++sliceCount}`): Slice => ({
  logs: new RowBatch(),
  users: new Map(),
  tokens: new Map(),
  channels: new Map(),
  userDebits: new Map(),
  tokenDebits: new Map(),
  leases: new Map(),
  records: 0,
  writeSeq: 0,
  id,
});

/** Write receipts are kept this long (seconds): longer than any journal waits for its replay. */
export const RECEIPT_RETENTION_SECONDS = 7 * 86_400;
const RECEIPT_PRUNE_EVERY_MS = 3600_000;

/** The database refused a slice's receipt as a duplicate: that slice was committed before (its answer was lost). */
function alreadyCommitted(e: unknown, id: string): boolean {
  const m = String((e as Error)?.message ?? e);
  return /duplicate|unique/i.test(m) && (m.includes("write_receipts") || m.includes(id));
}

const add = (m: Map<number, number>, k: number, v: number) => m.set(k, (m.get(k) ?? 0) + v);

export class WriteBehind {
  /** Slices in a row the worker could not commit and the main connection could (writeOne). */
  private workerStrikes = 0;
  /** Full slices waiting for the next flush, oldest first, and the one filling up. */
  private slices: Slice[] = [];
  private current = newSlice();
  private rollups = new Map<string, Rollup>();
  /** Per user, the rollup its last call counted in (an entry of `rollups`; cleared whenever that map changes hands). */
  private lastRollup = new Map<number, { model: string; r: Rollup }>();
  /** SQLite: quota settled calls have spent that the database does not show yet (all unwritten slices). */
  private userDebits = new Map<number, number>();
  private tokenDebits = new Map<number, number>();
  /** SQLite: the holds of running calls (memory reservations). */
  private userReserved = new Map<number, number>();
  private tokenReserved = new Map<number, number>();
  /** Debits of the slices being written: still invisible to a reader outside the write until they commit. */
  private userWriting = new Map<number, number>();
  private tokenWriting = new Map<number, number>();
  private pending = new Set<Promise<unknown>>();
  /** Streamed replies still being read from upstream (their settlement is not even tracked yet), and drain()s
   * waiting for the last of them to close. */
  private openStreams = 0;
  private streamsClosed: (() => void)[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;
  private flushing: Promise<void> | null = null;
  private rollupsWrittenAt = Date.now();
  /**
   * Hears the debits a slice has just committed (id → quota taken from the user's and the token's balance) and
   * the write it went out with: a balance row read before that write began lacks them (the ledger takes them
   * off its kept row), one read since may or may not hold them (it reads that row again).
   */
  onCommitted: ((users: Map<number, number>, tokens: Map<number, number>, writeSeq: number) => void) | null = null;
  private started = 0;
  /** Slice writes begun so far: a reader notes it with what it reads (see onCommitted). Read-only outside. */
  get writesStarted(): number {
    return this.started;
  }
  /** Hears which lease rows' spends a flush has just committed, and which of those rows it found gone. */
  onLeasesCommitted: ((spends: Map<string, LeaseSpend>, gone: Set<string>) => void) | null = null;
  private readonly sliceRecords: number;
  /** A full slice is written at once (writeFull). */
  private readonly eager: boolean;
  /** Records added and not yet committed (the backlog room() watches). */
  private unwritten = 0;
  private roomWaiters: (() => void)[] = [];

  private receiptsPrunedAt = Date.now();

  constructor(
    private db: Database,
    private intervalMs: number,
    private dataExport: DataExportPolicy,
    private journal: Journal | null = null,
  ) {
    this.eager = dialectOf(db) === "sqlite";
    this.sliceRecords = this.eager ? SLICE_RECORDS : SERVER_SLICE_RECORDS;
  }

  /**
   * null when the writer keeps up; else a promise that resolves once its backlog is back under
   * BACKLOG_RESUME (or after BACKLOG_WAIT_MS): a call about to start waits for it (core/admit.ts).
   */
  room(): Promise<void> | null {
    if (this.unwritten < BACKLOG_LIMIT) return null;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, BACKLOG_WAIT_MS);
      this.roomWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
      // Waiting for the timer's next tick would leave the writer idle while calls queue.
      if (!this.flushing) void this.flush().catch((e) => console.error("write-behind flush failed:", e.message));
    });
  }

  start(): void {
    if (this.timer || this.intervalMs <= 0) return;
    this.timer = setInterval(
      () => void this.flush().catch((e) => console.error("write-behind flush failed:", e.message)),
      this.intervalMs,
    );
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

  /** A streamed reply has started; call the returned function once its settlement is tracked. A count, not a
   * promise per stream: drain() only needs to know when none is open. */
  streamOpened(): () => void {
    this.openStreams++;
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      if (--this.openStreams === 0) for (const settled of this.streamsClosed.splice(0)) settled();
    };
  }

  /** Waits (at most maxWaitMs) for open streams to settle, then flushes. A client can have read a
   * stream's last event before the upstream closes it, so only this makes its charge observable. */
  async drain(maxWaitMs: number): Promise<void> {
    if (this.openStreams > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, maxWaitMs)));
      await Promise.race([new Promise<void>((resolve) => this.streamsClosed.push(resolve)), expired]);
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
    const s = this.current;
    if (this.journal) {
      this.journal.append(s.id, [
        "s",
        s.id,
        hold.lease?.id ?? null,
        hold.userId,
        hold.tokenId,
        taken,
        usageRecord(entry.usage),
        (entry.log as Record<string, unknown> | null) ?? null,
      ]);
    }
    this.apply(s, hold, taken, entry);
  }

  /** A settled call's share of slice `s` (settled(), and a journal's replay). */
  private apply(s: Slice, hold: HeldQuota, taken: number, entry: SettledEntry): void {
    if (hold.lease) {
      const spend = s.leases.get(hold.lease.id);
      if (spend) {
        spend.taken += taken;
        spend.calls++;
      } else {
        s.leases.set(hold.lease.id, { userId: hold.userId, tokenId: hold.tokenId, taken, calls: 1 });
      }
    } else {
      this.unreserve(hold.userId, hold.tokenId, hold.amount);
      if (taken > 0) {
        add(s.userDebits, hold.userId, taken);
        add(this.userDebits, hold.userId, taken);
        if (hold.tokenId) {
          add(s.tokenDebits, hold.tokenId, taken);
          add(this.tokenDebits, hold.tokenId, taken);
        }
      }
    }
    this.count(s, entry.usage);
    if (entry.log) s.logs.add(entry.log as Record<string, unknown>);
    if (s === this.current) this.grew(s);
  }

  log(entry: NewLog): void {
    this.journal?.append(this.current.id, ["l", this.current.id, entry as Record<string, unknown>]);
    this.current.logs.add(entry as Record<string, unknown>);
    this.grew(this.current);
  }

  /** One settled call without a log: its counters (see count). */
  usage(u: UsageEntry): void {
    this.journal?.append(this.current.id, ["u", this.current.id, usageRecord(u)]);
    this.count(this.current, u);
    this.grew(this.current);
  }

  /**
   * Queues the records a crashed life left in its journal, each in the slice it was in then (so a slice the
   * database has already is recognised by its receipt and skipped), and writes them. Nothing is reserved:
   * the holds of that life are gone with it; only what its calls cost is charged.
   */
  async replay(records: JournalRecord[]): Promise<{ slices: number; records: number }> {
    const byId = new Map<string, Slice>();
    const sliceOf = (id: string) => {
      let s = byId.get(id);
      if (!s) byId.set(id, (s = newSlice(id)));
      return s;
    };
    for (const r of records) {
      const s = sliceOf(r[1]);
      if (r[0] === "s") {
        const [, , lease, userId, tokenId, taken, u, log] = r;
        this.apply(s, { lease: lease ? { id: lease } : null, userId, tokenId, amount: 0 }, taken, {
          usage: usageEntry(u),
          log: log as NewLog | null,
        });
      } else if (r[0] === "l") s.logs.add(r[2]);
      else this.count(s, usageEntry(r[2]));
      s.records++;
      this.unwritten++;
    }
    for (const s of byId.values()) this.slices.push(s);
    await this.flush(true);
    return { slices: byId.size, records: records.length };
  }

  private grew(s: Slice): void {
    this.unwritten++;
    if (++s.records < this.sliceRecords) return;
    this.slices.push(s);
    this.current = newSlice();
    this.writeFull();
  }

  /**
   * A full slice goes to the writer at once rather than at the timer's next tick (a running writer, started with
   * start()). Under load a second's records otherwise stayed alive until the tick, long enough for the collector
   * to move them to the old generation, whose collections then stalled the event loop and lengthened the relay's
   * tail latency (hot-path rule 12). The slices and transactions are the same; only the wait goes. SQLite only:
   * on PostgreSQL (1,024-record slices, every call settled against a lease row) it cost throughput. After a
   * failed write the timer's tick tries again, so a broken database is not retried in a loop.
   */
  private writeFull(): void {
    if (!this.eager || !this.timer || this.flushing || this.slices.length === 0) return;
    const run = this.write(false, true).finally(() => (this.flushing = null));
    this.flushing = run;
    run.then(
      () => this.writeFull(),
      (e) => console.error("write-behind flush failed:", e.message),
    );
  }

  /** Quota to the user's, token's and channel's used_quota, a request to the user, and the hourly rollup. */
  private count(s: Slice, u: UsageEntry): void {
    const user = s.users.get(u.userId) ?? { quota: 0, count: 0 };
    user.quota += u.quota;
    user.count += 1;
    s.users.set(u.userId, user);
    if (u.tokenId) add(s.tokens, u.tokenId, u.quota);
    if (u.channelId) add(s.channels, u.channelId, u.quota);
    if (!this.dataExport.enabled()) return;
    const hour = u.at - (u.at % 3600);
    // The user's last rollup, found by number: a key string built and hashed per call cost more.
    const last = this.lastRollup.get(u.userId);
    let r: Rollup;
    if (last && last.model === u.model && last.r.created_at === hour) r = last.r;
    else {
      const key = `${u.userId}\n${u.model}\n${hour}`;
      r = this.rollups.get(key) ?? {
        user_id: u.userId,
        username: u.username,
        model_name: u.model,
        created_at: hour,
        token_used: 0,
        count: 0,
        quota: 0,
      };
      this.rollups.set(key, r);
      this.lastRollup.set(u.userId, { model: u.model, r });
    }
    r.token_used += u.tokens;
    r.count += 1;
    r.quota += u.quota;
  }

  /** `all`: write the rollups too even if DataExportInterval has not passed (shutdown, drain). */
  async flush(all = false): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
    // One flush at a time: a second caller waits for the running one, then writes what came after it.
    // A write that failed has put its slices back: this flush tries them again.
    while (this.flushing) await this.flushing.catch(() => {});
    const rollups = all || Date.now() - this.rollupsWrittenAt >= this.dataExport.intervalMs();
    if (this.isEmpty(rollups)) return;
    this.flushing = this.write(rollups).finally(() => (this.flushing = null));
    await this.flushing;
  }

  /** Rows and counters waiting for the next flush (the metrics backlog gauge). */
  backlog(): number {
    let n = this.rollups.size;
    for (const s of [...this.slices, this.current])
      n +=
        s.logs.size
        + s.users.size
        + s.tokens.size
        + s.channels.size
        + s.userDebits.size
        + s.tokenDebits.size
        + s.leases.size;
    return n;
  }

  private isEmpty(withRollups: boolean) {
    return this.slices.length === 0 && this.current.records === 0 && (!withRollups || this.rollups.size === 0);
  }

  /** `fullOnly`: the full slices, leaving the one filling up to fill. */
  private async write(withRollups: boolean, fullOnly = false): Promise<void> {
    // Records from here on go to a new segment, so the old one can go once the slices written now are in.
    if (!fullOnly) this.journal?.rotate();
    this.pruneReceipts();
    const slices = this.current.records > 0 && !fullOnly ? [...this.slices, this.current] : this.slices;
    this.slices = [];
    if (!fullOnly) this.current = newSlice();
    let rollups: Map<string, Rollup> | null = null;
    if (withRollups && this.rollups.size > 0) {
      rollups = this.rollups;
      this.rollups = new Map();
      this.lastRollup.clear();
      if (slices.length === 0) slices.push(newSlice());
    }
    // The slice filling up, if left, keeps its debits where they are.
    for (const s of slices) {
      this.moveDebits(s, true);
      s.writeSeq = ++this.started;
    }
    let done = 0;
    try {
      for (; done < slices.length; done++) {
        const s = slices[done];
        // The rollups go with the last slice.
        const r = done === slices.length - 1 ? rollups : null;
        this.committed(s, await this.writeOne(s, r));
      }
      if (withRollups) this.rollupsWrittenAt = Date.now();
    } catch (e) {
      // Nothing is lost on a failed write: the slices not committed go back in front of whatever arrived meanwhile.
      this.requeue(slices.slice(done), rollups);
      throw e;
    }
  }

  /**
   * One slice, on the worker when there is one. A slice the worker could not commit (rolled back) is tried on
   * the main connection at once: a worker whose writes fail while the main connection's succeed — a connection
   * it cannot use (a pooler, a server option) — is retired after WORKER_STRIKES such slices. When the main
   * connection fails too, the database is the problem and the error goes up (the slice is requeued).
   */
  private async writeOne(s: Slice, r: Map<string, Rollup> | null): Promise<Set<string>> {
    const worker = workerFor(this.db);
    // A slice whose receipt is there already was committed by an attempt whose answer was lost (a connection
    // that died during COMMIT, a replay of a slice written just before a crash): done, not written twice.
    const onMain = () =>
      this.db
        .transaction()
        .execute((trx) => this.writeSlice(trx, s, r))
        .catch((e) => {
          if (alreadyCommitted(e, s.id)) return new Set<string>();
          throw e;
        });
    if (!worker) return onMain();
    try {
      const gone = new Set(await worker.write(this.statements(this.db, s, r)));
      this.workerStrikes = 0;
      return gone;
    } catch (e) {
      if (alreadyCommitted(e, s.id)) return new Set<string>();
      const gone = await onMain();
      if (++this.workerStrikes >= WORKER_STRIKES)
        worker.abandon(
          `${WORKER_STRIKES} transactions failed on it and succeeded on the main connection; the last: ${(e as Error).message}`,
        );
      return gone;
    }
  }

  /** Once an hour: receipts older than RECEIPT_RETENTION_SECONDS go (in the background; a failure waits for the next hour). */
  private pruneReceipts(): void {
    if (Date.now() - this.receiptsPrunedAt < RECEIPT_PRUNE_EVERY_MS) return;
    this.receiptsPrunedAt = Date.now();
    const before = Math.floor(Date.now() / 1000) - RECEIPT_RETENTION_SECONDS;
    void writeOffLoop(this.db, this.db.deleteFrom("write_receipts").where("created_at", "<", before)).catch((e) =>
      console.error("pruning write receipts failed:", (e as Error).message),
    );
  }

  /** Synchronously with dropping `writing`: a balance read before this commit is never used after it. */
  private committed(s: Slice, gone: Set<string>): void {
    this.journal?.committed(s.id);
    this.unwritten -= s.records;
    if (this.roomWaiters.length > 0 && this.unwritten < BACKLOG_RESUME) for (const w of this.roomWaiters.splice(0)) w();
    this.onCommitted?.(s.userDebits, s.tokenDebits, s.writeSeq);
    if (s.leases.size > 0) this.onLeasesCommitted?.(s.leases, gone);
    for (const [id, q] of s.userDebits) drop(this.userWriting, id, q);
    for (const [id, q] of s.tokenDebits) drop(this.tokenWriting, id, q);
  }

  /** One slice in the transaction `trx` of the main connection (PostgreSQL, MySQL, SQLite without its worker).
   * Answers the lease rows it found gone. */
  private async writeSlice(trx: Database, s: Slice, rollups: Map<string, Rollup> | null): Promise<Set<string>> {
    const sqlite = dialectOf(trx) === "sqlite";
    const pace = pacer(sqlite);
    await insertRows(trx, "logs", s.logs, sqlite ? SQLITE_LOG_BATCH : SLICE_RECORDS, pace);
    const gone = new Set<string>();
    const run = (st: { sql: string; parameters: unknown[] }) =>
      trx.executeQuery({ ...CompiledQuery.raw(st.sql), parameters: st.parameters });
    for (const st of this.statements(trx, s, rollups, false)) {
      if (Number((await run(st)).numAffectedRows ?? 0) === 0) {
        if (st.gone !== undefined) gone.add(st.gone);
        for (const e of st.orElse ?? []) await run(e);
      }
      await pace();
    }
    return gone;
  }

  /**
   * A slice's statements: its logs (unless `withLogs` is false), then the counters and memory debits in the
   * ledger's lock order (tokens, then users, by id), the channels' used quota and the rollups, and last what
   * each lease row's calls spent (leaseSpend).
   */
  private statements(db: Database, s: Slice, rollups: Map<string, Rollup> | null, withLogs = true): WorkerStatement[] {
    const dialect = dialectOf(db);
    // A slice's log rows in one INSERT (two statements per slice copied half of its values).
    // On PostgreSQL the worker sends them as a COPY (db/copy.ts).
    const out: WorkerStatement[] = withLogs ? s.logs.statements(dialect, "logs", SLICE_RECORDS, true) : [];
    const userDelta = new Map<number, number>();
    const tokenDelta = new Map<number, number>();
    for (const [id, q] of s.userDebits) add(userDelta, id, -q);
    for (const [id, q] of s.tokenDebits) add(tokenDelta, id, -q);
    const now = Math.floor(Date.now() / 1000);
    for (const id of sortedKeys(s.tokens, tokenDelta)) {
      const used = s.tokens.get(id);
      const delta = tokenDelta.get(id) ?? 0;
      if (used === undefined && delta === 0) continue;
      const sets: SetTerm[] =
        used !== undefined
          ? [
              ["used_quota", "+", used],
              ["accessed_time", "=", now],
            ]
          : [];
      if (delta) sets.push(["remain_quota", "+", delta]);
      out.push(updateStatement(dialect, "tokens", sets, [["id", id]]));
    }
    for (const id of sortedKeys(s.users, userDelta)) {
      const u = s.users.get(id);
      const delta = userDelta.get(id) ?? 0;
      if (!u && delta === 0) continue;
      const sets: SetTerm[] = u
        ? [
            ["used_quota", "+", u.quota],
            ["request_count", "+", u.count],
          ]
        : [];
      if (delta) sets.push(["quota", "+", delta]);
      out.push(updateStatement(dialect, "users", sets, [["id", id]]));
    }
    for (const id of [...s.channels.keys()].sort((a, b) => a - b)) {
      out.push(updateStatement(dialect, "channels", [["used_quota", "+", s.channels.get(id)!]], [["id", id]]));
    }
    for (const r of rollups?.values() ?? []) {
      out.push({
        ...updateStatement(
          dialect,
          "quota_data",
          [
            ["token_used", "+", r.token_used],
            ["count", "+", r.count],
            ["quota", "+", r.quota],
          ],
          [
            ["user_id", r.user_id],
            ["model_name", r.model_name],
            ["created_at", r.created_at],
          ],
        ),
        orElse: compileInserts(dialect, "quota_data", [r as unknown as Record<string, unknown>]),
      });
    }
    for (const [id, spend] of [...s.leases].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (spend.taken === 0) continue;
      out.push(leaseSpend(dialect, id, spend));
    }
    // Last: a slice committed before fails here as a duplicate, and all of the above rolls back with it.
    out.push(...compileInserts(dialect, "write_receipts", [{ id: s.id, created_at: now }]));
    return out;
  }

  /** A slice's debits from unwritten to being written (`toWriting`), or back. */
  private moveDebits(s: Slice, toWriting: boolean): void {
    const [users, usersTo] = toWriting ? [this.userDebits, this.userWriting] : [this.userWriting, this.userDebits];
    const [tokens, tokensTo] = toWriting
      ? [this.tokenDebits, this.tokenWriting]
      : [this.tokenWriting, this.tokenDebits];
    for (const [id, q] of s.userDebits) {
      drop(users, id, q);
      add(usersTo, id, q);
    }
    for (const [id, q] of s.tokenDebits) {
      drop(tokens, id, q);
      add(tokensTo, id, q);
    }
  }

  private requeue(slices: Slice[], rollups: Map<string, Rollup> | null) {
    for (const s of slices) this.moveDebits(s, false);
    this.slices = [...slices.filter((s) => s.records > 0), ...this.slices];
    this.lastRollup.clear();
    for (const [k, r] of rollups ?? []) {
      const cur = this.rollups.get(k);
      this.rollups.set(
        k,
        cur
          ? {
              ...cur,
              token_used: cur.token_used + r.token_used,
              count: cur.count + r.count,
              quota: cur.quota + r.quota,
            }
          : r,
      );
    }
  }
}

const usageRecord = (u: UsageEntry): JournalUsage => [
  u.userId,
  u.username,
  u.tokenId,
  u.channelId,
  u.model,
  u.quota,
  u.tokens,
  u.at,
];
const usageEntry = (u: JournalUsage): UsageEntry => ({
  userId: u[0],
  username: u[1],
  tokenId: u[2],
  channelId: u[3],
  model: u[4],
  quota: u[5],
  tokens: u[6],
  at: u[7],
});

function drop(m: Map<number, number>, k: number, v: number) {
  const left = (m.get(k) ?? 0) - v;
  if (left === 0) m.delete(k);
  else m.set(k, left);
}

function sortedKeys(a: Map<number, unknown>, b: Map<number, unknown>): number[] {
  return [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => x - y);
}

/**
 * Moves what a lease row's calls spent out of the row (its quota left the balances when the lease was topped
 * up). A row that is gone was refunded as abandoned by another instance (this one stalled past the lease): its
 * calls are charged to the balances again, which this transaction has already locked (every lease spend's user
 * and token have counters in the slice), so the books still balance; the row's id comes back as gone.
 */
function leaseSpend(dialect: Dialect, id: string, spend: LeaseSpend): WorkerStatement {
  return {
    ...updateStatement(dialect, "quota_holds", [["amount", "-", spend.taken]], [["id", id]]),
    gone: id,
    orElse: [
      ...(spend.tokenId
        ? [updateStatement(dialect, "tokens", [["remain_quota", "-", spend.taken]], [["id", spend.tokenId]])]
        : []),
      updateStatement(dialect, "users", [["quota", "-", spend.taken]], [["id", spend.userId]]),
    ],
  };
}
