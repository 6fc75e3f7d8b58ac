// Per-token limits and budgets: requests per minute, tokens per minute (prompt + completion, counted at
// settlement), calls in flight, and a budget of quota per day, week or month (UTC) besides the one-off
// remaining quota. All 0 = none: a token without limits carries `limits: null` on its Caller and the relay
// does nothing more for it.
//
// Where the counts live:
// - rpm, tpm and concurrency: in Redis when REDIS_CONN_STRING is set (shared by every instance; each admission
//   is one Lua script, so the check and the take are atomic), else in this process's memory — and there too
//   while Redis cannot be asked (FallbackCounters: the limits then hold per instance). Minutes are fixed
//   windows (the minute of the clock, as LiteLLM counts). A call in flight holds a lease that expires LEASE_MS
//   after its last renewal: this process renews the leases of its live calls, so a crashed instance's slots
//   free themselves instead of leaking.
// - the budget: in the token row (budget_used in the period ending budget_reset_at), so it survives restarts
//   and is exact on every database. Admission adds the call's estimate with one conditional UPDATE (refused
//   when it would pass the budget; a new period starts in the same statement); settlement replaces the
//   estimate by what the call cost, in the period it was taken in. A crash between the two leaves the
//   estimate counted until the period ends: the budget errs on the side of spending less, never more.
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { Token } from "../../../db/schema.ts";
import { AppError } from "../../http/errors.ts";
import { CacheUnavailableError, RedisCache } from "../../infra/cache.ts";

export type BudgetPeriod = "" | "daily" | "weekly" | "monthly";
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ["", "daily", "weekly", "monthly"];

export interface TokenLimits {
  rpm: number;
  tpm: number;
  concurrency: number;
  /** quota per period; 0 when the token has no budget */
  budget: number;
  period: BudgetPeriod;
}

type LimitColumns = Pick<Token, "rpm_limit" | "tpm_limit" | "concurrency_limit" | "budget_quota" | "budget_period">;

/** The token's limits, or null when it has none (the relay's hot path then skips all of this). */
export function tokenLimits(t: LimitColumns): TokenLimits | null {
  const rpm = Math.max(0, Number(t.rpm_limit) || 0);
  const tpm = Math.max(0, Number(t.tpm_limit) || 0);
  const concurrency = Math.max(0, Number(t.concurrency_limit) || 0);
  const period = (BUDGET_PERIODS.includes(t.budget_period as BudgetPeriod) ? t.budget_period : "") as BudgetPeriod;
  const budget = period ? Math.max(0, Number(t.budget_quota) || 0) : 0;
  if (!rpm && !tpm && !concurrency && !budget) return null;
  return { rpm, tpm, concurrency, budget, period };
}

/** The end of the budget period holding `sec` (epoch seconds), in UTC: the next midnight, the next Monday's
 * midnight (ISO weeks), the first of the next month. 0 without a period. */
export function periodEnd(period: BudgetPeriod, sec: number): number {
  const d = new Date(sec * 1000);
  const y = d.getUTCFullYear(),
    m = d.getUTCMonth(),
    day = d.getUTCDate();
  switch (period) {
    case "daily":
      return Date.UTC(y, m, day + 1) / 1000;
    case "weekly":
      return Date.UTC(y, m, day - ((d.getUTCDay() + 6) % 7) + 7) / 1000;
    case "monthly":
      return Date.UTC(y, m + 1, 1) / 1000;
    default:
      return 0;
  }
}

// ---------------------------------------------------------------------------------------------------
// Counters: rpm, tpm, concurrency.

type Verdict = { ok: true } | { ok: false; kind: "rpm" | "tpm" | "concurrency"; retryMs: number };
export interface LiveUsage {
  rpm_used: number;
  tpm_used: number;
  concurrency_used: number;
}

interface CounterStore {
  /** Refuses, or counts the request and (with a lease id) takes a slot until `now + leaseMs`; atomically. */
  admit(tokenId: number, lim: TokenLimits, lease: string | null, now: number, leaseMs: number): Promise<Verdict>;
  addTokens(tokenId: number, n: number, now: number): Promise<void>;
  release(tokenId: number, lease: string): Promise<void>;
  renew(leases: Iterable<[string, number]>, until: number): Promise<void>;
  usage(tokenIds: number[], now: number): Promise<Map<number, LiveUsage>>;
}

