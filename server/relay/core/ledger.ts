// The one place relay calls move balances. A call takes quota before it runs (its hold), and is settled
// after it: the hold becomes the call's cost, the difference goes back (or, when the answer cost more,
// is charged as far as the balances reach). Two implementations, chosen by the database:
//
// - SQLite (one process owns the file): holds are reservations in this process's memory, checked against
//   the balance read synchronously from the database minus every reservation and unwritten debit, with no
//   await between the read and the reservation — so concurrent calls can never reserve the same units, and
//   the hot path writes nothing. The write-behind debits the balance in the same transaction as it writes
//   the call's log: a crash loses both or neither.
// - PostgreSQL / MySQL (instances may share the database): calls are paid from leases, quota an instance
//   has moved from the balances into a quota_holds row of its own ahead of them (LeaseLedger below), so a
//   call's hold and settlement touch only memory. The write-behind moves each call's cost out of the row
//   in the same transaction as it writes the call's log, so money that left a balance is always in a lease
//   row or a log. Each instance renews its rows; rows nobody renews (the instance died) are refunded by any
//   instance, and an instance starting again refunds its previous life's rows at once.
//
// Locks are always taken token, then user, then lease row (the write-behind updates tokens, then users, each
// in id order, then lease rows), so concurrent transactions on PostgreSQL and MySQL cannot deadlock one
// another. Giving a lease back locks its row first: it runs only when no other transaction of this
// instance can touch that row.
import type { Database as SqliteDatabase } from "bun:sqlite";
import type { Database, Dialect } from "../../../db/index.ts";
import { CompiledQuery, sql, type Selectable } from "kysely";
import type { QuotaHoldsTable } from "../../../db/schema.ts";
import { rawSqlite } from "../../../db/index.ts";
import { isDatabaseUnavailable } from "../../../db/timeouts.ts";
import { AppError } from "../../http/errors.ts";
import { TOKEN_STATUS, USER_STATUS } from "../../catalogue/index.ts";
import type { WriteBehind, SettledEntry } from "../../jobs/writebehind.ts";

export interface Payer {
  userId: number;
  /** 0 for the playground (billed to the user only) */
  tokenId: number;
  unlimited: boolean;
}

/** Quota taken for one call. */
export interface Hold {
  /** the lease it was given from (PostgreSQL, MySQL); null when reserved in memory (SQLite) or nothing was taken */
  lease: Lease | null;
  userId: number;
  /** the token whose remain_quota is drawn; 0 when none is (unlimited token, playground) */
  tokenId: number;
  amount: number;
}

export interface Ledger {
  /**
   * Takes `amount` from the token and the user, or, when `least` is lower and the balances cannot pay all of
   * it, as much as they can pay (at least `least`: the hold's amount says how much). Throws 403 naming which
   * balance is short when not even `least` is paid; changes nothing then. A balance pays down to minus the
   * credit (QuotaCreditLimit), never further.
   */
  take(payer: Payer, amount: number, least?: number): Promise<Hold>;
  /**
   * take() without a promise when it needs no I/O: SQLite's memory ledger always (it throws as take() rejects),
   * a lease when its free quota covers the amount. null: nothing was taken, take() it. The hot path's `await`
   * on an already settled take() still suspended the admission (a generator, two scopes and a turn per call).
   */
  takeNow?(payer: Payer, amount: number, least?: number): Hold | null;
  /** The call was not served: everything goes back now. */
  giveBack(hold: Hold): Promise<void>;
  /** Gives quota taken ahead of calls (leases) back to the balances where nothing is using it (drain, tests). */
  returnLeases?(): Promise<void>;
  /** What this instance's lease for a token (a limited one) still holds for new calls: not in the token's row. */
  leased?(userId: number, tokenId: number): number;
  /**
   * The user's balance was set (or the user changed) outside the ledger: the next call reads it as it is now.
   * Leases (PostgreSQL, MySQL): no new call is given from this instance's leases of the user (an absolute edit
   * gave their rows back already, modules/user/balance.ts, so what they held in memory must not be spent again);
   * SQLite: the user's kept row is read again.
   */
  userChanged?(userId: number): void;
  /**
   * The call cost `cost`: takes it out of the hold (charging beyond the hold only as far as the balances
   * reach) and queues the settlement with the call's records in one write-behind entry, so they are written
   * in the same transaction. Returns the quota actually taken, which `entry` receives to build the records.
   */
  settle(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): Promise<number>;
  /**
   * settle() without a promise when it needs no I/O: SQLite's memory ledger always, a lease when the hold and the
   * lease's free quota cover the cost. null: nothing was done, settle() it (a charge beyond both reads the balances).
   */
  settleNow?(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): number | null;
  /** Roughly what the user can still spend (the low-balance warning), given the balance read at auth. */
  remaining(userId: number, authQuota: number): number;
  stop(): Promise<void>;
}

