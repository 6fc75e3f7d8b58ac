// Relay benchmark: a mock upstream, a bare Bun pass-through proxy and the gateway (token auth, billing,
// routing, logging all on, SQLite) measured against the same load in one run, each in its own process.
//
//   bun scripts/bench/relay.ts [--seconds 3] [--concurrency 1,16,64] [--modes json,stream] [--targets direct,proxy,minimal,gateway]
//                              [--soak 60] [--soak-concurrency 64] [--cpu-prof DIR] [--perf DIR] [--gc-log DIR] [--users 1] [--driver bun|wrk]
//                              [--prompt-bytes N] [--stall-why] [--compare DIR]
//   (PG_DSN=postgres://... : the gateway runs on a fresh PostgreSQL database instead of SQLite; MYSQL_DSN=mysql://...
//   without PG_DSN: on a fresh MySQL database; BENCH_NO_LOGS=1: the gateway's consume logs off)
//
// For each target (direct = the mock itself, proxy, minimal = the least a JSON-reading hop does, gateway), concurrency level and mode (JSON, stream)
// it prints throughput, p50/p99/p99.9 latency, stream time-to-first-byte, the target's CPU time per
// request (from /proc; each thread's share on the line below the cell, with how long the main thread waited for a core) and, for each hop, the longest stall of its event loop during the cell (a 1 ms
// timer inside each hop's process, reset per cell; before the cells, each hop's idle CPU). --soak N additionally runs the gateway for N seconds
// at c=16 (--soak-concurrency) and samples RSS through the run. Numbers are noisy on a shared 2-core machine: compare ratios
// within one run. --driver wrk drives the measured cells with wrk (Debian's package) instead of the Bun client in
// this process: no time to first byte then, and stream latency is the whole answer's.
import { spawn, type Subprocess } from "bun";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeGc, summariseGcLog } from "./gc-log.ts";
import { benchMessages } from "./prompt.ts";
import { describeStalls, stallSplitter, type StallSplit } from "./stall-split.ts";

const role = process.argv[2];
const MODEL = "bench-model";
const REPLY = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1700000000,
  model: MODEL,
  choices: [
    { index: 0, message: { role: "assistant", content: "Hello from the bench upstream." }, finish_reason: "stop" },
  ],
  usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 },
});
const CHUNKS = ["Hello", " from", " the", " bench", " upstream."].map(
  (t) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1700000000, model: MODEL, choices: [{ index: 0, delta: { content: t }, finish_reason: null }] })}\n\n`,
);
const CHUNK_GAP_MS = 2;
const USAGE_CHUNK = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1700000000, model: MODEL, choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } })}\n\n`;

function runMock() {
  const server = Bun.serve({
    port: 0,
    async fetch(req) {
      const body: any = await req.json();
      if (!body.stream) return new Response(REPLY, { headers: { "content-type": "application/json" } });
      // Chunks leave one at a time, CHUNK_GAP_MS apart, as a model's tokens do: time to first byte then
      // shows whether a hop holds the first chunk back instead of equalling the whole stream's latency.
      const tail = (body.stream_options?.include_usage ? USAGE_CHUNK : "") + "data: [DONE]\n\n";
      const stream = new ReadableStream({
        type: "direct",
        async pull(controller: any) {
          for (const c of CHUNKS) {
            controller.write(c);
            await controller.flush();
            await Bun.sleep(CHUNK_GAP_MS);
          }
          controller.write(tail);
          controller.close();
        },
      } as any);
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    },
  });
  console.log(JSON.stringify({ port: server.port }));
}

/** The event loop's longest stall since the last read: a timer due every millisecond that fires late. Every
 * hop carries the same instrument (its timer costs a few µs of CPU per millisecond, which at c=1 is a large share
 * of a call), so their CPU and stalls compare like for like; GET /__bench/stall reads and resets it.
 * `--stall-why` (BENCH_STALL_WHY=1 in the hop) also reads the main thread's schedstat at every tick and splits
 * each stall of 4 ms or more into the time the thread ran (its own work: code, collections), waited for a core
 * (the scheduler gave the core to another thread) and neither (blocked in the kernel: a lock, a page fault).
 * The read is one pread of /proc/thread-self/schedstat per tick (~1 % of a core), so only when asked. */
