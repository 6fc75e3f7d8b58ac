// config → database → migrations → options → cache: the dependencies createApp needs.
import type { Config } from "./config.ts";
import type { AppDeps } from "./deps.ts";
import { openDatabase } from "../db/index.ts";
import { OptionStore } from "./modules/option/store.ts";
import { openCache } from "./infra/cache.ts";
import { startWalCheckpointer } from "./infra/wal-checkpoint.ts";

export async function buildDeps(config: Config): Promise<AppDeps> {
  const db = await openDatabase({ kind: config.database.kind, url: config.database.url, sqlitePath: config.database.sqlitePath });
  const options = new OptionStore(db);
  await options.load();
  const cache = await openCache(config.redisUrl);
  const deps: AppDeps = { config, db, options, cache, startTime: Math.floor(Date.now() / 1000), shutdownHooks: [] };
  if (config.database.kind === "sqlite") {
    const checkpointer = startWalCheckpointer(db, config.database.sqlitePath);
    // Stopping restores SQLite's own checkpoint on commit, so the final flushes after it stay bounded too.
    if (checkpointer) deps.shutdownHooks.push(() => checkpointer.stop());
  }
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
  await deps.cache.close();
  await deps.db.destroy();
}
