// Channel affinity (new-api's name for it): the calls of one conversation go to the channel, and the key of a
// multi-key channel, that served its previous call, for as long as the conversation keeps going, so the
// provider's prompt cache that holds its prefix is read instead of written again. A conversation is known by
// a key the client sends (rules in catalogue/channel-affinity.ts: prompt_cache_key, Claude Code's session,
// a Gemini context cache); a call without one costs a few pattern tests and no cache access.
//
// Pins live in this instance's memory (bounded by max_entries, oldest written first out). With Redis
// (REDIS_CONN_STRING) they are also written there, after the answer and without waiting, so every instance
// finds them: an instance asks Redis only for a conversation it holds no pin of, and changes of a pin (a
// failed channel replaced, a clear) are announced so other instances drop or replace their copies at once.
import type { AppDeps } from "../deps.ts";
import type { Channel } from "../../db/schema.ts";
import type { OptionStore } from "../modules/option/store.ts";
import type { RelayRequest } from "./core/admit.ts";
import type { Candidate } from "./select.ts";
import type { RoutingTable } from "./state.ts";
import { announcer } from "../infra/announce.ts";
import {
  AFFINITY_DEFAULTS,
  AFFINITY_OPTIONS,
  type AffinityKeySource,
  type AffinityRule,
} from "../catalogue/channel-affinity.ts";

/** Where pins live in the shared cache (Redis adds its own prefix). */
const NAMESPACE = "channel_affinity:v1:";
/** Keys longer than this are pinned by their hash, so a client cannot make the store hold long strings. */
const MAX_KEY_LENGTH = 200;
/** A pin still in Redis is written again (extending its life) at most once per this share of its TTL. */
const REFRESH_SHARE = 0.1;
/** Pins deleted from Redis at once when clearing. */
const CLEAR_BATCH = 100;
/** How long a call waits for Redis to say whether its conversation has a pin. */
const LOOKUP_TIMEOUT_MS = 250;

interface CompiledRule {
  rule: AffinityRule;
  /** null: every model (".*") */
  models: RegExp[] | null;
  paths: RegExp[];
  agents: string[];
  sources: CompiledSource[];
  value: RegExp | null;
  ttlSeconds: number;
  /** model → whether `models` match it: names repeat, and a pattern test costs more than a Map read */
  modelMatches: Map<string, boolean>;
}

/** A key source with its body path split once. */
interface CompiledSource {
  source: AffinityKeySource;
  path: string[] | null;
}

/** Distinct paths or models remembered per settings before the memo starts over (model names come from clients). */
const MEMO_SIZE = 1024;

interface Settings {
  enabled: boolean;
  switchOnSuccess: boolean;
  keepOnChannelDisabled: boolean;
  maxEntries: number;
  defaultTtlSeconds: number;
  rules: CompiledRule[];
  /** request path → the rules whose path patterns match it */
  byPath: Map<string, CompiledRule[]>;
  lastPath: string;
  lastRules: CompiledRule[];
}

/** Patterns that match every string, so no test is needed. */
const EVERYTHING = new Set([".*", "^.*$", "^.*", ".*$", ".+", "^.+$"]);

const compiled = new WeakMap<OptionStore, { version: number; settings: Settings }>();
let last: { options: OptionStore; version: number; settings: Settings } | null = null;

function regexes(list: unknown): RegExp[] {
  const out: RegExp[] = [];
  for (const p of Array.isArray(list) ? list : []) {
    if (typeof p !== "string" || !p) continue;
    try {
      out.push(new RegExp(p));
    } catch {}
  }
  return out;
}