const NO_CREDIT = () => 0;
const limitedToken = (payer: Payer) => (payer.tokenId !== 0 && !payer.unlimited ? payer.tokenId : 0);
const noHold = (payer: Payer): Hold => ({ lease: null, userId: payer.userId, tokenId: limitedToken(payer), amount: 0 });

const tokenShort = () => new AppError(403, "token quota is not enough for this request", "insufficient_token_quota");
const userShort = () => new AppError(403, "user quota is not enough for this request", "insufficient_user_quota");
const userBanned = () => new AppError(403, "user has been banned", "user_banned");

export interface LedgerOptions {
  /** How far below zero a balance may be taken (QuotaCreditLimit): what an operator can lose per payer. */
  credit?: () => number;
  /** this process's name on its quota_holds rows: stable across restarts of the same instance */
  instance: string;
  /** a row not renewed for this long belongs to a dead instance and is refunded */
  leaseMs: number;
  /**
   * PostgreSQL: the connections that top leases up, committing without waiting for the WAL flush (calls of one
   * payer wait for the top-up). Safe for top-ups alone: one the server loses in a crash loses its debit with
   * it, and the settlements that spent it find the row short (or gone) and are charged in full in the same
   * durable transaction as their logs. Refunds, settlements and logs stay synchronous. The ledger closes it
   * on stop.
   */
  topUpDb?: Database;
}

export function openLedger(db: Database, dialect: Dialect, writer: WriteBehind, opts: LedgerOptions): Ledger {
  const raw = rawSqlite(db);
  if (raw) return new MemoryLedger(db, raw, writer, opts.credit ?? NO_CREDIT);
  const ledger = new LeaseLedger(db, dialect, writer, opts);
  ledger.start();
  return ledger;
}

// ---------------------------------------------------------------------------------------------------

/**
 * Balance rows are kept briefly instead of read on every call (two SQLite reads per call were a fifth of the
 * relay's CPU). The ledger's own debits follow the rows they touch the moment the write-behind commits them
 * (before they stop counting as unwritten), so a kept row never hides a debit; what other writers change (a
 * redemption, a top-up, an administrator's edit, a ban) is seen within this many milliseconds.
 */
export const BALANCE_ROW_TTL_MS = 250;

/** `seq`: the write-behind's writes begun when the row was read (WriteBehind.onCommitted). */
interface Row {
  balance: number;
  status: number;
  at: number;
  seq: number;
}

/** The kept row of `id`, read anew through `read` once older than BALANCE_ROW_TTL_MS. `read` is made once per
 * ledger, not per call: a closure over `id` on every call was two functions and scopes per call. */
function kept(
  rows: Map<number, Row>,
  id: number,
  seq: number,
  read: (id: number) => Omit<Row, "at" | "seq"> | null,
): Row | null {
  const now = performance.now();
  let row = rows.get(id);
  if (!row || now - row.at > BALANCE_ROW_TTL_MS) {
    const r = read(id);
    if (!r) return null;
    row = { ...r, at: now, seq };
    if (rows.size > 100_000) rows.clear();
    rows.set(id, row);
  }
  return row;
}

/** Committed debits (id → quota) on the kept rows: taken off a row read before their write began, else the row goes. */
function follow(rows: Map<number, Row>, debits: Map<number, number>, writeSeq: number): void {
  for (const [id, q] of debits) {
    const row = rows.get(id);
    if (!row) continue;
    if (row.seq < writeSeq) row.balance -= q;
    else rows.delete(id);
  }
}

class MemoryLedger implements Ledger {
  private userQuery;
  private tokenQuery;
  private users = new Map<number, Row>();
  private tokens = new Map<number, Row>();
  constructor(
    private db: Database,
    raw: SqliteDatabase,
    private writer: WriteBehind,
    private credit: () => number,
  ) {
    this.userQuery = raw.query<{ quota: number; status: number }, [number]>(
      "select quota, status from users where id = ?",
    );
    this.tokenQuery = raw.query<{ remain_quota: number; status: number }, [number]>(
      "select remain_quota, status from tokens where id = ?",
    );
    // A row read before the write began lacks its debits: they come off it here, so it needs no new read (with
    // a thousand users calling, reading each one's rows again after every commit cost a sixth of the event
    // loop). A row read since may already hold them: it is read again.
    writer.onCommitted = (users, tokens, writeSeq) => {
      follow(this.users, users, writeSeq);
      follow(this.tokens, tokens, writeSeq);
    };
  }

