// `npm test`: runs the whole suite with bun test and ends with the line "N passed, N failed".
// Extra arguments go to bun test (a path filter, -t NAME, ...).
//
// Files run in worker processes (TEST_WORKERS, default: the cores, at most 4; 1 runs them in one process as
// before). Each file is isolated in its worker, and every storage test makes a database and a Redis prefix of
// its own, so files never share state. tests/timings.json (per-file durations from an earlier run) makes the
// slowest files start first: a 2-minute browser file started last would otherwise set the wall time.
// `TEST_WORKERS=2 npm test -- --update-timings` refreshes it.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const TEST_TIMEOUT_MS = 20_000;
const args = process.argv.slice(2);
const workers = Number(process.env.TEST_WORKERS ?? Math.min(4, navigator.hardwareConcurrency || 1));
const timings = join(import.meta.dir, "../tests/timings.json");
const parallel = workers > 1 ? [`--parallel=${workers}`, `--timings=${timings}`] : [];
const files = args.some((a) => !a.startsWith("-")) ? [] : ["tests/"];
// The agent tests (tests/agents/) run the real coding agents and SDKs, a package of their own kept out of the
// root one (about 1 GB). `npm ci && npm test` runs the whole suite, so a run that includes them installs that
// package when it is missing or differs from its lock file; when it cannot, the run stops here and says why
// rather than pass without them.
const agents = join(import.meta.dir, "../tests/agents");
const wantsAgents = files.length > 0 || args.some((a) => a.includes("tests/agents"));
if (wantsAgents) {
  if (!agentsInstalled(agents)) {
    console.error("installing tests/agents (npm ci --prefix tests/agents) ...");
    const npm = Bun.spawnSync(["npm", "ci", "--prefix", agents, "--no-audit", "--no-fund"], {
      stdout: "inherit",
      stderr: "inherit",
      timeout: 900_000,
    });
    if (npm.exitCode !== 0) {
      console.error("npm ci --prefix tests/agents failed: the agent tests cannot run without it");
      console.log("0 passed, 1 failed");
      process.exit(1);
    }
  }
}
// A whole-suite run also checks formatting and lint rules (`npm run lint`, docs/development/style.md). It runs
// beside the tests, its output held back and printed at the end only when it fails, counted as one failed test.
const lint = files.length > 0 ? startLint() : null;
// A test's time limit: bun test reads none from bunfig.toml (its default, 5 s, applied whatever [test] said),
// and tests that start servers or several database instances take 3-6 s on a loaded 2-core machine.
const timeout = args.some((a) => a.startsWith("--timeout")) ? [] : [`--timeout=${TEST_TIMEOUT_MS}`];
const proc = Bun.spawn([process.execPath, "test", ...parallel, ...timeout, ...args, ...files], {
  stdout: "inherit",
  stderr: "pipe",
  env: process.env,
});

// bun test prints its summary on stderr; keep the tail to count from it.
let tail = "";
const decoder = new TextDecoder();
const reader = proc.stderr.getReader();
const copied = (async () => {
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    process.stderr.write(value);
    tail = (tail + decoder.decode(value, { stream: true })).slice(-4000);
  }
})().catch(() => {});
const code = await proc.exited;
// A grandchild that outlived the run could keep the pipe open: don't wait on it for long.
await Promise.race([copied, Bun.sleep(2000)]);
reader.cancel().catch(() => {});

const pass = Number(/(\d+) pass/.exec(tail)?.[1] ?? 0);
const fail = Number(/(\d+) fail/.exec(tail)?.[1] ?? 0);
const errors = Number(/(\d+) errors?/.exec(tail)?.[1] ?? 0);
const lintFailed = lint ? await lint : false;
const failed = fail + errors + (code !== 0 && fail + errors === 0 ? 1 : 0) + (lintFailed ? 1 : 0);
console.log(`${pass} passed, ${failed} failed`);
process.exit(code === 0 && pass > 0 && !lintFailed ? 0 : 1);

/** Runs `npm run lint`; resolves to whether it failed, after printing its findings if so. */
async function startLint(): Promise<boolean> {
  const root = join(import.meta.dir, "..");
  const proc = Bun.spawn(["npm", "run", "--silent", "lint"], { cwd: root, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code === 0) return false;
  console.error(
    `${out}${err}\n(fail) format and lint check: \`npm run lint\` lists the findings, \`npm run format\` fixes the formatting`,
  );
  return true;
}

/**
 * Whether tests/agents/node_modules holds what its lock file pins: npm's record of the installed tree
 * (node_modules/.package-lock.json) has every locked package at its version. Other platforms' optional
 * packages are locked but never installed. (File times would not do: a checkout rewrites the lock file.)
 */
function agentsInstalled(dir: string): boolean {
  const hidden = join(dir, "node_modules/.package-lock.json");
  if (!existsSync(hidden)) return false;
  try {
    const want = JSON.parse(readFileSync(join(dir, "package-lock.json"), "utf8")).packages ?? {};
    const have = JSON.parse(readFileSync(hidden, "utf8")).packages ?? {};
    return Object.entries<any>(want).every(
      ([path, p]) => path === "" || have[path]?.version === p.version || (p.optional && !have[path]),
    );
  } catch {
    return false;
  }
}