const MINUTE_MS = 60_000;
const slotOf = (now: number) => Math.floor(now / MINUTE_MS);
// The braces keep a token's keys in one Redis Cluster slot, so one script may touch all of them.
const keys = (tokenId: number, now: number) => {
  const s = slotOf(now);
  return { rpm: `tl:{${tokenId}}:r:${s}`, tpm: `tl:{${tokenId}}:t:${s}`, conc: `tl:{${tokenId}}:c` };
};
/** Milliseconds until the current minute's window closes. */
const untilNextMinute = (now: number) => (slotOf(now) + 1) * MINUTE_MS - now;

class MemoryCounters implements CounterStore {
  private counts = new Map<string, { n: number; exp: number }>();
  private slots = new Map<number, Map<string, number>>();

  private count(key: string, now: number): number {
    const e = this.counts.get(key);
    return e && e.exp > now ? e.n : 0;
  }

  private bump(key: string, by: number, now: number) {
    const e = this.counts.get(key);
    if (e && e.exp > now) e.n += by;
    else this.counts.set(key, { n: by, exp: (slotOf(now) + 1) * MINUTE_MS });
    if (this.counts.size > 20_000) for (const [k, v] of this.counts) if (v.exp <= now) this.counts.delete(k);
  }

  private live(tokenId: number, now: number): Map<string, number> {
    let m = this.slots.get(tokenId);
    if (!m) this.slots.set(tokenId, (m = new Map()));
    for (const [id, exp] of m) if (exp <= now) m.delete(id);
    return m;
  }

  async admit(tokenId: number, lim: TokenLimits, lease: string | null, now: number, leaseMs: number): Promise<Verdict> {
    const k = keys(tokenId, now);
    if (lim.tpm && this.count(k.tpm, now) >= lim.tpm) return { ok: false, kind: "tpm", retryMs: untilNextMinute(now) };
    const slots = lim.concurrency ? this.live(tokenId, now) : null;
    if (slots && slots.size >= lim.concurrency) return { ok: false, kind: "concurrency", retryMs: 1000 };
    if (lim.rpm) {
      if (this.count(k.rpm, now) >= lim.rpm) return { ok: false, kind: "rpm", retryMs: untilNextMinute(now) };
      this.bump(k.rpm, 1, now);
    }
    if (slots && lease) slots.set(lease, now + leaseMs);
    return { ok: true };
  }

  async addTokens(tokenId: number, n: number, now: number) {
    this.bump(keys(tokenId, now).tpm, n, now);
  }

  async release(tokenId: number, lease: string) {
    const m = this.slots.get(tokenId);
    m?.delete(lease);
    if (m && m.size === 0) this.slots.delete(tokenId);
  }

  async renew(leases: Iterable<[string, number]>, until: number) {
    for (const [lease, tokenId] of leases) {
      const m = this.slots.get(tokenId);
      if (m?.has(lease)) m.set(lease, until);
    }
  }

  async usage(tokenIds: number[], now: number) {
    const out = new Map<number, LiveUsage>();
    for (const id of tokenIds) {
      const k = keys(id, now);
      out.set(id, {
        rpm_used: this.count(k.rpm, now),
        tpm_used: this.count(k.tpm, now),
        concurrency_used: this.slots.has(id) ? this.live(id, now).size : 0,
      });
    }
    return out;
  }
}

// KEYS: rpm counter, tpm counter, concurrency set (lease → expiry). ARGV: rpm, tpm, concurrency, now, lease ms,
// lease id ('' for none), ms to the end of the minute. Returns {0} or {kind, retry ms}: 1 rpm, 2 tpm, 3 concurrency.
const ADMIT = `
local now = tonumber(ARGV[4])
local left = tonumber(ARGV[7])
if tonumber(ARGV[2]) > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') >= tonumber(ARGV[2]) then return {2, left} end
local conc = tonumber(ARGV[3])
if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= conc then return {3, 1000} end
end
if tonumber(ARGV[1]) > 0 then
  if tonumber(redis.call('GET', KEYS[1]) or '0') >= tonumber(ARGV[1]) then return {1, left} end
  redis.call('INCR', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], left + 60000)
end
if conc > 0 and ARGV[6] ~= '' then
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[5]), ARGV[6])
  redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[5]) * 2)
end
return {0}`;

const ADD_TOKENS = `redis.call('INCRBY', KEYS[1], ARGV[1]) redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1`;

// KEYS: concurrency sets; ARGV: until, then one lease id per key. Only leases still present are renewed (XX).
const RENEW = `
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', ARGV[1], ARGV[i + 1])
  redis.call('PEXPIRE', key, ARGV[#ARGV])
end
return 1`;

