// A second (and third) gateway instance for the exactly-once tests: its own process over the same
// database, running `rounds` rounds of the task poller as fast as it can, then shutting down cleanly.
// Usage: bun tests/relay/task-poller-child.ts <sqlite|postgres|mysql> <url or sqlite path> <rounds>
import { loadConfig } from "../../server/config.ts";
import { buildDeps, closeDeps } from "../../server/bootstrap.ts";
import { TaskPoller } from "../../server/jobs/task-poller.ts";

const [kind, where, rounds] = process.argv.slice(2) as ["sqlite" | "postgres" | "mysql", string, string];
const config = loadConfig({
  SESSION_SECRET: "test-secret",
  NODE_ENV: "test",
  SYNC_FREQUENCY: "0",
  TASK_POLL_INTERVAL: "0",
});
config.database = {
  ...config.database,
  kind,
  url: kind === "sqlite" ? "" : where,
  sqlitePath: kind === "sqlite" ? where : "",
};
config.instanceId = `child-${process.pid}`;
config.journalDir = null;
const deps = await buildDeps(config);
const poller = new TaskPoller(deps, { intervalMs: 0, timeoutMs: 3_600_000 });
let changed = 0;
for (let i = 0; i < Number(rounds); i++) changed += (await poller.round()).polled;
await closeDeps(deps);
console.log(`polled ${changed}`);
