// PostgreSQL and MySQL: the write-behind's transactions on a worker thread with its own connection
// (sql-worker-thread.ts; hot-path rule 2). On the main connection the JavaScript drivers (postgres.js, mysql2)
// encode a second's logs and parse the replies on the event loop — more than the rest of the calls' settlement
// costs — and every batch would be a pause for the requests in flight. The statements are compiled here
// (the same SQL as the main-connection path writes); the worker commits each transaction whole or not at all.
// If the worker cannot start, reach the database or fails, the write-behind writes on the main connection.
import type { Database } from "../../db/index.ts";
import { DEFAULT_DATABASE_TIMEOUTS, type DatabaseTimeouts } from "../../db/timeouts.ts";
import { spawnStatementWorker, workerUrl, type StatementWorker } from "./statement-worker.ts";

export function startSqlWorker(
  db: Database,
  url: string,
  t: DatabaseTimeouts = DEFAULT_DATABASE_TIMEOUTS,
): StatementWorker | null {
  if (!url) return null;
  return spawnStatementWorker(
    db,
    workerUrl("sql-worker-thread.ts"),
    { type: "open", url, connectMs: t.connectMs, queryMs: t.queryMs },
    "database write worker",
  );
}