function watchStalls(): () => Response {
  let stall = 0;
  let last = performance.now();
  const why = process.env.BENCH_STALL_WHY === "1" ? stallSplitter() : null;
  setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last - 1);
    why?.tick(now - last);
    last = now;
  }, 1);
  return () => {
    const out = stall;
    stall = 0;
    // --gc-log: the reads bracket each cell, so the mark splits the collection log by cell.
    if (process.env.BUN_JSC_logGC) console.error(GC_MARK);
    return Response.json({ stall: out, why: why?.read() });
  };
}

const GC_MARK = "-- relay bench: stall read --";
const STALL_PATH = "/__bench/stall";

/**
 * The least a JSON-handling hop can do in Bun: read the body, parse it, set the model, send it upstream, parse
 * the answer (where a gateway finds the usage), send it on. No auth, billing, routing or logs: the floor under
 * any gateway that looks at what it relays, between the byte-piping proxy and the gateway.
 */
function runMinimal() {
  const upstream = process.argv[3];
  const stalls = watchStalls();
  const server = Bun.serve({
    port: 0,
    async fetch(req) {
      if (req.method === "GET") return stalls();
      const body: any = JSON.parse(await req.text());
      body.model = String(body.model);
      if (body.stream) body.stream_options = { include_usage: true };
      const abort = new AbortController();
      const res = await fetch(upstream + new URL(req.url).pathname, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-upstream" },
        body: JSON.stringify(body),
        signal: abort.signal,
      });
      if (body.stream) return new Response(res.body, { headers: { "content-type": "text/event-stream" } });
      const text = await res.text();
      const usage = JSON.parse(text).usage;
      if (!usage) throw new Error("no usage");
      return new Response(text, { headers: { "content-type": "application/json" } });
    },
  });
  process.on("SIGTERM", () => process.exit(0));
  console.log(JSON.stringify({ port: server.port }));
}

function runProxy() {
  const upstream = process.argv[3];
  const stalls = watchStalls();
  const server = Bun.serve({
    port: 0,
    fetch(req) {
      if (req.method === "GET") return stalls();
      const url = new URL(req.url);
      return fetch(upstream + url.pathname, { method: req.method, headers: req.headers, body: req.body });
    },
  });
  // An orderly exit, so a --cpu-prof run writes its profile.
  process.on("SIGTERM", () => process.exit(0));
  console.log(JSON.stringify({ port: server.port }));
}

/** The sk- key of the bench's token `i`. */
const benchKey = (i: number) => `sk-bench${String(i).padStart(6, "0")}`.padEnd(51, "b");