/** The settings as options say, compiled once per change of any option. */
export function affinitySettings(options: OptionStore): Settings {
  // Read on every relay call: the last store's settings are kept beside the per-store memo.
  if (last && last.options === options && last.version === options.version) return last.settings;
  const hit = compiled.get(options);
  if (hit && hit.version === options.version) {
    last = { options, ...hit };
    return hit.settings;
  }
  const text = (k: string) => options.get(k) || AFFINITY_DEFAULTS[k]!;
  const positive = (k: string) => {
    const n = Math.floor(Number(text(k)));
    return Number.isFinite(n) && n > 0 ? n : Number(AFFINITY_DEFAULTS[k]);
  };
  let rules: AffinityRule[] = [];
  try {
    const v = JSON.parse(text(AFFINITY_OPTIONS.rules));
    if (Array.isArray(v)) rules = v;
  } catch {}
  const defaultTtlSeconds = positive(AFFINITY_OPTIONS.defaultTtlSeconds);
  const settings: Settings = {
    enabled: text(AFFINITY_OPTIONS.enabled) === "true",
    switchOnSuccess: text(AFFINITY_OPTIONS.switchOnSuccess) === "true",
    keepOnChannelDisabled: text(AFFINITY_OPTIONS.keepOnChannelDisabled) === "true",
    maxEntries: positive(AFFINITY_OPTIONS.maxEntries),
    defaultTtlSeconds,
    rules: rules
      .filter((r) => r && typeof r.name === "string" && Array.isArray(r.key_sources))
      .map((rule) => {
        let value: RegExp | null = null;
        try {
          value = rule.value_regex ? new RegExp(rule.value_regex) : null;
        } catch {}
        const ttl = Number(rule.ttl_seconds);
        const modelPatterns = Array.isArray(rule.model_regex) ? rule.model_regex : [];
        return {
          rule,
          models: modelPatterns.some((p) => EVERYTHING.has(p)) ? null : regexes(modelPatterns),
          paths: regexes(rule.path_regex),
          agents: (rule.user_agent_include ?? [])
            .filter((a) => typeof a === "string" && a.trim())
            .map((a) => a.trim().toLowerCase()),
          sources: rule.key_sources
            .filter((x) => x && typeof x === "object")
            .map((source) => ({
              source,
              path: source.type === "gjson" && source.path ? source.path.split(".") : null,
            })),
          value,
          ttlSeconds: Number.isInteger(ttl) && ttl > 0 ? ttl : defaultTtlSeconds,
          modelMatches: new Map(),
        };
      }),
    byPath: new Map(),
    lastPath: "",
    lastRules: [],
  };
  compiled.set(options, { version: options.version, settings });
  last = { options, version: options.version, settings };
  return settings;
}

/** A body field by its dotted path's parts (new-api's gjson paths, without their wildcards): "metadata.user_id",
 * "a.0.b". A multipart body is a FormData, whose fields are not properties: it reads as having none. */
function fieldAt(body: unknown, path: string[]): unknown {
  let v: any = body;
  for (let i = 0; i < path.length; i++) {
    if (v === null || typeof v !== "object") return undefined;
    v = v[path[i]!];
  }
  return v;
}

/** A key's text: strings, numbers and booleans as they print, objects as their JSON (new-api's gjson Raw). */
function textOf(v: unknown): string {
  return (typeof v === "object" ? JSON.stringify(v) : String(v)).trim();
}

function sourceValue(req: RelayRequest, { source: src, path }: CompiledSource): string {
  switch (src.type) {
    case "gjson": {
      const v = path ? fieldAt(req.body, path) : undefined;
      return v === undefined || v === null ? "" : textOf(v);
    }
    case "request_header":
      return src.key ? (req.httpHeaders?.get(src.key) ?? req.headers?.[src.key.toLowerCase()] ?? "").trim() : "";
    case "context_int":
    case "context_string": {
      const c = req.caller;
      const facts: Record<string, unknown> = {
        id: c.userId,
        user_id: c.userId,
        token_id: c.tokenId,
        token_name: c.tokenName,
        group: c.group,
        username: c.username,
      };
      const v = src.key ? facts[src.key] : undefined;
      if (src.type === "context_int") return typeof v === "number" && v > 0 ? String(v) : "";
      return typeof v === "string" ? v.trim() : "";
    }
    default:
      return "";
  }
}

/** The rules whose path patterns match `path` (a rule without any matches every path), remembered per path. */
function rulesFor(settings: Settings, path: string): CompiledRule[] {
  // Most calls come on the path the one before came on: comparing with it is cheaper than hashing it.
  if (settings.lastPath === path) return settings.lastRules;
  let rules = settings.byPath.get(path);
  if (!rules) {
    rules = settings.rules.filter((r) => !r.paths.length || anyMatch(r.paths, path));
    if (settings.byPath.size >= MEMO_SIZE) settings.byPath.clear();
    settings.byPath.set(path, rules);
  }
  settings.lastPath = path;
  settings.lastRules = rules;
  return rules;
}

function modelMatches(r: CompiledRule, model: string): boolean {
  if (r.models === null) return true;
  let m = r.modelMatches.get(model);
  if (m === undefined) {
    m = anyMatch(r.models, model);
    if (r.modelMatches.size >= MEMO_SIZE) r.modelMatches.clear();
    r.modelMatches.set(model, m);
  }
  return m;
}

const anyMatch = (res: RegExp[], s: string) => {
  for (const re of res) if (re.test(s)) return true;
  return false;
};

