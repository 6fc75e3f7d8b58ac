// Shared cache: in-process memory for one instance, Redis (REDIS_CONN_STRING) when several share state.
import { RedisClient } from "bun";

export interface Cache {
  readonly kind: "memory" | "redis";
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  /** Sets only when absent; true when this call set it (used for once-only work across instances). */
  setNx(key: string, value: string, ttlSeconds: number): Promise<boolean>;
  del(key: string): Promise<void>;
  /** The keys that start with `prefix` (a scan: for management views, never the hot path). */
  keys(prefix: string): Promise<string[]>;
  /** Increments a counter that expires ttlSeconds after its first increment; returns the new count. */
  incr(key: string, ttlSeconds: number): Promise<number>;
  /** A counter's value (0 when absent). */
  count(key: string): Promise<number>;
  /** Sends `message` to every subscriber of `channel`: in this process (memory) or on every instance sharing the Redis. */
  publish(channel: string, message: string): Promise<void>;
  /** Listens on `channel`; resolves once listening, to the function that stops it. */
  subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>>;
  /** Hears that messages may have been missed (a lost subscriber connection is back); returns the function that stops it. */
  onReconnect(listener: () => void): () => void;
  close(): Promise<void>;
}

type Listener = (message: string) => void;

export class MemoryCache implements Cache {
  readonly kind = "memory" as const;
  private map = new Map<string, { v: string; exp: number }>();
  private channels = new Map<string, Set<Listener>>();
  private sweeper = setInterval(() => this.sweep(), 60_000);

  constructor() {
    this.sweeper.unref?.();
  }

  private live(key: string) {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (e.exp && e.exp <= Date.now()) {
      this.map.delete(key);
      return undefined;
    }
    return e;
  }

  private sweep() {
    const now = Date.now();
    for (const [k, e] of this.map) if (e.exp && e.exp <= now) this.map.delete(k);
  }

  async get(key: string) {
    return this.live(key)?.v ?? null;
  }
  async set(key: string, value: string, ttlSeconds = 0) {
    this.map.set(key, { v: value, exp: ttlSeconds > 0 ? Date.now() + ttlSeconds * 1000 : 0 });
  }
  async setNx(key: string, value: string, ttlSeconds: number) {
    if (this.live(key)) return false;
    await this.set(key, value, ttlSeconds);
    return true;
  }
  async del(key: string) {
    this.map.delete(key);
  }
  async keys(prefix: string) {
    const out: string[] = [];
    for (const k of this.map.keys()) if (k.startsWith(prefix) && this.live(k)) out.push(k);
    return out;
  }
  async incr(key: string, ttlSeconds: number) {
    const e = this.live(key);
    if (!e) {
      this.map.set(key, { v: "1", exp: Date.now() + ttlSeconds * 1000 });
      return 1;
    }
    e.v = String(Number(e.v) + 1);
    return Number(e.v);
  }
  async count(key: string) {
    return Number(this.live(key)?.v ?? 0);
  }
  async publish(channel: string, message: string) {
    for (const l of this.channels.get(channel) ?? []) deliver(l, message);
  }
  /** Nothing to reconnect: every message reaches its subscribers at once. */
  onReconnect(_listener: () => void): () => void {
    return () => {};
  }
  async subscribe(channel: string, listener: Listener) {
    let set = this.channels.get(channel);
    if (!set) this.channels.set(channel, (set = new Set()));
    set.add(listener);
    return async () => void set.delete(listener);
  }
  async close() {
    clearInterval(this.sweeper);
    this.map.clear();
    this.channels.clear();
  }
}

/** Redis could not be asked: it is down, too slow, or its circuit is open. Nothing is known to have changed. */
export class CacheUnavailableError extends Error {
  readonly code = "CACHE_UNAVAILABLE";
}

export interface RedisTimeouts {
  /** Opening a connection (REDIS_CONNECT_TIMEOUT_MS). */
  connectMs: number;
  /** One command, from being sent to its answer (REDIS_COMMAND_TIMEOUT_MS). */
  commandMs: number;
  /** Failures in a row that open the circuit (REDIS_CIRCUIT_FAILURES). */
  circuitFailures: number;
  /** How long an open circuit refuses before one command may probe Redis again (REDIS_CIRCUIT_OPEN_MS). */
  circuitOpenMs: number;
}

