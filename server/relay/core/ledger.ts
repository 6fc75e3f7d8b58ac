// The one place relay calls move balances. A call takes quota before it runs (its hold), and is settled
// after it: the hold becomes the call's cost, the difference goes back (or, when the answer cost more,
// is charged as far as the balances reach). Two implementations, chosen by the database:
//
// - SQLite (one process owns the file): holds are reservations in this process's memory, checked against
//   the balance read synchronously from the database minus every reservation and unwritten debit, with no
//   await between the read and the reservation — so concurrent calls can never reserve the same units, and
//   the hot path writes nothing. The write-behind debits the balance in the same transaction as it writes
//   the call's log: a crash loses both or neither.
// - PostgreSQL / MySQL (instances may share the database): the hold is one transaction — conditional
//   UPDATEs of token and user plus a quota_holds row (on PostgreSQL one statement doing all three). The write-behind deletes the row in the same
//   transaction as it writes the call's log and refunds the difference, so money that left a balance is
//   always in a hold row or a log. Each instance renews its rows; rows nobody renews (the instance died)
//   are refunded by any instance, and an instance starting again refunds its previous life's rows at once.
//
// Locks are always taken token before user (and the write-behind updates tokens before users, each in id
// order), so concurrent transactions on PostgreSQL and MySQL cannot deadlock one another.
import type { Database as SqliteDatabase } from "bun:sqlite";
import type { Database, Dialect } from "../../../db/index.ts";
import { CompiledQuery, type Selectable } from "kysely";
import type { QuotaHoldsTable } from "../../../db/schema.ts";
import { rawSqlite } from "../../../db/index.ts";
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
  /** the quota_holds row; null when reserved in this process's memory (SQLite) or nothing was taken */
  id: string | null;
  userId: number;
  /** the token whose remain_quota is drawn; 0 when none is (unlimited token, playground) */
  tokenId: number;
  amount: number;
}

export interface Ledger {
  /** Takes `amount` from the token and the user, or throws 403 naming which balance is short; changes nothing then. */
  take(payer: Payer, amount: number): Promise<Hold>;
  /** The call was not served: everything goes back now. */
  giveBack(hold: Hold): Promise<void>;
  /**
   * The call cost `cost`: takes it out of the hold (charging beyond the hold only as far as the balances
   * reach) and queues the settlement with the call's records in one write-behind entry, so they are written
   * in the same transaction. Returns the quota actually taken, which `entry` receives to build the records.
   */
  settle(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): Promise<number>;
  /** settle() without a promise, for a ledger that settles in memory (SQLite's); absent where settling is I/O. */
  settleNow?(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): number;
  /** Roughly what the user can still spend (the low-balance warning), given the balance read at auth. */
  remaining(userId: number, authQuota: number): number;
  stop(): Promise<void>;
}

const limitedToken = (payer: Payer) => (payer.tokenId !== 0 && !payer.unlimited ? payer.tokenId : 0);
const noHold = (payer: Payer): Hold => ({ id: null, userId: payer.userId, tokenId: limitedToken(payer), amount: 0 });

const tokenShort = () => new AppError(403, "token quota is not enough for this request", "insufficient_token_quota");
const userShort = () => new AppError(403, "user quota is not enough for this request", "insufficient_user_quota");
const userBanned = () => new AppError(403, "user has been banned", "user_banned");

export interface LedgerOptions {
  /** this process's name on its quota_holds rows: stable across restarts of the same instance */
  instance: string;
  /** a row not renewed for this long belongs to a dead instance and is refunded */
  leaseMs: number;
  /**
   * PostgreSQL: the connections that take holds, committing without waiting for the WAL flush (the hold was one
   * flush per call, and calls of one user queue on its row behind it). Safe for holds alone: a hold the server
   * loses in a crash loses its debit with it, and the call's settlement, finding no row, charges the cost in
   * full in the same durable transaction as the log. Refunds, settlements and logs stay synchronous. The
   * ledger closes it on stop.
   */
  holdDb?: Database;
}

export function openLedger(db: Database, dialect: Dialect, writer: WriteBehind, opts: LedgerOptions): Ledger {
  const raw = rawSqlite(db);
  if (raw) return new MemoryLedger(db, raw, writer);
  const ledger = new HoldLedger(db, dialect, writer, opts);
  ledger.start();
  return ledger;
}

// ---------------------------------------------------------------------------------------------------