/** A pin: the channel, and the key index of a multi-key channel (-1: none in particular). */
export interface Pin {
  channel: number;
  key: number;
}

const encode = (p: Pin) => (p.key >= 0 ? `${p.channel}:${p.key}` : String(p.channel));
function decode(v: string | null | undefined): Pin | null {
  if (!v) return null;
  const [c, k] = v.split(":");
  const channel = Number(c);
  const key = k === undefined ? -1 : Number(k);
  return Number.isInteger(channel) && channel > 0 && Number.isInteger(key) ? { channel, key } : null;
}

/** A conversation's call: which rule and key, the pin found, and what the route did with it. */
export class AffinityCall {
  /** The pin this call found (after `loading`, when the pin had to be asked of Redis). */
  pin: Pin | null = null;
  loading: Promise<void> | null = null;
  /** The route sent this call's first attempt to the pinned channel. */
  used = false;

  constructor(
    readonly store: AffinityStore,
    readonly settings: Settings,
    readonly rule: CompiledRule,
    readonly key: string,
    readonly value: string,
    readonly group: string,
    readonly source: AffinityKeySource,
  ) {}

  /**
   * The pinned channel when it may serve this call: enabled and among the group's channels for the model. The
   * call is otherwise routed as any other; the pin of a channel that is no longer enabled is forgotten (unless
   * keep_on_channel_disabled), and one that is enabled but does not serve this model stays for the calls it can.
   */
  preferred(candidates: readonly Candidate[], table: RoutingTable): Channel | null {
    const pin = this.pin;
    if (!pin) return null;
    const channel = table.channels.get(pin.channel);
    if (channel && candidates.some((c) => c.channelId === pin.channel)) {
      this.used = true;
      return channel;
    }
    if (!channel && !this.settings.keepOnChannelDisabled) this.store.forget(this.key);
    this.pin = null;
    return null;
  }

  /** The key index to use on `channelId`: the pinned one, when this attempt goes to the pinned channel. */
  keyFor(channelId: number): number | undefined {
    return this.pin && this.pin.channel === channelId && this.pin.key >= 0 ? this.pin.key : undefined;
  }

  /** A failure of the pinned channel ends the call there when the rule says so (skip_retry_on_failure). */
  stopsAfterFailure(channelId: number): boolean {
    return this.used && this.pin?.channel === channelId && this.rule.rule.skip_retry_on_failure === true;
  }

  /**
   * The call was served by `channelId` with key `keyIndex`: the conversation is pinned there (with
   * switch_on_success off, to the channel its first attempt went to) for the rule's TTL from now.
   */
  served(channelId: number, keyIndex: number | undefined, firstChannelId: number): void {
    const channel = this.settings.switchOnSuccess ? channelId : firstChannelId;
    const key = channel === channelId && keyIndex !== undefined ? keyIndex : -1;
    this.store.record(this.key, { channel, key }, this.rule.ttlSeconds, this.settings.maxEntries);
  }

  /** What the consume log's admin_info shows of a call that went to its pinned channel: the fields of new-api's
   * that its console reads (written into every such call's log row, so no more). */
  logInfo(channelId: number): Record<string, unknown> {
    const value = this.value;
    return {
      rule_name: this.rule.rule.name,
      using_group: this.group,
      channel_id: channelId,
      key_source: this.source.type,
      key_hint: value.length <= 12 ? value : `${value.slice(0, 4)}...${value.slice(-4)}`,
    };
  }
}

/**
 * The conversation a call belongs to, or null (affinity off, no rule for its model and path, or no key in the
 * call). The pin is looked up here: at once from memory, or `loading` from Redis.
 */
export function affinityOf(deps: AppDeps, req: RelayRequest): AffinityCall | null {
  const settings = affinitySettings(deps.options);
  if (!settings.enabled) return null;
  const rules = rulesFor(settings, req.path);
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i]!;
    if (!modelMatches(r, req.model) || (r.agents.length && !agentMatches(r, req))) continue;
    for (let j = 0; j < r.sources.length; j++) {
      const src = r.sources[j]!;
      // A body field (the usual source) is read here; the rest in sourceValue.
      const field = src.path ? fieldAt(req.body, src.path) : undefined;
      if (src.path && (field === undefined || field === null)) continue;
      const value = src.path ? textOf(field) : sourceValue(req, src);
      if (!value) continue;
      if (r.value && !r.value.test(value)) break;
      return conversation(deps, req, settings, r, value, src.source);
    }
  }
  return null;
}

