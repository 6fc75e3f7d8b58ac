// Start-up benchmark of the release binary: cold start to the first 200 on /api/status, idle RSS, and the
// binary's size; optionally the same start-up from source for comparison.
//
//   bun scripts/bench/startup.ts [--binary dist/switchyard] [--runs 10] [--source]
//
// "first start" runs the binary in a fresh empty folder (the time includes creating ./data, the SQLite
// file and every table); "restart" runs it again over the folder of a previous run (open, check the
// migrations, load options). Each polls /api/status every 2 ms from spawn to the first 200, then reads
// VmRSS from /proc after 2 s of idleness. Targets: first 200 ≤ 150 ms, idle RSS ≤ 80 MB. The machine is shared:
// read the median.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1] : fallback;
};
const binary = resolve(flag("--binary", join(ROOT, "dist", "switchyard")));
const runs = Math.max(1, Number(flag("--runs", "10")));
const TARGET_MS = 150;
const TARGET_RSS_MB = 80;

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, fetch: () => new Response("") });
  const p = s.port!;
  s.stop(true);
  return p;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

interface Sample {
  firstOkMs: number;
  idleRssMb: number;
}

async function once(cmd: string[], cwd: string): Promise<Sample> {
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    SESSION_SECRET: "bench-secret",
  };
  const t0 = performance.now();
  const proc = Bun.spawn([...cmd, "--port", String(port)], { cwd, env, stdout: "ignore", stderr: "ignore" });
  const url = `http://127.0.0.1:${port}/api/status`;
  let firstOkMs = NaN;
  while (performance.now() - t0 < 10_000) {
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) {
      firstOkMs = performance.now() - t0;
      break;
    }
    if (proc.exitCode !== null) throw new Error(`${cmd.join(" ")} exited with ${proc.exitCode}`);
    await Bun.sleep(2);
  }
  await Bun.sleep(2000);
  const idleRssMb = rssMb(proc.pid);
  proc.kill("SIGTERM");
  await proc.exited;
  return { firstOkMs, idleRssMb };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function bench(label: string, cmd: string[], warm: boolean): Promise<{ ms: number; rss: number }> {
  const samples: Sample[] = [];
  const shared = mkdtempSync(join(tmpdir(), "sy-bench-startup-"));
  try {
    if (warm) await once(cmd, shared);
    for (let i = 0; i < runs; i++) {
      const dir = warm ? shared : mkdtempSync(join(tmpdir(), "sy-bench-startup-"));
      try {
        samples.push(await once(cmd, dir));
      } finally {
        if (!warm) rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(shared, { recursive: true, force: true });
  }
  const ms = samples.map((s) => s.firstOkMs);
  const rss = samples.map((s) => s.idleRssMb);
  console.log(
    `${label.padEnd(22)} first 200: median ${median(ms).toFixed(0)} ms (min ${Math.min(...ms).toFixed(0)}, max ${Math.max(...ms).toFixed(0)})`
      + `   idle RSS: median ${median(rss).toFixed(1)} MB (max ${Math.max(...rss).toFixed(1)})`,
  );
  return { ms: median(ms), rss: median(rss) };
}

if (!existsSync(binary)) {
  console.error(`${binary} does not exist: run npm run build first`);
  process.exit(1);
}
console.log(`binary   ${binary}: ${(statSync(binary).size / 1024 / 1024).toFixed(1)} MB, ${runs} runs each`);
const first = await bench("binary, first start", [binary], false);
const restart = await bench("binary, restart", [binary], true);
if (args.includes("--source")) {
  const fromSource = [process.execPath, join(ROOT, "server", "main.ts"), "--data-dir", "./data"];
  await bench("source, first start", fromSource, false);
  await bench("source, restart", fromSource, true);
}
const result = { ms: Math.max(first.ms, restart.ms), rss: Math.max(first.rss, restart.rss) };
const pass = result.ms <= TARGET_MS && result.rss <= TARGET_RSS_MB;
console.log(`targets  first 200 ≤ ${TARGET_MS} ms, idle RSS ≤ ${TARGET_RSS_MB} MB: ${pass ? "met" : "NOT met"}`);
process.exit(pass ? 0 : 1);
