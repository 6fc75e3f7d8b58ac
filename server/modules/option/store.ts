// Options live in memory after start; the database is the shared truth, re-read every SYNC_FREQUENCY
// seconds so several instances converge. Parsed JSON values are memoised per raw string.
import type { Database } from "../../../db/index.ts";
import { OPTION_DEFAULTS } from "./defaults.ts";

export class OptionStore {
  private values = new Map<string, string>(Object.entries(OPTION_DEFAULTS));
  private parsed = new Map<string, { raw: string; value: unknown }>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private listeners: ((key: string) => void)[] = [];

  constructor(private db: Database) {}

  async load(): Promise<void> {
    const rows = await this.db.selectFrom("options").select(["key", "value"]).execute();
    for (const r of rows) {
      const prev = this.values.get(r.key);
      this.values.set(r.key, r.value ?? "");
      if (prev !== r.value) for (const l of this.listeners) l(r.key);
    }
  }

  startSync(seconds: number): void {
    if (seconds <= 0 || this.timer) return;
    this.timer = setInterval(() => this.load().catch((e) => console.error("option sync failed:", e.message)), seconds * 1000);
    this.timer.unref?.();
  }

  stopSync(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
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
  }
}