  private readUser = (id: number) => {
    const r = this.userQuery.get(id);
    return r && { balance: r.quota, status: r.status };
  };

  private readToken = (id: number) => {
    const r = this.tokenQuery.get(id);
    return r && { balance: r.remain_quota, status: r.status };
  };

  private userRow(id: number): Row | null {
    return kept(this.users, id, this.writer.writesStarted, this.readUser);
  }

  private tokenRow(id: number): Row | null {
    return kept(this.tokens, id, this.writer.writesStarted, this.readToken);
  }

  async take(payer: Payer, amount: number, least = amount): Promise<Hold> {
    return this.takeNow(payer, amount, least);
  }

  userChanged(userId: number): void {
    this.users.delete(userId);
  }

  takeNow(payer: Payer, amount: number, least = amount): Hold {
    if (amount <= 0) return noHold(payer);
    const tokenId = limitedToken(payer);
    const credit = this.credit();
    // Everything from the reads to the reservation runs without yielding: no other call can reserve between,
    // so calls running at once share the balance through their holds.
    let take = amount;
    if (tokenId) {
      const t = this.tokenRow(tokenId);
      const free = t ? t.balance + credit - this.writer.unsettled("token", tokenId) : 0;
      if (!t || t.status !== TOKEN_STATUS.enabled || free < Math.max(1, least)) {
        void markExhausted(this.db, tokenId);
        throw tokenShort();
      }
      take = Math.min(take, free);
    }
    const u = this.userRow(payer.userId);
    if (!u || u.status !== USER_STATUS.enabled) throw userBanned();
    const free = u.balance + credit - this.writer.unsettled("user", payer.userId);
    if (free < Math.max(1, least)) throw userShort();
    take = Math.min(take, free);
    this.writer.reserve(payer.userId, tokenId, take);
    return { lease: null, userId: payer.userId, tokenId, amount: take };
  }

  async giveBack(hold: Hold): Promise<void> {
    if (hold.amount > 0) this.writer.unreserve(hold.userId, hold.tokenId, hold.amount);
  }

  async settle(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): Promise<number> {
    return this.settleNow(hold, cost, entry);
  }

  settleNow(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): number {
    let taken = Math.max(0, cost);
    if (taken > hold.amount) {
      // What the balances hold beyond every reservation (this call's included) bounds the extra charge.
      const extra = Math.min(taken - hold.amount, Math.max(0, this.available(hold.userId, hold.tokenId)));
      taken = hold.amount + extra;
    }
    this.writer.settled(hold, taken, entry(taken));
    return taken;
  }

  remaining(userId: number): number {
    return this.available(userId, 0) - this.credit();
  }

  /** What the balances can still pay beyond every reservation and unwritten debit, the credit included. */
  private available(userId: number, tokenId: number): number {
    const credit = this.credit();
    let left = (this.userRow(userId)?.balance ?? 0) + credit - this.writer.unsettled("user", userId);
    if (tokenId)
      left = Math.min(left, (this.tokenRow(tokenId)?.balance ?? 0) + credit - this.writer.unsettled("token", tokenId));
    return left;
  }

  async stop(): Promise<void> {}
}

// ---------------------------------------------------------------------------------------------------

/** The server's error codes: postgres.js and mysql2 name it in `code` (mysql2 its number in `errno`); Bun's
 * client (the PostgreSQL hold pool) in `errno`, its `code` being Bun's own. */
function errorCodes(e: unknown): string[] {
  const x = e as { code?: unknown; errno?: unknown } | null;
  return [String(x?.code ?? ""), String(x?.errno ?? "")];
}

const RETRYABLE_CODES = new Set(["40P01", "40001", "ER_LOCK_DEADLOCK", "1213", "ER_LOCK_WAIT_TIMEOUT"]);

/** PostgreSQL's deadlock and serialization failures and MySQL's deadlock: safe to run the transaction again. */
function retryable(e: unknown): boolean {
  return errorCodes(e).some((c) => RETRYABLE_CODES.has(c));
}

async function withRetry<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (e) {
      if (attempt >= 4 || !retryable(e)) throw e;
      await Bun.sleep(5 * (attempt + 1));
    }
  }
}

/** A top-up takes at most this share of what the balance has left (1/8), and never less than the call needs:
 * several instances serving one user each keep a part without starving the others. */
const LEASE_SHARE = 8;
/** A lease topped up again within this long asks for twice as much next time; after a quieter spell, for
 * what the call needs times LEASE_FIRST. */