// KEYS: per token, rpm, tpm, concurrency; ARGV: now. Returns the three counts per token.
const USAGE = `
local out = {}
for i = 1, #KEYS, 3 do
  out[#out + 1] = tonumber(redis.call('GET', KEYS[i]) or '0')
  out[#out + 1] = tonumber(redis.call('GET', KEYS[i + 1]) or '0')
  out[#out + 1] = redis.call('ZCOUNT', KEYS[i + 2], '(' .. ARGV[1], '+inf')
end
return out`;

class RedisCounters implements CounterStore {
  constructor(private redis: RedisCache) {}

  async admit(tokenId: number, lim: TokenLimits, lease: string | null, now: number, leaseMs: number): Promise<Verdict> {
    const k = keys(tokenId, now);
    const left = untilNextMinute(now);
    const r = (await this.redis.eval(
      ADMIT,
      [k.rpm, k.tpm, k.conc],
      [lim.rpm, lim.tpm, lim.concurrency, now, leaseMs, lease ?? "", left],
    )) as number[];
    const code = Number(r[0]);
    if (code === 0) return { ok: true };
    return { ok: false, kind: code === 1 ? "rpm" : code === 2 ? "tpm" : "concurrency", retryMs: Number(r[1]) };
  }

  async addTokens(tokenId: number, n: number, now: number) {
    await this.redis.eval(ADD_TOKENS, [keys(tokenId, now).tpm], [n, untilNextMinute(now) + MINUTE_MS]);
  }

  async release(tokenId: number, lease: string) {
    await this.redis.eval("return redis.call('ZREM', KEYS[1], ARGV[1])", [keys(tokenId, 0).conc], [lease]);
  }

  async renew(leases: Iterable<[string, number]>, until: number) {
    const list = [...leases];
    for (let i = 0; i < list.length; i += 200) {
      const part = list.slice(i, i + 200);
      await this.redis.eval(
        RENEW,
        part.map(([, id]) => keys(id, 0).conc),
        [until, ...part.map(([lease]) => lease), 2 * LEASE_MS],
      );
    }
  }

  async usage(tokenIds: number[], now: number) {
    const ks = tokenIds.flatMap((id) => {
      const k = keys(id, now);
      return [k.rpm, k.tpm, k.conc];
    });
    const r = tokenIds.length ? ((await this.redis.eval(USAGE, ks, [now])) as number[]) : [];
    return new Map(
      tokenIds.map((id, i) => [
        id,
        { rpm_used: Number(r[3 * i]), tpm_used: Number(r[3 * i + 1]), concurrency_used: Number(r[3 * i + 2]) },
      ]),
    );
  }
}

/**
 * Redis's counters, and this process's own while Redis cannot be asked (down, too slow, its circuit open): the
 * limits then hold per instance instead of every limited call failing or waiting. A slot taken locally is
 * released and renewed locally; one taken in Redis that cannot be released there expires with its lease.
 */
class FallbackCounters implements CounterStore {
  private local = new MemoryCounters();
  private localSlots = new Set<string>();
  constructor(private shared: RedisCounters) {}

  private async either<T>(shared: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    try {
      return await shared();
    } catch (e) {
      if (e instanceof CacheUnavailableError) return local();
      throw e;
    }
  }

  admit(tokenId: number, lim: TokenLimits, lease: string | null, now: number, leaseMs: number): Promise<Verdict> {
    return this.either(
      () => this.shared.admit(tokenId, lim, lease, now, leaseMs),
      async () => {
        const v = await this.local.admit(tokenId, lim, lease, now, leaseMs);
        if (v.ok && lease) this.localSlots.add(lease);
        return v;
      },
    );
  }

  addTokens(tokenId: number, n: number, now: number): Promise<void> {
    return this.either(
      () => this.shared.addTokens(tokenId, n, now),
      () => this.local.addTokens(tokenId, n, now),
    );
  }

  async release(tokenId: number, lease: string): Promise<void> {
    if (this.localSlots.delete(lease)) return this.local.release(tokenId, lease);
    await this.either(
      () => this.shared.release(tokenId, lease),
      async () => {},
    );
  }

  async renew(leases: Iterable<[string, number]>, until: number): Promise<void> {
    const local: [string, number][] = [];
    const shared: [string, number][] = [];
    for (const l of leases) (this.localSlots.has(l[0]) ? local : shared).push(l);
    await this.local.renew(local, until);
    if (shared.length)
      await this.either(
        () => this.shared.renew(shared, until),
        async () => {},
      );
  }