export const DEFAULT_REDIS_TIMEOUTS: RedisTimeouts = {
  connectMs: 2_000,
  commandMs: 1_000,
  circuitFailures: 3,
  circuitOpenMs: 2_000,
};

/** Longest pause between two attempts to reconnect; they start at RECONNECT_FIRST_MS and double. */
const RECONNECT_MAX_MS = 2_000;
const RECONNECT_FIRST_MS = 50;

/** Bun's client's names for a connection that is gone or never came (ERR_REDIS_CONNECTION_CLOSED, ...). */
const lostConnection = (e: unknown) => {
  const code = String((e as { code?: unknown })?.code ?? "");
  return (
    /^ERR_REDIS_(CONNECTION|.*TIMEOUT|.*CLOSED|.*OFFLINE)/.test(code)
    || /^E(CONN|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH)/.test(code)
    || /connection (closed|lost|refused)|not connected|offline/i.test(String((e as Error)?.message ?? ""))
  );
};

/**
 * Stops asking a Redis that keeps failing: after `failures` in a row it refuses for `openMs`, then lets one
 * command through to probe (half-open); an answer closes it, a failure opens it again.
 */
class Circuit {
  private failures = 0;
  private openUntil = 0;
  private probing = false;
  constructor(private t: RedisTimeouts) {}
  allow(): boolean {
    if (this.failures < this.t.circuitFailures) return true;
    if (performance.now() < this.openUntil || this.probing) return false;
    this.probing = true;
    return true;
  }
  succeeded(): void {
    this.failures = 0;
    this.probing = false;
  }
  failed(): void {
    this.probing = false;
    if (++this.failures >= this.t.circuitFailures) this.openUntil = performance.now() + this.t.circuitOpenMs;
  }
  get open(): boolean {
    return this.failures >= this.t.circuitFailures;
  }
}

/**
 * Redis with every wait bounded. Bun's client, left to itself, queued commands while disconnected (every /api
 * call then waited for Redis) and stopped reconnecting after its retries; here each connection is this class's
 * own: a command fails at once while there is none, or after REDIS_COMMAND_TIMEOUT_MS, with
 * CacheUnavailableError; a lost connection is replaced with backoff; the subscriptions move to each new
 * subscriber connection, after which onReconnect's listeners re-read what they may have missed.
 * Counters (incr, count) are kept in this process's memory while Redis cannot be asked: limits then hold per
 * instance instead of failing every call.
 */
export class RedisCache implements Cache {
  readonly kind = "redis" as const;
  private client: RedisClient | null = null;
  /** A subscribed Redis connection can run no other command, so pub/sub listens on a second one. */
  private subscriber: RedisClient | null = null;
  private subscriberWanted = false;
  private channels = new Map<string, Set<Listener>>();
  private reconnectListeners = new Set<() => void>();
  private circuit: Circuit;
  /** Counters while Redis is unavailable. */
  private local = new MemoryCache();
  private closed = false;
  private retry = {
    client: null as ReturnType<typeof setTimeout> | null,
    subscriber: null as ReturnType<typeof setTimeout> | null,
  };
  private backoff = { client: RECONNECT_FIRST_MS, subscriber: RECONNECT_FIRST_MS };
  /** A subscriber connection has been lost since the last one was made: the next one announces a reconnect. */
  private missed = false;

  constructor(
    private url: string,
    readonly prefix = "switchyard:",
    private t: RedisTimeouts = DEFAULT_REDIS_TIMEOUTS,
  ) {
    this.circuit = new Circuit(t);
  }

  private newClient(): RedisClient {
    return new RedisClient(this.url, {
      connectionTimeout: this.t.connectMs,
      autoReconnect: false,
      enableOfflineQueue: false,
    });
  }

  /** Opens the command connection; throws when Redis cannot be reached (start-up). */
  async connect(): Promise<void> {
    const c = this.newClient();
    await this.bounded(c.connect(), this.t.connectMs + 100, "connect").catch((e) => {
      c.close();
      throw e;
    });
    this.adoptClient(c);
  }

  private adoptClient(c: RedisClient): void {
    this.client = c;
    this.backoff.client = RECONNECT_FIRST_MS;
    this.circuit.succeeded();
    c.onclose = () => {
      if (this.client !== c) return;
      this.client = null;
      this.reconnectClient();
    };
  }