const LEASE_WINDOW_MS = 1_000;
const LEASE_FIRST = 4;
/** A lease nothing has used for this long goes back to the balances (so they read right between bursts). */
export const LEASE_IDLE_MS = 2_000;
/**
 * Lease rows given back at once, each in its own transaction that locks the row, then its token's and its
 * user's. Two leases share at most a user (a lease is one user's and token's), whose row each locks last, so
 * concurrent give-backs queue there rather than deadlock. Four at a time stop a gateway holding a thousand
 * leases about twice as fast as one at a time. Four of the main pool's ten connections leave
 * the rest to the calls arriving while idle leases go back.
 */
export const GIVE_BACK_CONCURRENCY = 4;

/**
 * Quota this process has taken from one payer's balances (user, and the token when it has a limit of its
 * own) into one quota_holds row, and gives to that payer's calls in memory. Opaque outside the ledger.
 */
export interface Lease {
  readonly id: string;
  readonly key: string;
  readonly userId: number;
  readonly tokenId: number;
  /** in the row and promised to no call */
  free: number;
  /** promised to calls still running */
  held: number;
  /** settled calls whose spend the write-behind has not committed */
  unwritten: number;
  /** settlements charging beyond their hold (their I/O is running) */
  busy: number;
  toppingUp: Promise<void> | null;
  /** what the last top-up got, and when (performance.now()) */
  granted: number;
  toppedAt: number;
  usedAt: number;
  /** a top-up or an extra charge has written the row */
  inDb: boolean;
  /** no longer given to new calls: found refunded as abandoned, or being given back */
  closed: boolean;
  releasing: boolean;
}

/**
 * PostgreSQL's top-up (LeaseLedger.topUpInOneStatement) as fixed text, prepared once per connection.
 * It takes `amt` from the token and the user and adds it to the lease row (creating it): amt is what the
 * call needs ($1) or, if the balances allow, up to the wish ($2) capped at 1/LEASE_SHARE of each balance.
 * The user is debited only if the token was; a token debited for a user that is short makes the statement
 * divide by zero, which undoes it whole.
 * $1 need, $2 wish, $3 token id (0: none), $4 enabled token status, $5 user id, $6 enabled user status,
 * $7 lease id, $8 instance, $9 life, $10 now, $11 share, $12 the least the call can do with (below $1 when it
 * can be capped: then as much as the balances pay, down to $12), $13 the credit (how far below zero a balance
 * may go).
 */
const TOP_UP_IN_ONE_STATEMENT = `
  with a as (
    select greatest(cast($12 as bigint), least(
      greatest(cast($1 as bigint), least(cast($2 as bigint),
        coalesce((select quota from users where id = $5), 0) / cast($11 as bigint),
        case when cast($3 as bigint) = 0 then cast($2 as bigint)
          else coalesce((select remain_quota from tokens where id = $3), 0) / cast($11 as bigint) end)),
      coalesce((select quota from users where id = $5), 0) + cast($13 as bigint),
      case when cast($3 as bigint) = 0 then greatest(cast($1 as bigint), cast($2 as bigint))
        else coalesce((select remain_quota from tokens where id = $3), 0) + cast($13 as bigint) end)) as amt
  ), t as (
    update tokens set remain_quota = remain_quota - (select amt from a)
    where id = $3 and status = $4 and remain_quota + cast($13 as bigint) >= (select amt from a) returning id
  ), u as (
    update users set quota = quota - (select amt from a)
    where id = $5 and status = $6 and quota + cast($13 as bigint) >= (select amt from a)
      and (cast($3 as bigint) = 0 or exists (select 1 from t)) returning id
  ), h as (
    insert into quota_holds (id, user_id, token_id, amount, instance, life, created_at, renewed_at)
    select cast($7 as text), cast($5 as bigint), cast($3 as bigint), (select amt from a),
      cast($8 as text), cast($9 as text), cast($10 as bigint), cast($10 as bigint)
    where exists (select 1 from u)
    on conflict (id) do update set amount = quota_holds.amount + excluded.amount, renewed_at = excluded.renewed_at
    returning id
  )
  select (select count(*) from t)::int as t, (select count(*) from u)::int as u, (select amt from a)::float8 as amt,
    case when exists (select 1 from t) and not exists (select 1 from u) then 1 / (select count(*) from h)::int else 0 end as undo`;

type TopUp = { granted: number } | "token" | "user";

/**
 * PostgreSQL and MySQL. A call is paid from its payer's lease: quota this process took from the balances
 * into a quota_holds row ahead of the calls, so the usual call takes and settles its hold in memory and the
 * database sees one top-up per burst instead of one statement per call. A lease short of a call's hold is
 * topped up first (one statement on PostgreSQL; a transaction locking token, then user, then the row on
 * MySQL); calls arriving meanwhile wait for that top-up rather than start their own. What a call does not
 * use goes back to the lease at once; what it costs beyond its hold comes from the lease, then from the
 * balances as far as they reach. The write-behind moves each settled call's cost out of the row in the
 * same transaction as its log. A lease unused for LEASE_IDLE_MS, with nothing running or unwritten on it,
 * goes back to the balances (row deleted, its amount refunded), as do all of them on drain and shutdown.
 * While a payer is busy its balance reads lower by what its leases hold (at most what its calls need plus
 * 1/LEASE_SHARE of the balance per top-up).
 */
