// config → database → migrations → options → cache: the dependencies createApp needs.
import type { Config } from "./config.ts";
import type { AppDeps } from "./deps.ts";
import { openDatabase } from "../db/index.ts";
import { OptionStore } from "./modules/option/store.ts";
import { openCache } from "./infra/cache.ts";
import { startSqliteWorker, stopSqliteWorker } from "./infra/sqlite-worker.ts";

export async function buildDeps(config: Config): Promise<AppDeps> {
  const db = await openDatabase({ kind: config.database.kind, url: config.database.url, sqlitePath: config.database.sqlitePath });
  const options = new OptionStore(db);
  await options.load();
  const cache = await openCache(config.redisUrl);
  const deps: AppDeps = { config, db, options, cache, startTime: Math.floor(Date.now() / 1000), shutdownHooks: [] };
  // SQLite: the write-behind's transactions and WAL checkpoints run on a worker thread (stopped in closeDeps,
  // after the last flush).
  if (config.database.kind === "sqlite") startSqliteWorker(db, config.database.sqlitePath);
  return deps;
}

/** Runs the shutdown hooks (write-behind flushes) in order, then closes the cache and the database. */
export async function closeDeps(deps: AppDeps): Promise<void> {
  deps.options.stopSync();
  for (const hook of deps.shutdownHooks) {
    try {
      await hook();
    } catch (e) {
      console.error("shutdown hook failed:", e);
    }
  }
  await deps.options.settled();
  await stopSqliteWorker(deps.db);
  await deps.cache.close();
  await deps.db.destroy();
}