function agentMatches(r: CompiledRule, req: RelayRequest): boolean {
  const agent = (req.httpHeaders?.get("user-agent") ?? "").toLowerCase();
  return r.agents.some((a) => agent.includes(a));
}

/** The call of a conversation found by rule `r`, its pin looked up. Kept apart from affinityOf, whose loop
 * runs on every call, so that loop stays small. */
function conversation(
  deps: AppDeps,
  req: RelayRequest,
  settings: Settings,
  r: CompiledRule,
  found: string,
  source: AffinityKeySource,
): AffinityCall {
  const value = found.length > MAX_KEY_LENGTH ? "h" + Bun.hash(found).toString(36) : found;
  const rule = r.rule;
  const parts: string[] = [];
  if (rule.include_rule_name && rule.name) parts.push(rule.name);
  if (rule.include_model_name && req.model) parts.push(req.model);
  if (rule.include_using_group && req.caller.group) parts.push(req.caller.group);
  parts.push(value);
  const call = new AffinityCall(storeOf(deps), settings, r, parts.join(":"), value, req.caller.group, source);
  const pin = call.store.lookup(call.key, r.ttlSeconds);
  if (pin instanceof Promise) call.loading = pin.then((p) => void (call.pin = p));
  else call.pin = pin;
  return call;
}

interface Entry {
  pin: Pin;
  /** ms: when this instance stops trusting the pin */
  expires: number;
  /** ms: when this instance last wrote it to Redis */
  written: number;
  /** ms: when it was last put at the end of the Map's order */
  moved: number;
}

/** A change other instances must hear: a pin replaced or dropped, or many dropped. */
type Change = { key: string; pin: string | null; ttl: number } | { clear: string | null };
const changes = announcer<Change>("channel-affinity", "channel affinity");

/** The pins of one app: memory, and Redis behind it when the app has one. */
export class AffinityStore {
  private local = new Map<string, Entry>();
  private redis: AppDeps["cache"] | null;
  private unsubscribe: (() => Promise<void>) | null = null;
  readonly listening: Promise<void>;

  constructor(private deps: AppDeps) {
    this.redis = deps.cache.kind === "redis" ? deps.cache : null;
    if (!this.redis) {
      this.listening = Promise.resolve();
      return;
    }
    const sub = changes.listen(deps, (c) => this.heard(c));
    this.unsubscribe = sub.unsubscribe;
    this.listening = sub.ready;
  }