/**
 * Balance rows are kept briefly instead of read on every call (two SQLite reads per call were a fifth of the
 * relay's CPU). The ledger's own debits drop the rows they touch the moment the write-behind commits them
 * (before they stop counting as unwritten), so a kept row never hides a debit; what other writers change (a
 * redemption, a top-up, an administrator's edit, a ban) is seen within this many milliseconds.
 */
export const BALANCE_ROW_TTL_MS = 250;

interface Row { balance: number; status: number; at: number }

/** The kept row of `id`, read anew through `read` once older than BALANCE_ROW_TTL_MS. */
function kept(rows: Map<number, Row>, id: number, read: () => Omit<Row, "at"> | null): Row | null {
  const now = performance.now();
  let row = rows.get(id);
  if (!row || now - row.at > BALANCE_ROW_TTL_MS) {
    const r = read();
    if (!r) return null;
    row = { ...r, at: now };
    if (rows.size > 100_000) rows.clear();
    rows.set(id, row);
  }
  return row;
}

class MemoryLedger implements Ledger {
  private userQuery;
  private tokenQuery;
  private users = new Map<number, Row>();
  private tokens = new Map<number, Row>();
  constructor(private db: Database, raw: SqliteDatabase, private writer: WriteBehind) {
    this.userQuery = raw.query<{ quota: number; status: number }, [number]>("select quota, status from users where id = ?");
    this.tokenQuery = raw.query<{ remain_quota: number; status: number }, [number]>("select remain_quota, status from tokens where id = ?");
    writer.onCommitted = (users, tokens) => {
      for (const id of users) this.users.delete(id);
      for (const id of tokens) this.tokens.delete(id);
    };
  }

  private userRow(id: number): Row | null {
    return kept(this.users, id, () => {
      const r = this.userQuery.get(id);
      return r && { balance: r.quota, status: r.status };
    });
  }

  private tokenRow(id: number): Row | null {
    return kept(this.tokens, id, () => {
      const r = this.tokenQuery.get(id);
      return r && { balance: r.remain_quota, status: r.status };
    });
  }

  async take(payer: Payer, amount: number): Promise<Hold> {
    if (amount <= 0) return noHold(payer);
    const tokenId = limitedToken(payer);
    // Everything from the reads to the reservation runs without yielding: no other call can reserve between.
    if (tokenId) {
      const t = this.tokenRow(tokenId);
      if (!t || t.status !== TOKEN_STATUS.enabled || t.balance - this.writer.unsettled("token", tokenId) < amount) {
        void markExhausted(this.db, tokenId);
        throw tokenShort();
      }
    }
    const u = this.userRow(payer.userId);
    if (!u || u.status !== USER_STATUS.enabled) throw userBanned();
    if (u.balance - this.writer.unsettled("user", payer.userId) < amount) throw userShort();
    this.writer.reserve(payer.userId, tokenId, amount);
    return { id: null, userId: payer.userId, tokenId, amount };
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
    return this.available(userId, 0);
  }

  private available(userId: number, tokenId: number): number {
    let left = (this.userRow(userId)?.balance ?? 0) - this.writer.unsettled("user", userId);
    if (tokenId) left = Math.min(left, (this.tokenRow(tokenId)?.balance ?? 0) - this.writer.unsettled("token", tokenId));
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

/**
 * PostgreSQL's hold (HoldLedger.takeInOneStatement) as fixed text: built through Kysely on every call it cost
 * more CPU than the round trip; as one text the driver also prepares it once per connection.
 * $1 amount, $2 token id (0: none), $3 enabled token status, $4 user id, $5 enabled user status, $6 hold id,
 * $7 instance, $8 life, $9 now.
 */
const HOLD_IN_ONE_STATEMENT = `
  with t as (
    update tokens set remain_quota = remain_quota - $1
    where id = $2 and status = $3 and remain_quota >= $1 returning id
  ), u as (
    update users set quota = quota - $1
    where id = $4 and status = $5 and quota >= $1
      and (cast($2 as bigint) = 0 or exists (select 1 from t)) returning id
  ), h as (
    insert into quota_holds (id, user_id, token_id, amount, instance, life, created_at, renewed_at)
    select cast($6 as text), cast($4 as bigint), cast($2 as bigint), cast($1 as bigint),
      cast($7 as text), cast($8 as text), cast($9 as bigint), cast($9 as bigint)
    where exists (select 1 from u) returning id
  )
  select (select count(*) from t)::int as t, (select count(*) from u)::int as u,
    case when exists (select 1 from t) and not exists (select 1 from u) then 1 / (select count(*) from h)::int else 0 end as undo`;

class HoldLedger implements Ledger {
  private timer: ReturnType<typeof setInterval> | null = null;
  /** This process's life of the instance: rows of the same instance with another life are left from before a restart. */
  private readonly life = crypto.randomUUID().slice(0, 16);
  private sweeping: Promise<void> | null = null;

  constructor(private db: Database, private dialect: Dialect, private writer: WriteBehind, private opts: LedgerOptions) {}

  start(): void {
    // The rows this instance left behind when it last stopped without settling them (a crash) go back at once.
    this.sweeping = this.sweep(true).catch((e) => console.error("refunding interrupted holds failed:", e.message)).finally(() => (this.sweeping = null));
    const every = Math.max(50, Math.floor(this.opts.leaseMs / 4));
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.renew().then(() => this.sweep(false))
        .catch((e) => console.error("hold renewal failed:", e.message)).finally(() => (this.sweeping = null));
    }, every);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
    await this.opts.holdDb?.destroy();
  }