  usage(tokenIds: number[], now: number): Promise<Map<number, LiveUsage>> {
    return this.either(
      () => this.shared.usage(tokenIds, now),
      () => this.local.usage(tokenIds, now),
    );
  }
}

// ---------------------------------------------------------------------------------------------------
// Per app: the store, the clock and the leases of this process's calls in flight.

/** A slot in flight expires this long after its last renewal (renewed every third of it while the call lives). */
export const LEASE_MS = 60_000;
/** No call keeps a slot longer than this: a slot some path forgot to end would otherwise stay renewed for good. */
export const MAX_CALL_MS = 2 * 3600_000;

class LimitsRuntime {
  /** Milliseconds since the epoch; tests move it to cross minutes and budget periods. */
  clock: () => number = () => Date.now();
  leaseMs = LEASE_MS;
  readonly store: CounterStore;
  /** lease id → token id and start of this process's live calls */
  readonly live = new Map<string, { tokenId: number; since: number }>();
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(deps: AppDeps) {
    this.store =
      deps.cache instanceof RedisCache ? new FallbackCounters(new RedisCounters(deps.cache)) : new MemoryCounters();
  }

  hold(lease: string, tokenId: number) {
    this.live.set(lease, { tokenId, since: this.clock() });
    if (this.timer) return;
    this.timer = setInterval(
      () => {
        if (this.live.size === 0) {
          clearInterval(this.timer!);
          this.timer = null;
          return;
        }
        this.renew().catch((e) => console.error("token limit lease renewal failed:", (e as Error).message));
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    this.timer.unref?.();
  }

  /** Extends the leases of this process's live calls (those past MAX_CALL_MS are left to expire). */
  renew(): Promise<void> {
    const now = this.clock();
    const renewed: [string, number][] = [];
    for (const [lease, call] of this.live) {
      if (now - call.since > MAX_CALL_MS) this.live.delete(lease);
      else renewed.push([lease, call.tokenId]);
    }
    return this.store.renew(renewed, now + this.leaseMs);
  }

  drop(lease: string, tokenId: number): Promise<void> {
    this.live.delete(lease);
    return this.store.release(tokenId, lease);
  }
}

const runtimes = new WeakMap<AppDeps, LimitsRuntime>();

export function limitsRuntime(deps: AppDeps): LimitsRuntime {
  let rt = runtimes.get(deps);
  if (!rt) runtimes.set(deps, (rt = new LimitsRuntime(deps)));
  return rt;
}

// ---------------------------------------------------------------------------------------------------
// Admission and settlement.

/** What an admitted call holds against its token's limits until it ends. */
export interface LimitLease {
  /** The call (or a realtime session's response) cost `cost` quota and `tokens` tokens. */
  spend(cost: number, tokens: number): Promise<void>;
  /** The call is over: its slot frees and whatever of its budget estimate was not spent goes back. Once only. */
  end(): Promise<void>;
  /** A realtime session's next response, after the last was spent: its estimate taken from the budget as at
   * admission (429 when it does not fit). */
  holdNext(estimate: number): Promise<void>;
  /** The end (epoch seconds) of the budget period the call spends in; 0 without a budget. A task refunded
   * later gives its price back to that period only (core/task-settle.ts). */
  readonly budgetEnd: number;
}

/** 429 with Retry-After (whole seconds), and OpenAI's x-ratelimit-* headers for the limit that refused. */
function refused(
  message: string,
  code: string,
  retryMs: number,
  limit?: { kind: "requests" | "tokens"; value: number },
): AppError {
  const e = new AppError(429, message, code);
  e.headers = { "Retry-After": String(seconds(retryMs)) };
  if (limit) {
    e.headers[`x-ratelimit-limit-${limit.kind}`] = String(limit.value);
    e.headers[`x-ratelimit-remaining-${limit.kind}`] = "0";
    e.headers[`x-ratelimit-reset-${limit.kind}`] = `${seconds(retryMs)}s`;
  }
  return e;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * Checks and takes the token's limits for one call whose hold is `estimate`: counts the request, takes a slot,
 * adds the estimate to the period's budget — or throws 429 (with Retry-After) and takes nothing that matters.
 */
export async function takeTokenLimits(
  deps: AppDeps,
  tokenId: number,
  lim: TokenLimits,
  estimate: number,
): Promise<LimitLease> {
  const rt = limitsRuntime(deps);
  const now = rt.clock();
  let lease: string | null = null;
  if (lim.rpm || lim.tpm || lim.concurrency) {
    lease = lim.concurrency ? crypto.randomUUID() : null;
    const v = await rt.store.admit(tokenId, lim, lease, now, rt.leaseMs);
    if (!v.ok) {
      const [what, limit] =
        v.kind === "rpm" ? ["request", lim.rpm] : v.kind === "tpm" ? ["token", lim.tpm] : ["call", lim.concurrency];
      const unit = `${what}${limit === 1 ? "" : "s"} ${v.kind === "concurrency" ? "in flight" : "per minute"}`;
      const header =
        v.kind === "concurrency"
          ? undefined
          : { kind: v.kind === "rpm" ? ("requests" as const) : ("tokens" as const), value: limit as number };
      throw refused(
        `this token's rate limit is reached: at most ${limit} ${unit}; retry in ${seconds(v.retryMs)} s`,
        "rate_limit_exceeded",
        v.retryMs,
        header,
      );
    }
    if (lease) rt.hold(lease, tokenId);
  }
  let end = 0;
  let held = 0;
  if (lim.budget) {
    end = periodEnd(lim.period, Math.floor(now / 1000));
    const amount = Math.max(0, Math.floor(estimate));
    try {
      if (await takeBudget(deps, tokenId, lim, amount, Math.floor(now / 1000), end)) held = amount;
    } catch (e) {
      if (lease) await rt.drop(lease, tokenId).catch(() => {});
      throw e;
    }
  }
  return new Lease(deps, rt, tokenId, lim, lease, held, end);
}

/** now ≥ budget_reset_at: the row's period is over, and this statement starts the next one. */
const over = (now: number) => sql<boolean>`budget_reset_at <= ${now}`;

/** Adds `amount` to the period's spend (true), or throws 429; false when the row no longer has a budget. */
async function takeBudget(
  deps: AppDeps,
  tokenId: number,
  lim: TokenLimits,
  amount: number,
  now: number,
  end: number,
): Promise<boolean> {
  // budget_used is set before budget_reset_at: MySQL evaluates SET left to right with the new values.
  const r = await deps.db
    .updateTable("tokens")
    .set({
      budget_used: sql`case when ${over(now)} then ${amount} else budget_used + ${amount} end`,
      budget_reset_at: sql`case when ${over(now)} then ${end} else budget_reset_at end`,
    })
    .where("id", "=", tokenId)
    .where("budget_quota", ">", 0)
    // A call estimated at 0 still needs budget left: used + max(estimate, 1) ≤ budget.
    .where(
      sql`(case when ${over(now)} then 0 else budget_used end) + ${Math.max(1, amount)}`,
      "<=",
      sql.ref("budget_quota"),
    )
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) > 0) return true;
  const row = await deps.db
    .selectFrom("tokens")
    .select(["budget_quota", "budget_used", "budget_reset_at"])
    .where("id", "=", tokenId)
    .executeTakeFirst();
  if (!row || Number(row.budget_quota) <= 0) return false; // the budget was just removed: nothing to hold against
  const resetAt = Number(row.budget_reset_at) > now ? Number(row.budget_reset_at) : end;
  const used = Number(row.budget_reset_at) > now ? Number(row.budget_used) : 0;
  const wait = (resetAt - now) * 1000;
  const label = `${lim.period} budget of ${Number(row.budget_quota)} quota`;
  if (Math.max(1, amount) > Number(row.budget_quota)) {
    // No period can take this call: waiting does not help, so no Retry-After, and the SDKs that read
    // x-should-retry (openai, Anthropic) surface it at once instead of retrying.
    const e = new AppError(
      429,
      `this call (estimated at ${amount} quota) is larger than this token's whole ${label}: no period can take it (ask for fewer max_tokens, or raise the budget)`,
      "budget_exceeded",
    );
    e.headers = { "x-should-retry": "false" };
    throw e;
  }
  throw refused(
    used >= Number(row.budget_quota)
      ? `this token's ${label} is used up; it resets in ${seconds(wait)} s`
      : `this call (estimated at ${amount} quota) would exceed this token's ${label} (${used} used); it resets in ${seconds(wait)} s`,
    "budget_exceeded",
    wait,
  );
}

class Lease implements LimitLease {
  private ended = false;
  constructor(
    private deps: AppDeps,
    private rt: LimitsRuntime,
    private tokenId: number,
    private lim: TokenLimits,
    private slot: string | null,
    private held: number,
    private end_: number,
  ) {}

