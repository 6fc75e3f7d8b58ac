// Start-up: flags → config → database → migrations → caches → jobs → listen; graceful shutdown.
import { HELP, VERSION, loadConfig, parseFlags } from "./config.ts";
import { buildDeps } from "./bootstrap.ts";
import { gracefulShutdown } from "./shutdown.ts";
import { createApp } from "./app.ts";
import { startChannelJobs } from "./jobs/channel-jobs.ts";
import { startTaskPoller } from "./jobs/task-poller.ts";

const flags = parseFlags(process.argv.slice(2));
if (flags.help) {
  console.log(HELP);
  process.exit(0);
}
if (flags.version) {
  console.log(VERSION);
  process.exit(0);
}

if (process.argv.slice(2).includes("--healthcheck")) {
  // For Docker's HEALTHCHECK (the slim image has no curl): exit 0 when /api/status answers 200 on the
  // configured port. The placeholder secret keeps loadConfig from creating one in the data folder.
  const { port } = loadConfig({ ...process.env, SESSION_SECRET: "healthcheck" }, flags);
  const healthy = await fetch(`http://127.0.0.1:${port}/api/status`, { signal: AbortSignal.timeout(4000) }).then(
    (r) => r.status === 200,
    () => false,
  );
  process.exit(healthy ? 0 : 1);
}

let config: ReturnType<typeof loadConfig>;
let deps: Awaited<ReturnType<typeof buildDeps>>;
let app: ReturnType<typeof createApp>;
try {
  config = loadConfig(process.env, flags);
  deps = await buildDeps(config);
  deps.options.startSync(config.syncFrequencySeconds);
  startChannelJobs(deps);
  startTaskPoller(deps);
  if (config.sessionSecretGenerated) {
    console.warn(
      `SESSION_SECRET is not set: using a generated secret stored in ${config.dataDir}. Several instances must share one SESSION_SECRET.`,
    );
  }
  app = createApp(deps);
  // A console folder on disk is loaded asynchronously; listen only once every route exists.
  await app.modules;
  // Elysia turns SO_REUSEPORT on by default: a second instance on the same port would then silently share
  // its traffic (two databases behind one address) instead of failing to start.
  // Bun's development mode (Elysia's default unless NODE_ENV=production) would answer stray errors with its
  // debug page; config.nodeEnv already defaults to production.
  app.listen({
    port: config.port,
    hostname: config.host,
    reusePort: false,
    development: config.nodeEnv === "development",
  });
} catch (e) {
  console.error(`Switchyard could not start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

const url = `http://localhost:${app.server?.port}`;
console.log(
  `Switchyard ${VERSION} listening on ${url} (database: ${config.database.kind}${config.database.kind === "sqlite" ? ` at ${config.database.sqlitePath}` : ""}, cache: ${deps.cache.kind})`,
);
if (!(await deps.db.selectFrom("setups").select("id").limit(1).executeTakeFirst())) {
  console.log(`First start: open ${url}/setup in a browser to create the administrator account.`);
}

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) {
    console.log(`${signal} received again: exiting without waiting`);
    process.exit(1);
  }
  stopping = true;
  console.log(`${signal} received: finishing in-flight requests and flushing pending writes`);
  // Last resort: gracefulShutdown keeps to the grace period itself, unless something holds the event loop.
  const force = setTimeout(() => {
    console.error("shutdown did not finish in time: exiting");
    process.exit(1);
  }, config.shutdownGraceMs + 1_000);
  const { drained } = await gracefulShutdown(app.server, deps, { graceMs: config.shutdownGraceMs });
  clearTimeout(force);
  console.log(drained ? "stopped cleanly" : "stopped after the grace period");
  process.exit(0);
}
// The last line of defence: a database or Redis driver that throws from one of its own callbacks (postgres.js
// writing to a socket it has already closed, a second error event on a dead connection) must cost the call
// that needed it, not every call in flight. The drivers' errors are handled where they are used; what still
// escapes is logged here and the process goes on.
process.on("uncaughtException", (e) => console.error("uncaught error (the gateway keeps running):", e));
process.on("unhandledRejection", (e) => console.error("unhandled rejection (the gateway keeps running):", e));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
