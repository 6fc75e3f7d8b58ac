// config → database → migrations → options → cache: the dependencies createApp needs.
import type { Config } from "./config.ts";
import type { AppDeps } from "./deps.ts";
import { openDatabase, type Database } from "../db/index.ts";
import { OptionStore } from "./modules/option/store.ts";
import { openCache } from "./infra/cache.ts";
import { startSqliteWorker } from "./infra/sqlite-worker.ts";
import { startSqlWorker } from "./infra/sql-worker.ts";
import { stopWorker } from "./infra/statement-worker.ts";
import { startSqliteReader, stopSqliteReader } from "./infra/sqlite-reader.ts";
import { closeIdleStreamConnections, configureStreamClient } from "./infra/stream-client.ts";
import { replayJournal } from "./jobs/journal.ts";
import { dataExportPolicy } from "./modules/dashboard/export.ts";

export async function buildDeps(config: Config): Promise<AppDeps> {
  configureStreamClient(config.streamClient);
  const db = await openDatabase({
    kind: config.database.kind,
    url: config.database.url,
    sqlitePath: config.database.sqlitePath,
    timeouts: config.database.timeouts,
  });
  const options = new OptionStore(db);
  await options.load();
  const cache = await openCache(config.redisUrl, undefined, config.redis);
  const deps: AppDeps = { config, db, options, cache, startTime: Math.floor(Date.now() / 1000), shutdownHooks: [] };
  startDatabaseWorker(db, config.database);
  await replayJournal(db, config, dataExportPolicy(options));
  return deps;
}

/** The write-behind's transactions (and SQLite's WAL checkpoints) run on a worker thread with its own
 * connection (stopped in closeDeps, after the last flush), and on SQLite the console's heavy reads on another
 * (infra/sqlite-reader.ts). An in-memory SQLite database has neither. */
export function startDatabaseWorker(db: Database, database: Config["database"]): void {
  if (database.kind === "sqlite") {
    startSqliteWorker(db, database.sqlitePath);
    startSqliteReader(db, database.sqlitePath);
  } else startSqlWorker(db, database.url, database.timeouts);
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
  await stopWorker(deps.db);
  await stopSqliteReader(deps.db);
  await deps.cache.close();
  closeIdleStreamConnections();
  await deps.db.destroy();
}
