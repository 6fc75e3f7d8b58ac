// In-memory views the hot path reads instead of the database: tokens (with their user) and the routing
// table (enabled channels × abilities). Entries live a few seconds. Token and user writes
// (modules/token/events.ts) and channel and ability writes (modules/channel/events.ts) are announced to
// this instance and, through the shared cache, to the others, so a ban, a disabled token or a disabled
// channel takes effect at once everywhere. Balances are never trusted from here: spends are conditional
// UPDATEs.
import type { AppDeps } from "../deps.ts";
import type { Channel, Token } from "../../db/schema.ts";
import { createAsyncCommitPool, dialectOf, type Dialect } from "../../db/index.ts";
import { CHANNEL_STATUS } from "../catalogue/index.ts";
import type { Candidate } from "./select.ts";
import { WriteBehind } from "../jobs/writebehind.ts";
import { Journal, journalDir } from "../jobs/journal.ts";
import { openLedger, type Ledger } from "./core/ledger.ts";
import { creditLimit } from "./billing.ts";
import { dataExportPolicy } from "../modules/dashboard/export.ts";
import { onTokenChanged } from "../modules/token/events.ts";
import { onChannelsChanged } from "../modules/channel/events.ts";
import type { Subscription } from "../infra/announce.ts";
import { parseAllowIps, type IpRange } from "../modules/token/ips.ts";
import { registerPendingWrites } from "../http/metrics.ts";
import { loadToken, type TokenUser } from "./token-load.ts";

export const CACHE_TTL_MS = 3000;
/** Unknown keys are remembered briefly so a flood of bad keys does not reach the database. */
const MISS_TTL_MS = 1000;

export type { TokenUser } from "./token-load.ts";
export interface TokenEntry {
  token: Token;
  user: TokenUser;
  /** The allow list, parsed once per load (empty = anyone). */
  allowIps: IpRange[];
}

class TokenCache {
  private map = new Map<string, { entry: TokenEntry | null; at: number }>();
  /** Bumped on every invalidation, so a load that read the database before it never installs its result. */
  private generation = 0;
  private dialect: Dialect;
  constructor(private deps: AppDeps) {
    this.dialect = dialectOf(deps.db);
  }

  /** The cached entry (null: a cached miss), or undefined when it has to be loaded: get() it. */
  cached(key: string): TokenEntry | null | undefined {
    const hit = this.map.get(key);
    return hit && Date.now() - hit.at < (hit.entry ? CACHE_TTL_MS : MISS_TTL_MS) ? hit.entry : undefined;
  }

  async get(key: string): Promise<TokenEntry | null> {
    const cached = this.cached(key);
    if (cached !== undefined) return cached;
    const now = Date.now();
    const gen = this.generation;
    const found = await loadToken(this.deps.db, this.dialect, key);
    const entry: TokenEntry | null = found && { ...found, allowIps: parseAllowIps(found.token.allow_ips).ranges };
    if (gen !== this.generation) return entry;
    if (this.map.size > 50_000) this.map.clear();
    this.map.set(key, { entry, at: now });
    return entry;
  }

  forget(key: string) {
    this.generation++;
    this.map.delete(key);
  }

  /** Drops every token of the user; a scan, but user changes are rare next to relay calls. */
  forgetUser(userId: number) {
    this.generation++;
    for (const [key, hit] of this.map) if (hit.entry?.user.id === userId) this.map.delete(key);
  }

  clear() {
    this.generation++;
    this.map.clear();
  }
}

export interface RoutingTable {
  channels: Map<number, Channel>;
  /** `${group}\n${model}` → candidates */
  abilities: Map<string, Candidate[]>;
  /** group → model names (enabled abilities on enabled channels), sorted */
  modelsByGroup: Map<string, string[]>;
  /** `${group}\n${model}` of abilities whose channels are all disabled (manually or by automation): the model
   * exists for the group but is down, which answers 503 where an unknown model answers 404 */
  offline: Set<string>;
  loadedAt: number;
}

class RoutingCache {
  private table: RoutingTable | null = null;
  private loading: Promise<RoutingTable> | null = null;
  /** Bumped by clear(), so a load that started before a change never installs its stale result. */
  private generation = 0;
  private changes: Subscription;
  /** Resolves once other instances' channel changes are heard. */
  readonly listening: Promise<void>;
  constructor(private deps: AppDeps) {
    this.changes = onChannelsChanged(deps, () => this.clear());
    this.listening = this.changes.ready;
  }

  /** Fresh table, or the stale one while a reload runs in the background (the hot path never waits twice). */
  async get(): Promise<RoutingTable> {
    return this.current() ?? this.reload();
  }

