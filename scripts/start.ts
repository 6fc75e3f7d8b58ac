// `npm start`: run the gateway from source with the built console. Builds the console into dist/console
// when it is missing or older than any file under console/, then starts server/main.ts in this process
// with CONSOLE_DIR=dist/console (the console is served from disk, not from the embedded manifest, so
// no generated source file is needed). Arguments are passed through: `npm start -- --port 8080`.
// The gateway stops with the process that started it: npm runs this under `sh -c`, and a SIGTERM to npm ends
// that shell without passing the signal on, which would leave the server orphaned and still listening.
import { existsSync } from "node:fs";
import { relative } from "node:path";
import { buildConsole, consoleIsStale, CONSOLE_ENTRY, CONSOLE_OUT } from "./build-console.ts";

const explicitConsole =
  process.env.CONSOLE_DIR || process.argv.some((a) => a === "--console-dir" || a.startsWith("--console-dir="));
const infoOnly = process.argv.slice(2).some((a) => ["--help", "-h", "--version", "-v"].includes(a));

if (!explicitConsole && !infoOnly) {
  if (!existsSync(CONSOLE_ENTRY)) {
    console.warn(`${relative(process.cwd(), CONSOLE_ENTRY)} is missing: starting without a console`);
  } else {
    if (consoleIsStale()) {
      const t0 = performance.now();
      console.log("building the console ...");
      try {
        const files = await buildConsole();
        console.log(
          `console built into ${relative(process.cwd(), CONSOLE_OUT)} (${files.length} files, ${Math.round(performance.now() - t0)} ms)`,
        );
      } catch (e) {
        console.error(e instanceof Error ? e.message : e);
        process.exit(1);
      }
    }
    process.env.CONSOLE_DIR = CONSOLE_OUT;
  }
}

/** How often the parent is checked: a stop within a second or so of npm's is soon enough. */
const PARENT_CHECK_MS = 1_000;
const parent = process.ppid;
const watch = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(watch);
  console.log(`the parent process (${parent}) has exited: stopping`);
  // The server's own SIGTERM handler (server/main.ts) drains in-flight requests and flushes pending writes.
  process.kill(process.pid, "SIGTERM");
}, PARENT_CHECK_MS);
watch.unref();

await import("../server/main.ts");