async function runGateway(upstream: string, users: number) {
  const { loadConfig } = await import("../../server/config.ts");
  const { buildDeps, closeDeps } = await import("../../server/bootstrap.ts");
  const { createApp } = await import("../../server/app.ts");
  const { nowSeconds } = await import("../../db/index.ts");
  const dir = mkdtempSync(join(tmpdir(), "sy-bench-"));
  // A fresh server database when asked for one (the tests' temporary databases: created here, dropped on exit).
  const kind = process.env.PG_DSN ? "postgres" : process.env.MYSQL_DSN ? "mysql" : null;
  const server = kind ? await (await import("../../tests/helpers/db.ts")).tempDatabase(kind) : null;
  const sqlDsn = server?.url ?? "";
  const config = loadConfig({
    DATA_DIR: dir,
    SESSION_SECRET: "bench",
    PORT: "0",
    NODE_ENV: "production",
    SYNC_FREQUENCY: "60",
    SQL_DSN: sqlDsn,
  });
  const deps = await buildDeps(config);
  const app = createApp(deps);
  await app.handle(
    new Request("http://localhost/api/setup", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "root", password: "benchpass123", confirmPassword: "benchpass123" }),
    }),
  );
  await deps.options.set("ModelRatio", JSON.stringify({ [MODEL]: 1 }));
  // BENCH_NO_LOGS=1: consume logs off (what the write-behind's log rows cost, by difference).
  if (process.env.BENCH_NO_LOGS === "1") await deps.options.set("LogConsumeEnabled", "false");
  const db = deps.db;
  const user = await db.selectFrom("users").select("id").where("username", "=", "root").executeTakeFirstOrThrow();
  await db.updateTable("users").set({ quota: 1e15 }).where("id", "=", user.id).execute();
  // Token i belongs to user i (user 0 is root): --users N spreads the load over N users' balances and logs.
  for (let i = 0; i < users; i++) {
    let userId = user.id;
    if (i > 0) {
      await db
        .insertInto("users")
        .values({
          username: `bench${i}`,
          password: "x",
          display_name: `bench${i}`,
          role: 1,
          status: 1,
          quota: 1e15,
          group: "default",
          aff_code: `bench${i}`,
        } as any)
        .execute();
      userId = (await db.selectFrom("users").select("id").where("username", "=", `bench${i}`).executeTakeFirstOrThrow())
        .id;
    }
    await db
      .insertInto("tokens")
      .values({
        user_id: userId,
        key: benchKey(i).slice(3),
        name: "bench",
        created_time: nowSeconds(),
        expired_time: -1,
        remain_quota: 1e15,
        unlimited_quota: false,
      })
      .execute();
  }
  // (No RETURNING: MySQL has none.)
  await db
    .insertInto("channels")
    .values({
      type: 1,
      key: "sk-upstream",
      name: "bench",
      base_url: upstream,
      models: MODEL,
      group: "default",
      created_time: nowSeconds(),
      openai_organization: null,
      test_model: null,
      model_mapping: null,
      param_override: null,
    })
    .execute();
  const ch = await db.selectFrom("channels").select("id").where("name", "=", "bench").executeTakeFirstOrThrow();
  await db
    .insertInto("abilities")
    .values({
      group: "default",
      model: MODEL,
      channel_id: Number(ch.id),
      enabled: true,
      priority: 0,
      weight: 0,
      tag: null,
    })
    .execute();
  const stalls = watchStalls();
  app.get(STALL_PATH, stalls);
  app.listen({ port: 0, hostname: "127.0.0.1" });
  // `key`: the first token's, for callers that use one (memory.ts).
  console.log(JSON.stringify({ port: app.server!.port, users, key: benchKey(0) }));
  process.on("SIGTERM", async () => {
    await app.stop(true);
    await closeDeps(deps);
    rmSync(dir, { recursive: true, force: true });
    await server?.drop();
    process.exit(0);
  });
}

/** The gateway, or the --compare base (another checkout's gateway). */
const isGateway = (t: Target) => t.name === "gateway" || t.name === "base";

/** `keys`: the gateway's tokens, taken in turn (the other hops ignore the key). */
interface Target {
  name: string;
  url: string;
  proc: Subprocess;
  keys?: string[];
}

/** --cpu-prof DIR: the proxy and the gateway run under Bun's CPU profiler and write their .cpuprofile files
 * to DIR when they stop (named by pid, printed at the start; summarise one with scripts/bench/profile-top.ts). */
const profileDir = (() => {
  const i = process.argv.indexOf("--cpu-prof");
  return i >= 0 ? process.argv[i + 1] : "";
})();

const driver = (() => {
  const i = process.argv.indexOf("--driver");
  return i >= 0 ? process.argv[i + 1] : "bun";
})();

/** `--perf DIR`: each hop writes JavaScriptCore's JIT dump there and each measured cell is recorded with Linux
 * `perf` (every thread, native and kernel frames included), for perf-attr.ts to summarise. */
const perfDir = (() => {
  const i = process.argv.indexOf("--perf");
  return i >= 0 ? process.argv[i + 1] : "";
})();

/** `--gc-log DIR`: each hop runs with JavaScriptCore's collection log on, written to DIR/<hop>.log, and each
 * measured cell prints its hops' collections, pauses and allocation (scripts/bench/gc-log.ts). GC_LOG_LEVEL=2 writes
 * JSC's verbose log instead (each collection's marking constraints and visit counts; the summary reads less of it). */