  /** get() without a promise once a table has loaded (null before the first load: get() it). */
  current(): RoutingTable | null {
    if (!this.table) return null;
    if (Date.now() - this.table.loadedAt >= CACHE_TTL_MS)
      void this.reload().catch((e) => console.error("routing table reload failed:", e.message));
    return this.table;
  }

  reload(): Promise<RoutingTable> {
    if (this.loading) return this.loading;
    const gen = this.generation;
    const p = this.load()
      .then((t) => {
        if (gen === this.generation) this.table = t;
        return t;
      })
      .finally(() => {
        if (this.loading === p) this.loading = null;
      });
    this.loading = p;
    return p;
  }

  private async load(): Promise<RoutingTable> {
    const { db } = this.deps;
    const rows = await db.selectFrom("channels").selectAll().where("status", "=", CHANNEL_STATUS.enabled).execute();
    const channels = new Map(rows.map((c) => [c.id, c]));
    const abilities = new Map<string, Candidate[]>();
    const models = new Map<string, Set<string>>();
    const offline = new Set<string>();
    for (const a of await db.selectFrom("abilities").selectAll().execute()) {
      const k = `${a.group}\n${a.model}`;
      if (!a.enabled || !channels.has(a.channel_id)) {
        offline.add(k);
        continue;
      }
      let list = abilities.get(k);
      if (!list) abilities.set(k, (list = []));
      list.push({ channelId: a.channel_id, priority: Number(a.priority ?? 0), weight: Number(a.weight ?? 0) });
      let set = models.get(a.group);
      if (!set) models.set(a.group, (set = new Set()));
      set.add(a.model);
    }
    const modelsByGroup = new Map([...models].map(([g, s]) => [g, [...s].sort()]));
    for (const k of abilities.keys()) offline.delete(k);
    return { channels, abilities, modelsByGroup, offline, loadedAt: Date.now() };
  }

  clear() {
    this.generation++;
    this.table = null;
    this.loading = null;
  }

  stopListening(): Promise<void> {
    return this.changes.unsubscribe();
  }
}

export interface RelayState {
  dialect: Dialect;
  tokens: TokenCache;
  routing: RoutingCache;
  writer: WriteBehind;
  ledger: Ledger;
}

/** PostgreSQL: connections of the ledger's own pool for topping leases up (core/ledger.ts, LedgerOptions.topUpDb):
 * one top-up per payer per burst, so a few suffice. */
const TOP_UP_POOL_SIZE = 4;

const states = new WeakMap<AppDeps, RelayState>();

export function relayState(deps: AppDeps): RelayState {
  let s = states.get(deps);
  if (!s) {
    const dir = journalDir(deps.config);
    const journal = dir ? new Journal(dir) : null;
    const writer = new WriteBehind(deps.db, deps.config.batchUpdateIntervalMs, dataExportPolicy(deps.options), journal);
    writer.start();
    const dialect = dialectOf(deps.db);
    const { database } = deps.config;
    const topUpDb =
      dialect === "postgres" && database.kind === "postgres"
        ? createAsyncCommitPool(database.url, TOP_UP_POOL_SIZE, database.timeouts)
        : undefined;
    const ledger = openLedger(deps.db, dialect, writer, {
      instance: deps.config.instanceId,
      leaseMs: deps.config.holdLeaseMs,
      topUpDb,
      credit: () => creditLimit(deps),
    });
    const tokens = new TokenCache(deps);
    const routing = new RoutingCache(deps);
    const tokenChanges = onTokenChanged(deps, (c) => {
      if ("key" in c) return tokens.forget(c.key);
      if (!("userId" in c)) return tokens.clear();
      tokens.forgetUser(c.userId);
      ledger.userChanged?.(c.userId);
    });
    const unsubscribe = [registerPendingWrites("relay", () => writer.backlog())];
    deps.shutdownHooks.push(async () => {
      for (const u of unsubscribe) u();
      await tokenChanges.unsubscribe();
      await routing.stopListening();
      // Written and synced before the last flush: a database that does not answer leaves it for the next start.
      journal?.write();
      await writer.stop();
      journal?.close();
      await ledger.stop();
    });
    s = { dialect, tokens, routing, writer, ledger };
    states.set(deps, s);
  }
  return s;
}

/** Call after changing tokens, users, channels or abilities so this instance routes on fresh data at once. */
export function invalidateRelayCaches(deps: AppDeps): void {
  const s = states.get(deps);
  if (!s) return;
  s.tokens.clear();
  s.routing.clear();
}

/** Waits for streams still being read and in-flight settlements, then writes every pending log and counter
 * and gives back the quota leases nothing is using (PostgreSQL, MySQL). */
export async function flushRelayWrites(deps: AppDeps, maxWaitMs = 5000): Promise<void> {
  const s = states.get(deps);
  if (!s) return;
  await s.writer.drain(maxWaitMs);
  await s.ledger.returnLeases?.();
}