  async spend(cost: number, tokens: number): Promise<void> {
    const jobs: Promise<unknown>[] = [];
    if (this.lim.tpm && tokens > 0) jobs.push(this.rt.store.addTokens(this.tokenId, tokens, this.rt.clock()));
    if (this.lim.budget) {
      const held = this.held;
      this.held = 0;
      const amount = Math.max(0, Math.floor(cost));
      // The estimate becomes the cost in the period it was taken in (one statement: no window in which a
      // concurrent call could see the refund before the charge); a later spend (realtime) goes to the current one.
      jobs.push(
        held > 0 || this.end_ === periodEnd(this.lim.period, Math.floor(this.rt.clock() / 1000))
          ? adjustBudget(this.deps, this.tokenId, amount - held, this.end_)
          : amount > 0
            ? addBudget(this.deps, this.tokenId, this.lim, amount, Math.floor(this.rt.clock() / 1000))
            : Promise.resolve(),
      );
    }
    await Promise.all(jobs).catch((e) => console.error("token limit settlement failed:", (e as Error).message));
  }

  async holdNext(estimate: number): Promise<void> {
    if (!this.lim.budget || this.ended) return;
    const now = Math.floor(this.rt.clock() / 1000);
    const end = periodEnd(this.lim.period, now);
    const amount = Math.max(0, Math.floor(estimate));
    if (!(await takeBudget(this.deps, this.tokenId, this.lim, amount, now, end))) return;
    if (this.held > 0) await adjustBudget(this.deps, this.tokenId, -this.held, this.end_);
    this.held = amount;
    this.end_ = end;
  }

