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
  /** Sends `message` to every subscriber of `channel`: in this process (memory) or on every instance sharing the Redis. */
  publish(channel: string, message: string): Promise<void>;
  /** Listens on `channel`; resolves once listening, to the function that stops it. */
  subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>>;
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
  async publish(channel: string, message: string) {
    for (const l of this.channels.get(channel) ?? []) deliver(l, message);
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

export class RedisCache implements Cache {
  readonly kind = "redis" as const;
  private client: RedisClient;
  /** A subscribed Redis connection can run no other command, so pub/sub listens on a second one. */
  private subscriber: RedisClient | null = null;

  constructor(private url: string, readonly prefix = "switchyard:") {
    this.client = new RedisClient(url, { connectionTimeout: 5000, maxRetries: 20 });
  }

  async connect() {
    await this.client.connect();
  }
  async get(key: string) {
    return (await this.client.get(this.prefix + key)) ?? null;
  }
  async set(key: string, value: string, ttlSeconds = 0) {
    if (ttlSeconds > 0) await this.client.send("SET", [this.prefix + key, value, "EX", String(ttlSeconds)]);
    else await this.client.set(this.prefix + key, value);
  }
  async setNx(key: string, value: string, ttlSeconds: number) {
    const r = await this.client.send("SET", [this.prefix + key, value, "EX", String(ttlSeconds), "NX"]);
    return r === "OK";
  }
  async del(key: string) {
    await this.client.del(this.prefix + key);
  }
  async keys(prefix: string) {
    const out: string[] = [];
    // Glob characters in the prefix are escaped, so the pattern matches the prefix literally.
    const match = (this.prefix + prefix).replace(/[*?[\]\\]/g, "\\$&") + "*";
    let cursor = "0";
    do {
      const [next, found] = (await this.client.send("SCAN", [cursor, "MATCH", match, "COUNT", "1000"])) as [string, string[]];
      cursor = String(next);
      for (const k of found) out.push(k.slice(this.prefix.length));
    } while (cursor !== "0");
    return out;
  }
  async incr(key: string, ttlSeconds: number) {
    // INCR then EXPIRE NX in one script, so a crash between the two cannot leave an immortal counter.
    const n = await this.client.send("EVAL", [
      "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return n",
      "1", this.prefix + key, String(ttlSeconds),
    ]);
    return Number(n);
  }
  /** Runs a Lua script atomically on `keys` (prefixed here); for counters that need more than INCR. */
  async eval(script: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return this.client.send("EVAL", [script, String(keys.length), ...keys.map((k) => this.prefix + k), ...args.map(String)]);
  }
  async publish(channel: string, message: string) {
    await this.client.publish(this.prefix + channel, message);
  }
  async subscribe(channel: string, listener: Listener) {
    this.subscriber ??= new RedisClient(this.url, { connectionTimeout: 5000, maxRetries: 20 });
    const sub = this.subscriber;
    const onMessage = (message: string) => deliver(listener, message);
    await sub.subscribe(this.prefix + channel, onMessage);
    return async () => {
      if (sub.connected) await sub.unsubscribe(this.prefix + channel, onMessage);
    };
  }
  async close() {
    this.client.close();
    this.subscriber?.close();
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

export async function openCache(redisUrl: string | null, prefix?: string): Promise<Cache> {
  if (!redisUrl) return new MemoryCache();
  const c = new RedisCache(redisUrl, prefix);
  await c.connect();
  return c;
}
