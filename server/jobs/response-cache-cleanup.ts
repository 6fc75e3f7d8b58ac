// The response cache's table (server/relay/cache/store.ts, used when no Redis is configured): expired rows
// are read as absent already; this deletes them in small batches with a pause between, so the table stays
// small without a long lock or a stalled request. Redis expires its entries itself (EX). Every instance may
// run it; deleting rows another instance already deleted is harmless.
import type { AppDeps } from "../deps.ts";
import { startPeriodicJob } from "./periodic.ts";
import { writeOffLoop } from "../infra/statement-worker.ts";

export const CACHE_CLEANUP_BATCH = 200;
const TICK_MS = 10 * 60 * 1000;
const FIRST_RUN_MS = 60 * 1000;
const PAUSE_MS = 50;

/** Deletes the rows expired as of `now` (epoch seconds); returns how many went. */
export async function pruneResponseCache(
  deps: AppDeps,
  now = Math.floor(Date.now() / 1000),
  cancel?: AbortSignal,
): Promise<number> {
  let total = 0;
  while (!cancel?.aborted) {
    // Keys first, then a delete by key: the one form of a bounded delete all three databases accept.
    const keys = (
      await deps.db
        .selectFrom("response_cache")
        .select("cache_key")
        .where("expires_at", "<=", now)
        .orderBy("expires_at")
        .limit(CACHE_CLEANUP_BATCH)
        .execute()
    ).map((r) => r.cache_key);
    if (keys.length === 0) break;
    // On SQLite by the write worker: entries of up to 1 MiB each make a batch's delete long, and on the main
    // connection it (or its wait for the worker's write lock) ran on the event loop.
    await writeOffLoop(
      deps.db,
      deps.db.deleteFrom("response_cache").where("cache_key", "in", keys).where("expires_at", "<=", now),
    );
    total += keys.length;
    if (keys.length < CACHE_CLEANUP_BATCH) break;
    await Bun.sleep(PAUSE_MS);
  }
  return total;
}

export function startResponseCacheCleanup(deps: AppDeps): () => void {
  // With Redis the table is not used (and entries expire on their own).
  if (deps.cache.kind === "redis") return () => {};
  return startPeriodicJob(deps, "response cache clean-up", FIRST_RUN_MS, TICK_MS, (cancel) =>
    pruneResponseCache(deps, undefined, cancel),
  );
}
