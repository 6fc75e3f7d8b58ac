// Log retention (LogRetentionDays; 0 keeps everything): consume and error logs older than that are deleted
// in small batches, a pause between batches, so the table shrinks without holding a long lock or stalling
// requests. Top-up, management and system logs are an audit trail and are kept. Every instance may run it;
// deleting rows another instance already deleted is harmless.
import type { AppDeps } from "../deps.ts";
import { LOG_TYPE } from "../catalogue/index.ts";
import { startPeriodicJob } from "./periodic.ts";
import { deleteLogBatch } from "../modules/log/service.ts";

export const RETENTION_BATCH = 500;
const TICK_MS = 60 * 60 * 1000;
const FIRST_RUN_MS = 60 * 1000;
const PAUSE_MS = 50;

/** Deletes what retention allows as of `now`; returns how many rows went. `onBatch` hears each batch's size. */
export async function pruneLogs(
  deps: AppDeps,
  now = Math.floor(Date.now() / 1000),
  onBatch?: (n: number) => void,
  cancel?: AbortSignal,
): Promise<number> {
  const days = Math.floor(deps.options.number("LogRetentionDays", 0));
  if (days <= 0) return 0;
  const before = now - days * 86_400;
  let total = 0;
  while (!cancel?.aborted) {
    // A bounded batch by id (the one form of a bounded delete all three databases accept); on SQLite off the
    // event loop (the reader thread and the write worker).
    const { found } = await deleteLogBatch(
      deps,
      (eb) => eb.and([eb("created_at", "<", before), eb("type", "in", [LOG_TYPE.consume, LOG_TYPE.error])]),
      RETENTION_BATCH,
    );
    if (found === 0) break;
    total += found;
    onBatch?.(found);
    if (found < RETENTION_BATCH) break;
    await Bun.sleep(PAUSE_MS);
  }
  return total;
}

export function startLogRetentionJob(deps: AppDeps): () => void {
  return startPeriodicJob(deps, "log retention", FIRST_RUN_MS, TICK_MS, (cancel) =>
    pruneLogs(deps, undefined, undefined, cancel),
  );
}