  async take(payer: Payer, amount: number): Promise<Hold> {
    if (amount <= 0) return noHold(payer);
    const tokenId = limitedToken(payer);
    const hold: Hold = { id: crypto.randomUUID(), userId: payer.userId, tokenId, amount };
    const now = Math.floor(Date.now() / 1000);
    const outcome = await withRetry(() => this.dialect === "postgres" ? this.takeInOneStatement(hold, now) : this.takeInTransaction(hold, now));
    if (outcome === "token") {
      await markExhausted(this.db, tokenId);
      throw tokenShort();
    }
    if (outcome === "user") {
      const user = await this.db.selectFrom("users").select("status").where("id", "=", payer.userId).executeTakeFirst();
      throw user && user.status !== USER_STATUS.enabled ? userBanned() : userShort();
    }
    return hold;
  }

  /** The hold as a transaction: token, user, hold row (MySQL; five round trips with the row locks held throughout). */
  private takeInTransaction(hold: Hold, now: number): Promise<"held" | "token" | "user"> {
    const { userId, tokenId, amount } = hold;
    return this.db.transaction().execute(async (trx) => {
      if (tokenId) {
        const t = await trx.updateTable("tokens").set((eb) => ({ remain_quota: eb("remain_quota", "-", amount) }))
          .where("id", "=", tokenId).where("status", "=", TOKEN_STATUS.enabled).where("remain_quota", ">=", amount).executeTakeFirst();
        if (Number(t.numUpdatedRows) === 0) return "token" as const;
      }
      const u = await trx.updateTable("users").set((eb) => ({ quota: eb("quota", "-", amount) }))
        .where("id", "=", userId).where("status", "=", USER_STATUS.enabled).where("quota", ">=", amount).executeTakeFirst();
      if (Number(u.numUpdatedRows) === 0) throw new ShortUser();
      await trx.insertInto("quota_holds").values({
        id: hold.id!, user_id: userId, token_id: tokenId, amount, instance: this.opts.instance, life: this.life, created_at: now, renewed_at: now,
      }).execute();
      return "held" as const;
    }).catch(async (e) => {
      if (!(e instanceof ShortUser)) throw e;
      return "user" as const;
    });
  }

  /**
   * PostgreSQL: the same hold as one statement, so one round trip and the token's and user's row locks held
   * for one statement instead of a whole transaction (all calls of a user queue on its row). The user is
   * debited only if the token was; a token debited for a user that is short makes the statement divide by
   * zero, which undoes it whole.
   */
  private async takeInOneStatement(hold: Hold, now: number): Promise<"held" | "token" | "user"> {
    const { userId, tokenId, amount } = hold;
    try {
      const r = await (this.opts.holdDb ?? this.db).executeQuery<{ t: number; u: number }>(CompiledQuery.raw(HOLD_IN_ONE_STATEMENT,
        [amount, tokenId, TOKEN_STATUS.enabled, userId, USER_STATUS.enabled, hold.id, this.opts.instance, this.life, now]));
      const row = r.rows[0];
      if (Number(row?.u) === 1) return "held";
      return tokenId && Number(row?.t) === 0 ? "token" : "user";
    } catch (e) {
      // division_by_zero: the token had enough and the user not (the token's debit went with the statement).
      if (errorCodes(e).includes("22012")) return "user";
      throw e;
    }
  }

  async giveBack(hold: Hold): Promise<void> {
    if (hold.id) await withRetry(() => this.refund(hold.id!, () => true));
  }