class LeaseLedger implements Ledger {
  private timer: ReturnType<typeof setInterval> | null = null;
  private releaser: ReturnType<typeof setInterval> | null = null;
  /** This process's life of the instance: rows of the same instance with another life are left from before a restart. */
  private readonly life = crypto.randomUUID().slice(0, 16);
  private sweeping: Promise<void> | null = null;
  /** Give-backs under way (returnLeases): stop() waits for them. */
  private returning = new Set<Promise<void>>();
  /** The lease calls of each payer are given from now. */
  private open = new Map<string, Lease>();
  /** Every lease whose row may exist, until it is given back. */
  private all = new Map<string, Lease>();

  private credit: () => number;

  constructor(
    private db: Database,
    private dialect: Dialect,
    private writer: WriteBehind,
    private opts: LedgerOptions,
  ) {
    this.credit = opts.credit ?? NO_CREDIT;
    writer.onLeasesCommitted = (spends, gone) => {
      for (const [id, spend] of spends) {
        const lease = this.all.get(id);
        if (!lease) continue;
        lease.unwritten -= spend.calls;
        if (gone.has(id)) this.close(lease, true);
      }
    };
  }

  start(): void {
    // The rows this instance left behind when it last stopped without settling them (a crash) go back at once.
    this.sweeping = this.sweep(true)
      .catch((e) => console.error("refunding interrupted holds failed:", e.message))
      .finally(() => (this.sweeping = null));
    const every = Math.max(50, Math.floor(this.opts.leaseMs / 4));
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.renew()
        .then(() => this.sweep(false))
        .catch((e) => console.error("hold renewal failed:", e.message))
        .finally(() => (this.sweeping = null));
    }, every);
    this.timer.unref?.();
    this.releaser = setInterval(() => void this.returnLeases(LEASE_IDLE_MS), LEASE_IDLE_MS / 2);
    this.releaser.unref?.();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.releaser) clearInterval(this.releaser);
    this.timer = this.releaser = null;
    await this.sweeping;
    // A give-back under way (the releaser's) holds its leases as releasing, which this last round skips: it
    // must finish before the database closes under it (it then failed row by row and left them held).
    while (this.returning.size > 0) await Promise.allSettled([...this.returning]);
    await this.returnLeases(0);
    await this.opts.topUpDb?.destroy();
  }

  private leaseFor(userId: number, tokenId: number): Lease {
    const key = `${userId}:${tokenId}`;
    let lease = this.open.get(key);
    if (!lease) {
      lease = {
        id: crypto.randomUUID(),
        key,
        userId,
        tokenId,
        free: 0,
        held: 0,
        unwritten: 0,
        busy: 0,
        toppingUp: null,
        granted: 0,
        toppedAt: -Infinity,
        usedAt: performance.now(),
        inDb: false,
        closed: false,
        releasing: false,
      };
      this.open.set(key, lease);
      this.all.set(lease.id, lease);
    }
    return lease;
  }

  /** No new calls are given from it; `abandoned`: another instance refunded its row, so what it had is gone. */
  private close(lease: Lease, abandoned: boolean): void {
    lease.closed = true;
    if (abandoned) lease.free = 0;
    if (this.open.get(lease.key) === lease) this.open.delete(lease.key);
  }

  takeNow(payer: Payer, amount: number): Hold | null {
    if (amount <= 0) return noHold(payer);
    const tokenId = limitedToken(payer);
    const lease = this.leaseFor(payer.userId, tokenId);
    if (lease.free < amount) return null;
    return this.given(lease, payer, amount);
  }

  private given(lease: Lease, payer: Payer, amount: number): Hold {
    lease.free -= amount;
    lease.held += amount;
    lease.usedAt = performance.now();
    return { lease, userId: payer.userId, tokenId: limitedToken(payer), amount };
  }

  async take(payer: Payer, amount: number, least = amount): Promise<Hold> {
    least = Math.max(1, Math.min(least, amount));
    for (;;) {
      const held = this.takeNow(payer, amount);
      if (held) return held;
      const lease = this.leaseFor(payer.userId, limitedToken(payer));
      if (lease.toppingUp) {
        // One top-up at a time per lease: the others' calls wait for it, then look again.
        await lease.toppingUp.catch(() => {});
        continue;
      }
      const running = this.topUp(lease, amount - lease.free, least - lease.free).finally(() => {
        if (lease.toppingUp === running) lease.toppingUp = null;
      });
      lease.toppingUp = running;
      await running;
      // The balances paid less than the whole amount: the call takes what the lease has, if that is enough.
      if (!lease.closed && lease.free < amount && lease.free >= least) return this.given(lease, payer, lease.free);
    }
  }

  /** `need` more quota into the lease, or (a call that can be capped) at least `least` and as much of `need` as
   * the balances pay. */
  private async topUp(lease: Lease, need: number, least = need): Promise<void> {
    const now = performance.now();
    const wish = now - lease.toppedAt < LEASE_WINDOW_MS ? Math.max(need, 2 * lease.granted) : need * LEASE_FIRST;
    const at = Math.floor(Date.now() / 1000);
    const min = Math.max(0, Math.min(least, need));
    const outcome = await withRetry(() =>
      this.dialect === "postgres"
        ? this.topUpInOneStatement(lease, need, wish, at, min)
        : this.topUpInTransaction(lease, need, wish, at, min),
    ).catch((e) => {
      // A top-up whose answer was lost (the connection dropped, the statement outlived its bound) may have
      // committed: the lease's row is then given back with the lease instead of staying held until a restart.
      if (isDatabaseUnavailable(e)) lease.inDb = true;
      throw e;
    });
    if (outcome === "token") {
      // Not while this lease still holds some of the token (its unused part goes back to the row).
      if (lease.free <= 0 && lease.held === 0) await markExhausted(this.db, lease.tokenId);
      throw tokenShort();
    }
    if (outcome === "user") {
      const user = await this.db.selectFrom("users").select("status").where("id", "=", lease.userId).executeTakeFirst();
      throw user && user.status !== USER_STATUS.enabled ? userBanned() : userShort();
    }
    lease.inDb = true;
    lease.granted = outcome.granted;
    lease.toppedAt = now;
    // A lease found abandoned while this ran keeps the new quota in its row until it is given back.
    if (!lease.closed) lease.free += outcome.granted;
  }

  private async topUpInOneStatement(
    lease: Lease,
    need: number,
    wish: number,
    now: number,
    min: number,
  ): Promise<TopUp> {
    try {
      const r = await (this.opts.topUpDb ?? this.db).executeQuery<{ t: number; u: number; amt: number }>(
        CompiledQuery.raw(TOP_UP_IN_ONE_STATEMENT, [
          need,
          wish,
          lease.tokenId,
          TOKEN_STATUS.enabled,
          lease.userId,
          USER_STATUS.enabled,
          lease.id,
          this.opts.instance,
          this.life,
          now,
          LEASE_SHARE,
          min,
          this.credit(),
        ]),
      );
      const row = r.rows[0];
      if (Number(row?.u) === 1) return { granted: Number(row.amt) };
      return lease.tokenId && Number(row?.t) === 0 ? "token" : "user";
    } catch (e) {
      // division_by_zero: the token had enough and the user not (the token's debit went with the statement).
      if (errorCodes(e).includes("22012")) return "user";
      throw e;
    }
  }

  /** MySQL: token, user, then the lease row, each locked in that order (the write-behind's order). */
  private topUpInTransaction(lease: Lease, need: number, wish: number, now: number, min: number): Promise<TopUp> {
    const credit = this.credit();
    return this.db.transaction().execute(async (trx): Promise<TopUp> => {
      let amount = wish;
      // What the balances pay at most: the least of them, the credit included.
      let most = Infinity;
      if (lease.tokenId) {
        const t = await trx
          .selectFrom("tokens")
          .select(["remain_quota", "status"])
          .where("id", "=", lease.tokenId)
          .forUpdate()
          .executeTakeFirst();
        if (!t || t.status !== TOKEN_STATUS.enabled || Number(t.remain_quota) + credit < min) return "token";
        amount = Math.min(amount, Math.floor(Number(t.remain_quota) / LEASE_SHARE));
        most = Number(t.remain_quota) + credit;
      }
      const u = await trx
        .selectFrom("users")
        .select(["quota", "status"])
        .where("id", "=", lease.userId)
        .forUpdate()
        .executeTakeFirst();
      if (!u || u.status !== USER_STATUS.enabled || Number(u.quota) + credit < min) return "user";
      most = Math.min(most, Number(u.quota) + credit);
      amount = Math.max(
        min,
        Math.min(most, Math.max(need, Math.min(amount, Math.floor(Number(u.quota) / LEASE_SHARE)))),
      );
      await this.debit(trx, lease, amount, now);
      return { granted: amount };
    });
  }

  /** Takes `amount` from the token and user (locked by the caller's transaction) into the lease row. */
  private async debit(trx: Database, lease: Lease, amount: number, now: number): Promise<void> {
    if (lease.tokenId)
      await trx
        .updateTable("tokens")
        .set((eb) => ({ remain_quota: eb("remain_quota", "-", amount) }))
        .where("id", "=", lease.tokenId)
        .execute();
    await trx
      .updateTable("users")
      .set((eb) => ({ quota: eb("quota", "-", amount) }))
      .where("id", "=", lease.userId)
      .execute();
    const row = {
      id: lease.id,
      user_id: lease.userId,
      token_id: lease.tokenId,
      amount,
      instance: this.opts.instance,
      life: this.life,
      created_at: now,
      renewed_at: now,
    };
    const insert = trx.insertInto("quota_holds").values(row);
    await (this.dialect === "mysql"
      ? insert.onDuplicateKeyUpdate({ amount: sql`amount + ${amount}`, renewed_at: now })
      : insert.onConflict((oc) =>
          oc.column("id").doUpdateSet((eb) => ({ amount: eb("quota_holds.amount", "+", amount), renewed_at: now })),
        )
    ).execute();
  }

  async giveBack(hold: Hold): Promise<void> {
    const lease = hold.lease;
    if (!lease || hold.amount <= 0) return;
    lease.held -= hold.amount;
    if (!lease.closed) lease.free += hold.amount;
    lease.usedAt = performance.now();
  }

  settleNow(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): number | null {
    const want = Math.max(0, cost);
    const own = hold.amount > 0 ? hold.lease : null;
    if (want === 0 && !own) {
      // Not a lease's spend: a placeholder hold may still name the lease it was copied from.
      this.writer.settled({ lease: null, userId: hold.userId, tokenId: hold.tokenId, amount: 0 }, 0, entry(0));
      return 0;
    }
    // A hold of nothing (a zero estimate, a realtime turn's placeholder) is paid from the payer's lease of now.
    const lease = own ?? this.leaseFor(hold.userId, hold.tokenId);
    const fromFree = Math.min(Math.max(0, want - hold.amount), lease.closed ? 0 : Math.max(0, lease.free));
    const taken = Math.min(want, hold.amount) + fromFree;
    if (want > taken) return null;
    lease.free -= fromFree;
    return this.spent(lease, own, hold, want, taken, entry);
  }

  async settle(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): Promise<number> {
    const now = this.settleNow(hold, cost, entry);
    if (now !== null) return now;
    // More than the hold and the lease's free quota: all of those, then the rest as far as the balances reach.
    const want = Math.max(0, cost);
    const own = hold.amount > 0 ? hold.lease : null;
    const lease = own ?? this.leaseFor(hold.userId, hold.tokenId);
    lease.busy++;
    try {
      const fromFree = lease.closed ? 0 : Math.max(0, lease.free);
      lease.free -= fromFree;
      let taken = Math.min(want, hold.amount) + fromFree;
      taken += await withRetry(() => this.chargeExtra(lease, want - taken)).catch((e) => {
        if (isDatabaseUnavailable(e)) lease.inDb = true;
        console.error("charging beyond the hold failed:", (e as Error).message);
        return 0;
      });
      return this.spent(lease, own, hold, want, taken, entry);
    } finally {
      lease.busy--;
    }
  }

  /** A settled call's bookkeeping: its hold leaves the lease (the unused part back to its free quota) and its
   * spend is queued with its records. */
  private spent(
    lease: Lease,
    own: Lease | null,
    hold: Hold,
    want: number,
    taken: number,
    entry: (taken: number) => SettledEntry,
  ): number {
    if (own) {
      lease.held -= hold.amount;
      if (!lease.closed) lease.free += hold.amount - Math.min(hold.amount, want);
    }
    lease.usedAt = performance.now();
    lease.unwritten++;
    this.writer.settled({ lease, userId: hold.userId, tokenId: hold.tokenId, amount: taken }, taken, entry(taken));
    return taken;
  }

  remaining(_userId: number, authQuota: number): number {
    return authQuota;
  }

  leased(userId: number, tokenId: number): number {
    return this.open.get(`${userId}:${tokenId}`)?.free ?? 0;
  }

  userChanged(userId: number): void {
    for (const lease of [...this.open.values()]) if (lease.userId === userId) this.close(lease, false);
  }

  /** More than the hold and the lease have: as much of `extra` as token and user still have, into the lease row. */
  private chargeExtra(lease: Lease, extra: number): Promise<number> {
    const credit = this.credit();
    return this.db.transaction().execute(async (trx) => {
      let left = extra;
      if (lease.tokenId) {
        const t = await trx
          .selectFrom("tokens")
          .select("remain_quota")
          .where("id", "=", lease.tokenId)
          .forUpdate()
          .executeTakeFirst();
        left = Math.min(left, Math.max(0, Number(t?.remain_quota ?? 0) + credit));
      }
      const u = await trx
        .selectFrom("users")
        .select("quota")
        .where("id", "=", lease.userId)
        .forUpdate()
        .executeTakeFirst();
      left = Math.min(left, Math.max(0, Number(u?.quota ?? 0) + credit));
      if (left <= 0) return 0;
      await this.debit(trx, lease, left, Math.floor(Date.now() / 1000));
      lease.inDb = true;
      return left;
    });
  }

  /**
   * Gives back the leases unused for `idleMs` with nothing running, settling or unwritten on them (and those
   * found abandoned, once idle the same way): each row is deleted and its amount refunded in one transaction.
   */
  returnLeases(idleMs = 0): Promise<void> {
    const run = this.giveBackIdle(idleMs).finally(() => this.returning.delete(run));
    this.returning.add(run);
    return run;
  }

  private async giveBackIdle(idleMs: number): Promise<void> {
    const now = performance.now();
    const due = [...this.all.values()].filter(
      (l) =>
        !l.releasing
        && l.held === 0
        && l.unwritten === 0
        && l.busy === 0
        && !l.toppingUp
        && (l.closed || now - l.usedAt >= idleMs),
    );
    // Closed before the first await: no call can be given from them while they go back.
    for (const lease of due) {
      lease.releasing = true;
      this.close(lease, false);
    }
    let next = 0;
    const giveBackNext = async () => {
      for (let lease = due[next++]; lease; lease = due[next++]) {
        try {
          if (lease.inDb) await withRetry(() => this.refund(lease.id, () => true));
          this.all.delete(lease.id);
        } catch (e) {
          // Kept (closed): the next round tries again.
          console.error("giving back a quota lease failed:", (e as Error).message);
        } finally {
          lease.releasing = false;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(GIVE_BACK_CONCURRENCY, due.length) }, giveBackNext));
  }

  /**
   * Deletes a lease row and gives its amount back, in one transaction, if the row (read under lock) still
   * qualifies. A negative amount (calls spent more than a top-up the database lost in a crash had put in)
   * is charged the same way.
   */
  private refund(id: string, qualifies: (row: QuotaHold) => boolean): Promise<void> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom("quota_holds").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
      if (!row || !qualifies(row)) return;
      await trx.deleteFrom("quota_holds").where("id", "=", id).execute();
      const amount = Number(row.amount);
      if (amount === 0) return;
      if (row.token_id)
        await trx
          .updateTable("tokens")
          .set((eb) => ({ remain_quota: eb("remain_quota", "+", amount) }))
          .where("id", "=", row.token_id)
          .execute();
      await trx
        .updateTable("users")
        .set((eb) => ({ quota: eb("quota", "+", amount) }))
        .where("id", "=", row.user_id)
        .execute();
    });
  }

  /** Rows of this life only: those of a previous life (same instance name) are refunded, never kept alive. */
  private async renew(): Promise<void> {
    await this.db
      .updateTable("quota_holds")
      .set({ renewed_at: Math.floor(Date.now() / 1000) })
      .where("instance", "=", this.opts.instance)
      .where("life", "=", this.life)
      .execute();
  }

  /** Refunds rows whose instance is gone: this instance's own from before it started, or anyone's past the lease. */
  private async sweep(own: boolean): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    const staleBefore = now - Math.ceil(this.opts.leaseMs / 1000);
    for (;;) {
      let q = this.db.selectFrom("quota_holds").select("id").limit(100);
      q = own
        ? q.where("instance", "=", this.opts.instance).where("life", "<>", this.life)
        : q.where("renewed_at", "<", staleBefore);
      const rows = await q.execute();
      if (rows.length === 0) return;
      const qualifies = own
        ? (r: QuotaHold) => r.instance === this.opts.instance && r.life !== this.life
        : (r: QuotaHold) => Number(r.renewed_at) < staleBefore;
      for (const r of rows) await withRetry(() => this.refund(r.id, qualifies));
      if (rows.length < 100) return;
    }
  }
}

type QuotaHold = Selectable<QuotaHoldsTable>;

async function markExhausted(db: Database, tokenId: number): Promise<void> {
  if (tokenId === 0) return;
  await db
    .updateTable("tokens")
    .set({ status: TOKEN_STATUS.exhausted })
    .where("id", "=", tokenId)
    .where("status", "=", TOKEN_STATUS.enabled)
    .where("remain_quota", "<=", 0)
    .where("unlimited_quota", "=", false)
    .execute()
    .catch(() => {});
}