  private reconnectClient(): void {
    if (this.closed || this.retry.client || this.client) return;
    const wait = this.backoff.client;
    this.backoff.client = Math.min(RECONNECT_MAX_MS, wait * 2);
    this.retry.client = setTimeout(async () => {
      this.retry.client = null;
      const c = this.newClient();
      try {
        await this.bounded(c.connect(), this.t.connectMs + 100, "connect");
        if (this.closed) return c.close();
        this.adoptClient(c);
      } catch {
        c.close();
        this.reconnectClient();
      }
    }, wait);
    this.retry.client.unref?.();
  }

  private bounded<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CacheUnavailableError(`Redis did not answer within ${ms} ms (${what})`)), ms);
    });
    return Promise.race([work, expired]).finally(() => clearTimeout(timer));
  }

  /** One command: refused at once while the circuit is open or no connection is up, else bounded in time. */
  private async run<T>(what: string, command: (c: RedisClient) => Promise<T>): Promise<T> {
    if (!this.circuit.allow()) throw new CacheUnavailableError("Redis is unavailable (failing; asked again shortly)");
    const c = this.client;
    if (!c || !c.connected) {
      this.circuit.failed();
      this.reconnectClient();
      throw new CacheUnavailableError("Redis is unavailable (not connected)");
    }
    try {
      const v = await this.bounded(command(c), this.t.commandMs, what);
      this.circuit.succeeded();
      return v;
    } catch (e) {
      if (!(e instanceof CacheUnavailableError) && !lostConnection(e)) {
        // Redis answered, with an error of the command's own.
        this.circuit.succeeded();
        throw e;
      }
      this.circuit.failed();
      if (e instanceof CacheUnavailableError && this.client === c) {
        // A connection that stopped answering may never say so: a new one either works or fails fast.
        this.client = null;
        c.close();
        this.reconnectClient();
      }
      throw e instanceof CacheUnavailableError
        ? e
        : new CacheUnavailableError(`Redis is unavailable: ${(e as Error)?.message ?? e}`);
    }
  }

  /** `shared`, or while Redis cannot be asked, `local` (this process's own counters). */
  private async orLocal<T>(shared: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    try {
      return await shared();
    } catch (e) {
      if (e instanceof CacheUnavailableError) return local();
      throw e;
    }
  }

  /** false while Redis is known to be failing (the circuit is open): callers with a local way skip the wait. */
  get available(): boolean {
    return !this.circuit.open && this.client !== null;
  }

  async get(key: string) {
    return (await this.run("GET", (c) => c.get(this.prefix + key))) ?? null;
  }
  async set(key: string, value: string, ttlSeconds = 0) {
    if (ttlSeconds > 0)
      await this.run("SET", (c) => c.send("SET", [this.prefix + key, value, "EX", String(ttlSeconds)]));
    else await this.run("SET", (c) => c.set(this.prefix + key, value));
  }
  async setNx(key: string, value: string, ttlSeconds: number) {
    const r = await this.run("SET", (c) => c.send("SET", [this.prefix + key, value, "EX", String(ttlSeconds), "NX"]));
    return r === "OK";
  }
  async del(key: string) {
    await this.run("DEL", (c) => c.del(this.prefix + key));
  }
  async keys(prefix: string) {
    const out: string[] = [];
    // Glob characters in the prefix are escaped, so the pattern matches the prefix literally.
    const match = (this.prefix + prefix).replace(/[*?[\]\\]/g, "\\$&") + "*";
    let cursor = "0";
    do {
      const [next, found] = (await this.run("SCAN", (c) =>
        c.send("SCAN", [cursor, "MATCH", match, "COUNT", "1000"]),
      )) as [string, string[]];
      cursor = String(next);
      for (const k of found) out.push(k.slice(this.prefix.length));
    } while (cursor !== "0");
    return out;
  }
  async incr(key: string, ttlSeconds: number) {
    // INCR then EXPIRE NX in one script, so a crash between the two cannot leave an immortal counter.
    return this.orLocal(
      async () =>
        Number(
          await this.run("EVAL", (c) =>
            c.send("EVAL", [
              "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return n",
              "1",
              this.prefix + key,
              String(ttlSeconds),
            ]),
          ),
        ),
      () => this.local.incr(key, ttlSeconds),
    );
  }
  async count(key: string) {
    return this.orLocal(
      async () => Number((await this.get(key)) ?? 0),
      () => this.local.count(key),
    );
  }
  /** Runs a Lua script atomically on `keys` (prefixed here); for counters that need more than INCR. */
  async eval(script: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return this.run("EVAL", (c) =>
      c.send("EVAL", [script, String(keys.length), ...keys.map((k) => this.prefix + k), ...args.map(String)]),
    );
  }
  async publish(channel: string, message: string) {
    await this.run("PUBLISH", (c) => c.publish(this.prefix + channel, message));
  }

  async subscribe(channel: string, listener: Listener) {
    let set = this.channels.get(channel);
    const first = !set;
    if (!set) this.channels.set(channel, (set = new Set()));
    set.add(listener);
    this.subscriberWanted = true;
    if (!this.subscriber) await this.openSubscriber(true);
    else if (first)
      await this.bounded(
        this.subscriber.subscribe(this.prefix + channel, this.dispatch(channel)),
        this.t.connectMs,
        "SUBSCRIBE",
      );
    return async () => {
      const s = this.channels.get(channel);
      if (!s?.delete(listener) || s.size > 0) return;
      this.channels.delete(channel);
      const sub = this.subscriber;
      if (sub?.connected)
        await this.bounded(sub.unsubscribe(this.prefix + channel), this.t.commandMs, "UNSUBSCRIBE").catch(() => {});
    };
  }

  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => void this.reconnectListeners.delete(listener);
  }

  private dispatch(channel: string) {
    return (message: string) => {
      for (const l of this.channels.get(channel) ?? []) deliver(l, message);
    };
  }

  /** A new subscriber connection with every channel on it; `initial`: the first (its failure is the caller's). */
  private async openSubscriber(initial: boolean): Promise<void> {
    const sub = this.newClient();
    try {
      await this.bounded(sub.connect(), this.t.connectMs + 100, "connect");
      for (const channel of this.channels.keys())
        await this.bounded(sub.subscribe(this.prefix + channel, this.dispatch(channel)), this.t.connectMs, "SUBSCRIBE");
    } catch (e) {
      sub.close();
      if (initial) throw e;
      this.reconnectSubscriber();
      return;
    }
    if (this.closed) return sub.close();
    this.subscriber = sub;
    this.backoff.subscriber = RECONNECT_FIRST_MS;
    sub.onclose = () => {
      if (this.subscriber !== sub) return;
      this.subscriber = null;
      this.missed = true;
      this.reconnectSubscriber();
    };
    if (!initial && this.missed) {
      this.missed = false;
      // Messages published while no subscriber connection was up are gone: the listeners re-read instead.
      for (const l of this.reconnectListeners) {
        try {
          l();
        } catch (e) {
          console.error("cache reconnect listener failed:", e);
        }
      }
    }
  }

  private reconnectSubscriber(): void {
    if (this.closed || this.retry.subscriber || this.subscriber || !this.subscriberWanted) return;
    const wait = this.backoff.subscriber;
    this.backoff.subscriber = Math.min(RECONNECT_MAX_MS, wait * 2);
    this.retry.subscriber = setTimeout(() => {
      this.retry.subscriber = null;
      void this.openSubscriber(false);
    }, wait);
    this.retry.subscriber.unref?.();
  }

  async close() {
    this.closed = true;
    if (this.retry.client) clearTimeout(this.retry.client);
    if (this.retry.subscriber) clearTimeout(this.retry.subscriber);
    this.client?.close();
    this.subscriber?.close();
    this.client = this.subscriber = null;
    await this.local.close();
  }
}

/** A failing listener must not keep the others (or the publisher) from their work. */
function deliver(listener: Listener, message: string) {
  try {
    listener(message);
  } catch (e) {
    console.error("cache subscriber failed:", e);
  }
}

export async function openCache(
  redisUrl: string | null,
  prefix?: string,
  t: RedisTimeouts = DEFAULT_REDIS_TIMEOUTS,
): Promise<Cache> {
  if (!redisUrl) return new MemoryCache();
  const c = new RedisCache(redisUrl, prefix, t);
  await c.connect();
  return c;
}
