// Log retention (LogRetentionDays; 0 keeps everything): consume and error logs older than that are deleted
// in small batches, a pause between batches, so the table shrinks without holding a long lock or stalling
// requests. Top-up, management and system logs are an audit trail and are kept. Every instance may run it;
// deleting rows another instance already deleted is harmless.
import type { AppDeps } from "../deps.ts";
import { LOG_TYPE } from "../catalogue/index.ts";
import { startPeriodicJob } from "./periodic.ts";

export const RETENTION_BATCH = 500;
const TICK_MS = 60 * 60 * 1000;
const FIRST_RUN_MS = 60 * 1000;
const PAUSE_MS = 50;

/** Deletes what retention allows as of `now`; returns how many rows went. `onBatch` hears each batch's size. */
export async function pruneLogs(deps: AppDeps, now = Math.floor(Date.now() / 1000), onBatch?: (n: number) => void, cancel?: AbortSignal): Promise<number> {
  const days = Math.floor(deps.options.number("LogRetentionDays", 0));
  if (days <= 0) return 0;
  const before = now - days * 86_400;
  let total = 0;
  while (!cancel?.aborted) {
    // Ids first, then a delete by id: the one form of a bounded delete all three databases accept.
    const ids = (await deps.db.selectFrom("logs").select("id")
      .where("created_at", "<", before).where("type", "in", [LOG_TYPE.consume, LOG_TYPE.error])
      .orderBy("id").limit(RETENTION_BATCH).execute()).map((r) => r.id);
    if (ids.length === 0) break;
    await deps.db.deleteFrom("logs").where("id", "in", ids).execute();
    total += ids.length;
    onBatch?.(ids.length);
    if (ids.length < RETENTION_BATCH) break;
    await Bun.sleep(PAUSE_MS);
  }
  return total;
}

export function startLogRetentionJob(deps: AppDeps): () => void {
  return startPeriodicJob(deps, "log retention", FIRST_RUN_MS, TICK_MS, (cancel) => pruneLogs(deps, undefined, undefined, cancel));
}