  /**
   * The pin of `key`: from memory, or (with Redis, when this instance holds none) a promise of Redis's, kept
   * here for `ttlSeconds` once found. A Redis that does not answer within LOOKUP_TIMEOUT_MS counts as no pin:
   * the call is routed as any other rather than wait for a reconnecting cache.
   */
  lookup(key: string, ttlSeconds: number): Pin | null | Promise<Pin | null> {
    const e = this.local.get(key);
    const now = Date.now();
    if (e && e.expires > now) return e.pin;
    if (e) this.local.delete(key);
    if (!this.redis) return null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(resolve, LOOKUP_TIMEOUT_MS, null)));
    const found = this.redis.get(NAMESPACE + key).then(
      (v) => {
        const pin = decode(v);
        const now = Date.now();
        if (pin && !this.local.has(key))
          this.local.set(key, { pin, expires: now + ttlSeconds * 1000, written: now, moved: now });
        return pin;
      },
      (err) => {
        console.error("channel affinity lookup failed:", err?.message ?? err);
        return null;
      },
    );
    return Promise.race([found, late]).finally(() => clearTimeout(timer));
  }

  record(key: string, pin: Pin, ttlSeconds: number, maxEntries: number): void {
    const now = Date.now();
    const old = this.local.get(key);
    const same = !!old && old.expires > now && old.pin.channel === pin.channel && old.pin.key === pin.key;
    const refresh = ttlSeconds * 1000 * REFRESH_SHARE;
    const write = !this.redis ? false : !same || now - old!.written >= refresh;
    if (same && now - old!.moved < refresh) {
      // The usual call of a conversation: its pin lives on, with no new entry.
      old!.expires = now + ttlSeconds * 1000;
      if (write) old!.written = now;
    } else {
      // Re-inserted, so the Map's order is about the order of last use and the oldest goes first when full.
      if (old) this.local.delete(key);
      this.local.set(key, {
        pin,
        expires: now + ttlSeconds * 1000,
        written: write ? now : (old?.written ?? 0),
        moved: now,
      });
      while (this.local.size > maxEntries) this.local.delete(this.local.keys().next().value!);
    }
    if (!write) return;
    const value = encode(pin);
    void this.redis!.set(NAMESPACE + key, value, ttlSeconds).catch((err) =>
      console.error("channel affinity not stored:", err?.message ?? err),
    );
    if (!same) void changes.announce(this.deps, { key, pin: value, ttl: ttlSeconds });
  }

  /** Drops the pin of `key` (its channel can no longer serve the conversation). */
  forget(key: string): void {
    this.local.delete(key);
    if (!this.redis) return;
    void this.redis
      .del(NAMESPACE + key)
      .catch((err) => console.error("channel affinity not cleared:", err?.message ?? err));
    void changes.announce(this.deps, { key, pin: null, ttl: 0 });
  }

  /** Another instance changed a pin: a copy held here follows it; one not held here is not made. */
  private heard(c: Change): void {
    if ("clear" in c) {
      for (const k of [...this.local.keys()]) if (c.clear === null || k.startsWith(c.clear + ":")) this.local.delete(k);
      return;
    }
    const e = this.local.get(c.key);
    if (!e) return;
    const pin = decode(c.pin);
    if (!pin) this.local.delete(c.key);
    else this.local.set(c.key, { pin, expires: Date.now() + c.ttl * 1000, written: e.written, moved: e.moved });
  }

  /** Every live pin's key (the shared ones with Redis). */
  async keys(): Promise<string[]> {
    if (this.redis) return (await this.redis.keys(NAMESPACE)).map((k) => k.slice(NAMESPACE.length));
    const now = Date.now();
    const out: string[] = [];
    for (const [k, e] of this.local) if (e.expires > now) out.push(k);
    return out;
  }

  /** Drops every pin, or those of one rule (`rule`: its name); returns how many there were. */
  async clear(rule: string | null): Promise<number> {
    const keys = (await this.keys()).filter((k) => rule === null || k.startsWith(rule + ":"));
    for (const k of rule === null ? [...this.local.keys()] : keys) this.local.delete(k);
    if (this.redis) {
      const redis = this.redis;
      for (let i = 0; i < keys.length; i += CLEAR_BATCH)
        await Promise.all(keys.slice(i, i + CLEAR_BATCH).map((k) => redis.del(NAMESPACE + k)));
      await changes.announce(this.deps, { clear: rule });
    }
    return keys.length;
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }
}

const stores = new WeakMap<AppDeps, AffinityStore>();

export function storeOf(deps: AppDeps): AffinityStore {
  let s = stores.get(deps);
  if (!s) {
    const store = (s = new AffinityStore(deps));
    stores.set(deps, s);
    deps.shutdownHooks.push(() => store.stop());
  }
  return s;
}

/** GET /api/option/channel_affinity_cache: new-api's answer (pins per rule; capacity and algorithm of the store). */
export async function affinityStats(deps: AppDeps) {
  const settings = affinitySettings(deps.options);
  const store = storeOf(deps);
  const named = settings.rules
    .filter((r) => r.rule.include_rule_name && r.rule.name.trim())
    .map((r) => r.rule.name.trim());
  const byRuleName: Record<string, number> = Object.fromEntries(named.map((n) => [n, 0]));
  let unknown = 0;
  const keys = await store.keys();
  for (const k of keys) {
    const name = k.slice(0, k.indexOf(":"));
    if (k.includes(":") && name in byRuleName) byRuleName[name]!++;
    else unknown++;
  }
  const redis = deps.cache.kind === "redis";
  return {
    enabled: settings.enabled,
    total: keys.length,
    unknown,
    by_rule_name: byRuleName,
    cache_capacity: redis ? 0 : settings.maxEntries,
    cache_algo: redis ? "redis" : "lru",
  };
}

/** DELETE /api/option/channel_affinity_cache: every pin (`rule` null) or one named rule's; a rule that is
 * unknown or whose pins carry no name is refused with the reason. */
export async function clearAffinity(
  deps: AppDeps,
  rule: string | null,
): Promise<{ deleted: number } | { error: string }> {
  if (rule !== null) {
    const r = affinitySettings(deps.options).rules.find((x) => x.rule.name.trim() === rule);
    if (!r) return { error: `no channel affinity rule is named "${rule}"` };
    if (!r.rule.include_rule_name)
      return {
        error: `the pins of rule "${rule}" do not carry its name (include_rule_name is off), so they cannot be cleared by it`,
      };
  }
  return { deleted: await storeOf(deps).clear(rule) };
}