/** --prompt-bytes N: each request carries a conversation of about N bytes (default: a one-line greeting). */
const promptBytes =
  Number(process.argv[process.argv.indexOf("--prompt-bytes") + 1] ?? 0)
  * (process.argv.includes("--prompt-bytes") ? 1 : 0);
const gcLogDir = (() => {
  const i = process.argv.indexOf("--gc-log");
  return i >= 0 ? process.argv[i + 1] : "";
})();

/** `--stall-why`: each hop splits its long stalls into running, waiting for a core and blocked (watchStalls). */
const stallWhy = process.argv.includes("--stall-why");

/** `script`: the relay.ts whose hop runs (--compare starts a second gateway from another checkout's); `name` names its logs. */
let start = async (
  args: string[],
  script = import.meta.path,
  name = args[0],
): Promise<{ proc: Subprocess; info: any }> => {
  const prof = profileDir && args[0] !== "mock" ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  let env: Record<string, string | undefined> =
    perfDir && args[0] !== "mock"
      ? { ...process.env, BUN_JSC_useJITDump: "1", BUN_JSC_jitDumpDirectory: perfDir }
      : process.env;
  const gcLog = gcLogDir && args[0] !== "mock" ? join(gcLogDir, `${name}.log`) : "";
  if (gcLog) {
    mkdirSync(gcLogDir, { recursive: true });
    env = { ...env, BUN_JSC_logGC: process.env.GC_LOG_LEVEL ?? "1" };
  }
  if (stallWhy && args[0] !== "mock") env = { ...env, BENCH_STALL_WHY: "1" };
  // GATEWAY_ENV="A=1 B=2": variables for the gateway's process only (JavaScriptCore options, say, with the other hops
  // as they are; not the --compare base, so `--compare .` measures an option against the same build without it).
  if (name === "gateway" && process.env.GATEWAY_ENV) {
    const pairs = process.env.GATEWAY_ENV.split(/\s+/).filter((kv) => kv.includes("="));
    env = {
      ...env,
      ...Object.fromEntries(pairs.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])),
    };
  }
  const proc = spawn([process.execPath, ...prof, script, ...args], {
    stdout: "pipe",
    stderr: gcLog ? Bun.file(gcLog) : "inherit",
    env,
  });
  if (prof.length) console.log(`cpu profile of the ${name}: ${profileDir}/*.${proc.pid}.*.cpuprofile`);
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the ${args[0]} exited before it was ready`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return { proc, info: JSON.parse(text.split("\n")[0]) };
};

const TICK = 100; // USER_HZ on Linux
/** User + system CPU time (ms) in the text of a /proc stat file (a process's or one thread's). */
function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICK;
}
function cpuMs(pid: number): number {
  return statCpuMs(readFileSync(`/proc/${pid}/stat`, "utf8"));
}
/** CPU time (ms) per thread of a process, summed by thread name: the main thread is the process's first task;
 * Bun names its others (HTTP Client, Worker for a worker thread, HeapHelper, JITWorker, ...). */
function threadCpuMs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = tid === String(pid) ? "main" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      out.set(name, (out.get(name) ?? 0) + statCpuMs(stat));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** "main 32.1 · HTTP Client 5.2 · Worker 3.9 ..." µs per call from two threadCpuMs readings, largest first. */
function perThread(before: Map<string, number>, after: Map<string, number>, calls: number): string {
  return [...after]
    .map(([name, ms]) => [name, ((ms - (before.get(name) ?? 0)) * 1000) / Math.max(1, calls)] as const)
    .filter(([, us]) => us >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([name, us]) => `${name} ${us.toFixed(1)}`)
    .join(" · ");
}

/** Nanoseconds a hop's main thread has spent runnable but waiting for a core (the second field of its schedstat):
 * at c=64 the two cores are shared by every hop, the load and the database, and a stall or a p99 grows with this
 * wait as much as with the hop's own work. */
function mainWaitNs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[1]);
  } catch {
    return NaN;
  }
}

/** The database server's CPU time (ms), all its processes (PostgreSQL forks one per connection): what the
 * gateway's queries and log writes cost outside its own process. 0 on SQLite (the hop does that work itself). */
function dbServerCpuMs(): number {
  if (!process.env.PG_DSN && !process.env.MYSQL_DSN) return 0;
  let ms = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (/^\d+ \((postgres|mariadbd|mysqld)\)/.test(stat)) ms += statCpuMs(stat);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return ms;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

const IDLE_MS = 4000;
const IDLE_SETTLE_MS = 3000;

const pct = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : NaN;

/** Starts `perf record` on a hop for a measured cell; the returned function stops it and notes the calls made. */
async function perfRecord(t: Target, cell: string): Promise<(calls: number) => Promise<void>> {
  const file = join(perfDir, `${t.name}-${cell}.data`);
  const rec = spawn(
    ["perf", "record", "-k", "1", "-F", "1999", "-e", "cpu-clock", "-g", "-p", String(t.proc.pid), "-o", file],
    { stdout: "ignore", stderr: "ignore" },
  );
  await Bun.sleep(300); // perf attaches before the load starts
  return async (calls) => {
    rec.kill("SIGINT");
    await rec.exited;
    writeFileSync(`${file}.json`, JSON.stringify({ pid: t.proc.pid, calls, target: t.name, cell }));
  };
}

/** wrk's Lua script for one cell: POSTs the chat body with the target's keys in turn, and prints the latency
 * percentiles (µs) and counts as one JSON line at the end. */
function wrkScript(body: string, keys: string[]): string {
  return `local keys = {${keys.map((k) => JSON.stringify(k)).join(",")}}
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/v1/chat/completions", { ["content-type"] = "application/json", ["authorization"] = "Bearer " .. keys[(n % #keys) + 1] }, ${JSON.stringify(body)})
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"n":%d,"us":%d,"p50":%f,"p99":%f,"p999":%f,"errors":%d}\\n', summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), e.connect + e.read + e.write + e.status + e.timeout))
end
`;
}

/** One cell driven by wrk (`--driver wrk`), the load generator the issue's figures came from: a C client
 * that takes far less of the two cores than the Bun one, so the hops measured get more of them. */
async function wrkLoad(t: Target, concurrency: number, seconds: number, body: string, keys: string[]) {
  const script = join(tmpdir(), `relay-bench-${process.pid}.lua`);
  writeFileSync(script, wrkScript(body, keys));
  const proc = spawn(["wrk", "-t", "1", "-c", String(concurrency), "-d", `${seconds}s`, "-s", script, t.url], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const line = out.split("\n").find((l) => l.startsWith('{"n"'));
  if (!line) throw new Error(`wrk printed no summary: ${out} ${await new Response(proc.stderr).text()}`);
  const r = JSON.parse(line);
  return {
    n: r.n as number,
    elapsed: r.us / 1e6,
    p50: r.p50 / 1000,
    p99: r.p99 / 1000,
    p999: r.p999 / 1000,
    errors: r.errors as number,
  };
}

/** The hop's collections during the cell just measured: its log between the last two stall reads. */
async function cellGc(t: Target, seconds: number): Promise<string> {
  await Bun.sleep(100); // the hop's stderr reaches the file
  const parts = readFileSync(join(gcLogDir, `${t.name}.log`), "utf8").split(GC_MARK);
  const s = summariseGcLog(parts[parts.length - 2] ?? "");
  return s ? describeGc(s, seconds) : "none";
}

async function load(t: Target, concurrency: number, seconds: number, stream: boolean, record = false) {
  const body = JSON.stringify({ model: MODEL, stream, messages: benchMessages(promptBytes) });
  const keys = t.keys ?? ["sk-direct"];
  let nextKey = 0;
  const lat: number[] = [];
  const ttfb: number[] = [];
  let errors = 0;
  const stopPerf =
    record && perfDir && t.name !== "direct"
      ? await perfRecord(t, `${stream ? "stream" : "json"}-c${concurrency}`)
      : null;
  const until = performance.now() + seconds * 1000;
  const cpu0 = cpuMs(t.proc.pid);
  const threads0 = threadCpuMs(t.proc.pid);
  const wait0 = mainWaitNs(t.proc.pid);
  const db0 = isGateway(t) ? dbServerCpuMs() : 0;
  const worker = async () => {
    while (performance.now() < until) {
      const t0 = performance.now();
      try {
        const headers = {
          "content-type": "application/json",
          authorization: `Bearer ${keys[nextKey++ % keys.length]}`,
        };
        const res = await fetch(t.url + "/v1/chat/completions", { method: "POST", headers, body });
        const reader = res.body!.getReader();
        const first = await reader.read();
        const t1 = performance.now();
        if (!first.done) while (!(await reader.read()).done);
        if (res.status !== 200) errors++;
        lat.push(performance.now() - t0);
        if (stream) ttfb.push(t1 - t0);
      } catch {
        errors++;
      }
    }
  };
  const started = performance.now();
  const measured = t.name !== "direct";
  if (measured) await fetch(t.url + STALL_PATH);
  const byWrk = driver === "wrk" && record ? await wrkLoad(t, concurrency, seconds, body, keys) : null;
  if (!byWrk) await Promise.all(Array.from({ length: concurrency }, worker));
  const stallRead: { stall: number; why?: StallSplit } | null = measured
    ? ((await (await fetch(t.url + STALL_PATH)).json()) as any)
    : null;
  const stall = stallRead ? stallRead.stall : NaN;
  const why = stallRead?.why;
  const elapsed = byWrk ? byWrk.elapsed : (performance.now() - started) / 1000;
  const gc = record && gcLogDir && measured ? await cellGc(t, elapsed) : "";
  const calls = byWrk ? byWrk.n : lat.length;
  await stopPerf?.(calls);
  const cpu = cpuMs(t.proc.pid) - cpu0;
  const dbUs =
    isGateway(t) && (process.env.PG_DSN || process.env.MYSQL_DSN)
      ? ((dbServerCpuMs() - db0) * 1000) / Math.max(1, calls)
      : NaN;
  const threads =
    perThread(threads0, threadCpuMs(t.proc.pid), calls)
    + (Number.isNaN(dbUs) ? "" : `; database server ${dbUs.toFixed(1)} (not in cpu ms/req)`);
  const waitMsPerS = (mainWaitNs(t.proc.pid) - wait0) / 1e6 / elapsed;
  lat.sort((a, b) => a - b);
  ttfb.sort((a, b) => a - b);
  if (byWrk)
    return {
      rps: calls / elapsed,
      p50: byWrk.p50,
      p99: byWrk.p99,
      p999: byWrk.p999,
      ttfb: NaN,
      cpuPerReq: cpu / Math.max(1, calls),
      threads,
      waitMsPerS,
      errors: byWrk.errors,
      n: calls,
      stall,
      why,
      gc,
    };
  return {
    rps: lat.length / elapsed,
    p50: pct(lat, 0.5),
    p99: pct(lat, 0.99),
    p999: pct(lat, 0.999),
    ttfb: pct(ttfb, 0.5),
    cpuPerReq: cpu / Math.max(1, lat.length),
    threads,
    waitMsPerS,
    errors,
    n: lat.length,
    stall,
    why,
    gc,
  };
}

async function main() {
  const arg = (name: string, def: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? process.argv[i + 1] : def;
  };
  const seconds = Number(arg("seconds", "3"));
  const levels = arg("concurrency", "1,16,64").split(",").map(Number);
  const soak = Number(arg("soak", "0"));
  const soakConcurrency = Number(arg("soak-concurrency", "16"));
  const modes = arg("modes", "json,stream").split(",");
  const only = arg("targets", "direct,proxy,minimal,gateway").split(",");

  if (perfDir) mkdirSync(perfDir, { recursive: true });
  const mock = await start(["mock"]);
  const mockUrl = `http://127.0.0.1:${mock.info.port}`;
  const proxy = await start(["proxy", mockUrl]);
  const users = Math.max(1, Number(arg("users", "1")));
  const gateway = await start(["gateway", mockUrl, String(users)]);
  const minimal = await start(["minimal", mockUrl]);
  // --compare DIR: a second gateway ("base") from another checkout, measured in the same cells as this one: an A/B
  // within seconds on a machine whose speed drifts by tens of per cent in minutes.
  const compareDir = arg("compare", "");
  const base = compareDir
    ? await start(["gateway", mockUrl, String(users)], join(compareDir, "scripts/bench/relay.ts"), "base")
    : null;
  const targets: Target[] = [
    { name: "direct", url: mockUrl, proc: mock.proc },
    { name: "proxy", url: `http://127.0.0.1:${proxy.info.port}`, proc: proxy.proc },
    { name: "minimal", url: `http://127.0.0.1:${minimal.info.port}`, proc: minimal.proc },
    {
      name: "gateway",
      url: `http://127.0.0.1:${gateway.info.port}`,
      proc: gateway.proc,
      keys: Array.from({ length: users }, (_, i) => benchKey(i)),
    },
  ];
  if (base)
    targets.push({
      name: "base",
      url: `http://127.0.0.1:${base.info.port}`,
      proc: base.proc,
      keys: Array.from({ length: users }, (_, i) => benchKey(i)),
    });
  for (let i = targets.length - 1; i >= 0; i--)
    if (!only.includes(targets[i].name) && targets[i].name !== "base") targets.splice(i, 1);
  // Warm-up: JIT, connection pools, the gateway's caches. The mode measured first is warmed last, and the other
  // is warmed again just before its cells: code the JIT optimised under streams alone leaves the JSON paths out
  // (and the other way round), and the cell after such a warm-up measured the gateway recompiling its hot
  // functions for seconds (JSC's "InadequateCoverage" exits, seen with BUN_JSC_verboseOSR=1).
  const warmup = Number(arg("warmup", "1"));
  const measured = [false, true].filter((s) => modes.includes(s ? "stream" : "json"));
  for (const t of targets) for (const s of [...measured].reverse()) await load(t, 8, warmup, s);

  console.log(
    `relay benchmark: ${seconds}s per cell, Bun ${Bun.version}, ${navigator.hardwareConcurrency} CPUs, gateway on ${process.env.PG_DSN ? "PostgreSQL" : process.env.MYSQL_DSN ? "MySQL" : "SQLite"}${users > 1 ? `, calls spread over ${users} users' tokens` : ""}`,
  );
  // What each hop spends with no calls at all (its timers, the stall instrument's 1 ms timer, the collector's
  // and allocator's housekeeping): the floor under the c=1 cells' CPU per call, where calls are few.
  const hops = targets.filter((t) => t.name !== "direct");
  // After the warm-up's own aftermath (its last write-behind flush, collections, compilation) has settled.
  await Bun.sleep(IDLE_SETTLE_MS);
  const idle0 = hops.map((t) => cpuMs(t.proc.pid));
  await Bun.sleep(IDLE_MS);
  console.log(
    `idle CPU, ms per second: ${hops.map((t, i) => `${t.name} ${(((cpuMs(t.proc.pid) - idle0[i]) * 1000) / IDLE_MS).toFixed(1)}`).join(", ")}\n`,
  );
  console.log("mode    c   target    req/s    p50 ms   p99 ms p99.9 ms  ttfb ms  cpu ms/req  errors  stall ms");
  const summary: string[] = [];
  for (const stream of measured) {
    if (stream !== measured[0]) {
      for (const t of targets) await load(t, 8, warmup, stream);
      await Bun.sleep(IDLE_SETTLE_MS);
    }
    for (const c of levels) {
      const r: Record<string, Awaited<ReturnType<typeof load>>> = {};
      // With --compare, the gateway and the base are measured twice, in the order gateway, base, base, gateway (a
      // drift of the machine's speed within the cell weighs on both alike); each line is one measurement.
      const gateways = targets.filter(isGateway);
      const order = base ? [...targets.filter((t) => !isGateway(t)), ...gateways, ...[...gateways].reverse()] : targets;
      for (const t of order) {
        r[t.name] = await load(t, c, seconds, stream, true);
        const x = r[t.name];
        console.log(
          `${(stream ? "stream" : "json").padEnd(6)} ${String(c).padStart(3)}   ${t.name.padEnd(8)} ${x.rps.toFixed(0).padStart(6)} ${x.p50.toFixed(3).padStart(9)} ${x.p99.toFixed(3).padStart(8)} ${x.p999.toFixed(3).padStart(8)} ${stream && !Number.isNaN(x.ttfb) ? x.ttfb.toFixed(3).padStart(8) : "       -"} ${x.cpuPerReq.toFixed(3).padStart(11)} ${String(x.errors).padStart(7)} ${Number.isNaN(x.stall) ? "        -" : x.stall.toFixed(2).padStart(9)}`,
        );
      }
      for (const t of targets)
        if (t.name !== "direct")
          console.log(
            `               ${t.name} CPU µs per call by thread: ${r[t.name].threads}; main thread waited for a core ${r[t.name].waitMsPerS.toFixed(0)} ms per s`,
          );
      if (gcLogDir)
        for (const t of targets)
          if (t.name !== "direct") console.log(`               ${t.name} collections: ${r[t.name].gc}`);
      if (stallWhy)
        for (const t of targets)
          if (r[t.name].why)
            console.log(`               ${t.name} stalls: ${describeStalls(r[t.name].why!, r[t.name].n)}`);
      const d = r.direct,
        p = r.proxy,
        g = r.gateway,
        m = r.minimal;
      if (!d || !p || !g || !m) continue;
      summary.push(
        `${stream ? "stream" : "json  "} c=${String(c).padEnd(3)} gateway/proxy throughput ${(g.rps / p.rps).toFixed(2)}x; added p50 vs direct: proxy ${(p.p50 - d.p50).toFixed(3)} ms, gateway ${(g.p50 - d.p50).toFixed(3)} ms`
          + `; p99 gateway − proxy ${(g.p99 - p.p99).toFixed(3)} ms, p99.9 ${(g.p999 - p.p999).toFixed(3)} ms; longest stall gateway ${g.stall.toFixed(2)} ms, proxy ${p.stall.toFixed(2)} ms`
          + (stream && driver !== "wrk"
            ? `; added ttfb: proxy ${(p.ttfb - d.ttfb).toFixed(3)} ms, gateway ${(g.ttfb - d.ttfb).toFixed(3)} ms`
            : "")
          + `; cpu/req gateway/proxy ${(g.cpuPerReq / p.cpuPerReq).toFixed(2)}x (minimal JSON hop/proxy ${(m.cpuPerReq / p.cpuPerReq).toFixed(2)}x, throughput ${(m.rps / p.rps).toFixed(2)}x)`,
      );
    }
  }
  console.log("\n" + summary.join("\n"));

  if (soak > 0) {
    const g = targets.find((t) => t.name === "gateway")!;
    // RSS swings by tens of MB with the garbage collector's rhythm, so one before/after pair says little:
    // sample it through the run and compare the peaks of the first and second halves (a leak raises the second).
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rssMb(g.proc.pid)), 2000);
    const r = await load(g, soakConcurrency, soak, false);
    clearInterval(sampler);
    const half = Math.floor(samples.length / 2);
    const peak = (xs: number[]) => Math.max(...xs).toFixed(1);
    console.log(
      `\nsoak: gateway c=${soakConcurrency} for ${soak}s: ${r.rps.toFixed(0)} req/s; RSS every 2 s: ${samples.map((x) => x.toFixed(0)).join(" ")} MB`,
    );
    console.log(
      `soak: RSS peak first half ${peak(samples.slice(0, half))} MB, second half ${peak(samples.slice(half))} MB`,
    );
  }
}

// Children are stopped however main() ends, so a failed run leaves no servers behind.
async function runBenchmark() {
  const children: Subprocess[] = [];
  const startChild = start;
  start = async (args, script, name) => {
    const c = await startChild(args, script, name);
    children.push(c.proc);
    return c;
  };
  try {
    await main();
  } finally {
    for (const c of children) c.kill("SIGTERM");
    await Promise.all(children.map((c) => c.exited));
  }
}

if (role === "mock") runMock();
else if (role === "proxy") runProxy();
else if (role === "minimal") runMinimal();
else if (role === "gateway") await runGateway(process.argv[3], Math.max(1, Number(process.argv[4] ?? 1)));
else await runBenchmark();