  get budgetEnd(): number {
    return this.lim.budget ? this.end_ : 0;
  }

  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const jobs: Promise<unknown>[] = [];
    if (this.slot) jobs.push(this.rt.drop(this.slot, this.tokenId));
    if (this.held > 0) {
      jobs.push(adjustBudget(this.deps, this.tokenId, -this.held, this.end_));
      this.held = 0;
    }
    await Promise.all(jobs).catch((e) => console.error("token limit release failed:", (e as Error).message));
  }
}

/** Moves the period's spend by `delta` if the period that ends at `end` is still the row's (never below 0). */
async function adjustBudget(deps: AppDeps, tokenId: number, delta: number, end: number): Promise<void> {
  if (delta === 0) return;
  await deps.db
    .updateTable("tokens")
    .set({ budget_used: sql`case when budget_used + ${delta} < 0 then 0 else budget_used + ${delta} end` })
    .where("id", "=", tokenId)
    .where("budget_reset_at", "=", end)
    .execute();
}

/** Adds spend to the current period, starting it if the row's is over. */
async function addBudget(deps: AppDeps, tokenId: number, lim: TokenLimits, amount: number, now: number): Promise<void> {
  await deps.db
    .updateTable("tokens")
    .set({
      budget_used: sql`case when ${over(now)} then ${amount} else budget_used + ${amount} end`,
      budget_reset_at: sql`case when ${over(now)} then ${periodEnd(lim.period, now)} else budget_reset_at end`,
    })
    .where("id", "=", tokenId)
    .execute();
}

// ---------------------------------------------------------------------------------------------------
// For the token list: usage against the limits.

export interface TokenUsage extends LiveUsage {
  /** spent in the current period (0 once it is over) */
  budget_used: number;
  /** when the current period ends (epoch seconds); 0 when none has started */
  budget_reset_at: number;
}

export async function tokenUsage(
  deps: AppDeps,
  rows: (LimitColumns & Pick<Token, "id" | "budget_used" | "budget_reset_at">)[],
): Promise<Map<number, TokenUsage>> {
  const rt = limitsRuntime(deps);
  const now = rt.clock();
  const counted = rows
    .filter((r) => {
      const l = tokenLimits(r);
      return l && (l.rpm || l.tpm || l.concurrency);
    })
    .map((r) => r.id);
  const live = counted.length ? await rt.store.usage(counted, now) : new Map<number, LiveUsage>();
  const sec = Math.floor(now / 1000);
  return new Map(
    rows.map((r) => {
      const current = Number(r.budget_reset_at) > sec;
      return [
        r.id,
        {
          ...(live.get(r.id) ?? { rpm_used: 0, tpm_used: 0, concurrency_used: 0 }),
          budget_used: current ? Number(r.budget_used) : 0,
          budget_reset_at: current ? Number(r.budget_reset_at) : 0,
        },
      ];
    }),
  );
}