  async settle(hold: Hold, cost: number, entry: (taken: number) => SettledEntry): Promise<number> {
    const want = Math.max(0, cost);
    let taken = Math.min(want, hold.amount);
    if (want > hold.amount) {
      // A call admitted without a hold (a zero estimate) gets a row of its own first, so it is settled with its log like every other.
      if (!hold.id) hold = await this.emptyHold(hold);
      const h = hold;
      taken = h.amount + await withRetry(() => this.chargeExtra(h, want - h.amount));
      hold = { ...hold, amount: taken };
    }
    // The write-behind refunds amount − taken when it deletes the row with the log.
    this.writer.settled(hold, taken, entry(taken));
    return taken;
  }

  remaining(_userId: number, authQuota: number): number {
    return authQuota;
  }

  /** More than the hold: as much of `extra` as token and user still have, added to the hold row. */
  private chargeExtra(hold: Hold, extra: number): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      let left = extra;
      if (hold.tokenId) {
        const t = await trx.selectFrom("tokens").select("remain_quota").where("id", "=", hold.tokenId).forUpdate().executeTakeFirst();
        left = Math.min(left, Math.max(0, Number(t?.remain_quota ?? 0)));
      }
      const u = await trx.selectFrom("users").select("quota").where("id", "=", hold.userId).forUpdate().executeTakeFirst();
      left = Math.min(left, Math.max(0, Number(u?.quota ?? 0)));
      if (left <= 0) return 0;
      if (hold.tokenId) await trx.updateTable("tokens").set((eb) => ({ remain_quota: eb("remain_quota", "-", left) })).where("id", "=", hold.tokenId).execute();
      await trx.updateTable("users").set((eb) => ({ quota: eb("quota", "-", left) })).where("id", "=", hold.userId).execute();
      await trx.updateTable("quota_holds").set((eb) => ({ amount: eb("amount", "+", left) })).where("id", "=", hold.id!).execute();
      return left;
    });
  }

  private async emptyHold(hold: Hold): Promise<Hold> {
    const id = crypto.randomUUID();
    const now = Math.floor(Date.now() / 1000);
    await this.db.insertInto("quota_holds").values({
      id, user_id: hold.userId, token_id: hold.tokenId, amount: 0, instance: this.opts.instance, life: this.life, created_at: now, renewed_at: now,
    }).execute();
    return { ...hold, id, amount: 0 };
  }

  /** Deletes a hold row and gives its amount back, in one transaction, if the row (read under lock) still qualifies. */
  private refund(id: string, qualifies: (row: QuotaHold) => boolean): Promise<void> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom("quota_holds").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
      if (!row || !qualifies(row)) return;
      await trx.deleteFrom("quota_holds").where("id", "=", id).execute();
      const amount = Number(row.amount);
      if (amount <= 0) return;
      if (row.token_id) await trx.updateTable("tokens").set((eb) => ({ remain_quota: eb("remain_quota", "+", amount) })).where("id", "=", row.token_id).execute();
      await trx.updateTable("users").set((eb) => ({ quota: eb("quota", "+", amount) })).where("id", "=", row.user_id).execute();
    });
  }

  /** Rows of this life only: those of a previous life (same instance name) are refunded, never kept alive. */
  private async renew(): Promise<void> {
    await this.db.updateTable("quota_holds").set({ renewed_at: Math.floor(Date.now() / 1000) })
      .where("instance", "=", this.opts.instance).where("life", "=", this.life).execute();
  }

  /** Refunds holds whose instance is gone: this instance's own from before it started, or anyone's past the lease. */
  private async sweep(own: boolean): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    const staleBefore = now - Math.ceil(this.opts.leaseMs / 1000);
    for (;;) {
      let q = this.db.selectFrom("quota_holds").select("id").limit(100);
      q = own ? q.where("instance", "=", this.opts.instance).where("life", "<>", this.life) : q.where("renewed_at", "<", staleBefore);
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

class ShortUser extends Error {}
type QuotaHold = Selectable<QuotaHoldsTable>;

async function markExhausted(db: Database, tokenId: number): Promise<void> {
  if (tokenId === 0) return;
  await db.updateTable("tokens").set({ status: TOKEN_STATUS.exhausted })
    .where("id", "=", tokenId).where("status", "=", TOKEN_STATUS.enabled).where("remain_quota", "<=", 0)
    .where("unlimited_quota", "=", false).execute().catch(() => {});
}
