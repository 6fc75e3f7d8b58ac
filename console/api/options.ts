// Saving settings (spec 000 §4–§5, 001 §5): only changed keys, one PUT /api/option/ per key.
import { api } from "./client.ts";

export interface SaveResult {
  /** Keys whose PUT succeeded. */
  saved: string[];
  /** Keys whose PUT failed, with the server's (translated) message. */
  failed: Array<{ key: string; message: string }>;
  /** True when nothing differed from the loaded values, so nothing was sent. */
  unchanged: boolean;
}

export function changedKeys(original: Record<string, string>, current: Record<string, string>): string[] {
  return Object.keys(current).filter((k) => (original[k] ?? "") !== (current[k] ?? ""));
}

/** Sends one PUT per changed key, sequentially so the server sees them in the order of the form. */
export async function saveOptions(
  original: Record<string, string>,
  current: Record<string, string>,
): Promise<SaveResult> {
  const keys = changedKeys(original, current);
  const result: SaveResult = { saved: [], failed: [], unchanged: keys.length === 0 };
  for (const key of keys) {
    const r = await api.put("/api/option/", { key, value: current[key] });
    if (r.success) result.saved.push(key);
    else result.failed.push({ key, message: r.message });
  }
  return result;
}
