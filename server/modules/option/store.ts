// Options live in memory after start; the database is the shared truth. Every write is announced
// (option/events.ts) and every instance re-reads the announced keys at once; the whole table is also
// re-read every SYNC_FREQUENCY seconds, for an instance that missed an announcement. Parsed JSON values
// are memoised per raw string.
import type { Database } from "../../../db/index.ts";
import { OPTION_DEFAULTS } from "./defaults.ts";

/** The values, counting writes: whoever writes (a load, a set, a test through all()) invalidates the memos. */
class VersionedMap extends Map<string, string> {
  version = 0;
  override set(key: string, value: string): this {
    this.version++;
    return super.set(key, value);
  }
  override delete(key: string): boolean {
    this.version++;
    return super.delete(key);
  }
  override clear(): void {
    this.version++;
    super.clear();
  }
}

export class OptionStore {
  private values = new VersionedMap(Object.entries(OPTION_DEFAULTS));
  private parsed = new Map<string, { raw: string; value: unknown }>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private listeners: ((key: string) => void)[] = [];
  private announce: ((keys: string[]) => Promise<void>) | null = null;
  /** Reads run one after another, so an older read never lands after a newer one. */
  private reloads: Promise<void> = Promise.resolve();
  /** Changes with every write of any value: memos derived from several options (prices) compare it. */
  get version(): number {
    return this.values.version;
  }

  constructor(private db: Database) {}

  private apply(key: string, value: string | null): void {
    const prev = this.values.get(key);
    this.values.set(key, value ?? "");
    if (prev !== (value ?? "")) for (const l of this.listeners) l(key);
  }

  /** Re-reads the whole table (start-up, and every SYNC_FREQUENCY seconds). */
  load(): Promise<void> {
    return this.queued(async () => {
      const rows = await this.db.selectFrom("options").select(["key", "value"]).execute();
      for (const r of rows) this.apply(r.key, r.value);
    });
  }

  /** Re-reads these keys from the database (a write was announced). */
  reload(keys: string[]): Promise<void> {
    return this.queued(async () => {
      if (!keys.length) return;
      const rows = await this.db.selectFrom("options").select(["key", "value"]).where("key", "in", keys).execute();
      for (const r of rows) this.apply(r.key, r.value);
    });
  }

  private queued(read: () => Promise<void>): Promise<void> {
    const p = this.reloads.then(read);
    this.reloads = p.catch(() => {});
    return p;
  }

  /** Set once per store by option/events.ts: how a committed write is told to the other instances. */
  announceWith(announce: (keys: string[]) => Promise<void>): boolean {
    if (this.announce) return false;
    this.announce = announce;
    return true;
  }

  startSync(seconds: number): void {
    if (seconds <= 0 || this.timer) return;
    this.timer = setInterval(
      () => this.load().catch((e) => console.error("option sync failed:", e.message)),
      seconds * 1000,
    );
    this.timer.unref?.();
  }

  stopSync(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Resolves once every queued re-read has finished (shutdown waits for it before the database closes: a
   * write's own announcement queues one, and PostgreSQL's driver never ends while a read starts after end()). */
  settled(): Promise<void> {
    return this.reloads;
  }

  onChange(listener: (key: string) => void): void {
    this.listeners.push(listener);
  }

  get(key: string): string {
    return this.values.get(key) ?? "";
  }

  has(key: string): boolean {
    return this.values.has(key);
  }

  bool(key: string): boolean {
    return this.get(key) === "true";
  }

  number(key: string, fallback = 0): number {
    const n = Number(this.get(key));
    return Number.isFinite(n) && this.get(key) !== "" ? n : fallback;
  }

  json<T>(key: string, fallback: T): T {
    const raw = this.get(key);
    const hit = this.parsed.get(key);
    if (hit && hit.raw === raw) return hit.value as T;
    let value: unknown = fallback;
    try {
      value = raw === "" ? fallback : JSON.parse(raw);
    } catch {
      value = fallback;
    }
    this.parsed.set(key, { raw, value });
    return value as T;
  }

  all(): Map<string, string> {
    return this.values;
  }

  /** Writes one option to the database and memory (validation is the caller's job). */
  async set(key: string, value: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const res = await trx.updateTable("options").set({ value }).where("key", "=", key).executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) {
        const exists = await trx.selectFrom("options").select("key").where("key", "=", key).executeTakeFirst();
        if (!exists) await trx.insertInto("options").values({ key, value }).execute();
      }
    });
    this.values.set(key, value);
    for (const l of this.listeners) l(key);
    await this.announce?.([key]);
  }
}
