// Where a hop's main thread spends its CPU per call, native work included: summarises a `perf record` of one
// benchmark cell (`relay.ts --perf DIR`). Bun's JavaScript profiler samples wall-clock time and stops at the
// first native frame, so a native call that waits looks expensive and the runtime's own work (the HTTP
// server, promise jobs, sending answers) is one "(anonymous)" entry; `perf` samples CPU time with every frame,
// and JavaScriptCore's JIT dump (written into DIR by the hops) names the compiled JavaScript frames. Each
// sample is charged to its innermost JavaScript function (its own code and the native calls it makes, but not
// the JavaScript functions it calls); samples with no JavaScript frame are the runtime's own.
//   bun scripts/bench/relay.ts --targets minimal,gateway --modes json --concurrency 64 --perf /tmp/perf
//   bun scripts/bench/perf-attr.ts /tmp/perf/gateway-json-c64.data [--top 30] [--within NAME]
// --within NAME (a function name as listed, without its #hash): for the samples charged to it, the native
// entry points it called (the frame just under it) and the native code the samples landed in.
// Needs Linux `perf` (it records the cpu-clock software event, so it works in virtual machines too).
import { spawnSync } from "bun";
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

const file = process.argv[2];
if (!file) throw new Error("usage: bun scripts/bench/perf-attr.ts DIR/<target>-<cell>.data [--top N]");
const top = Number(process.argv[process.argv.indexOf("--top") + 1]) || 30;
const within = process.argv.includes("--within") ? process.argv[process.argv.indexOf("--within") + 1] : null;
const meta = JSON.parse(readFileSync(`${file}.json`, "utf8")) as {
  pid: number;
  calls: number;
  target: string;
  cell: string;
};

interface Code {
  at: bigint;
  start: bigint;
  end: bigint;
  name: string;
}

/** JIT_CODE_LOAD records of a JSC jitdump (the format `perf inject --jit` reads): when, where, and the name. */
function jitCode(path: string): Map<bigint, Code[]> {
  const b = readFileSync(path);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const byPage = new Map<bigint, Code[]>();
  let off = v.getUint32(8, true); // header size
  while (off + 16 <= b.length) {
    const id = v.getUint32(off, true);
    const size = v.getUint32(off + 4, true);
    if (size === 0) break;
    if (id === 0) {
      const at = v.getBigUint64(off + 8, true);
      const start = v.getBigUint64(off + 32, true);
      const len = v.getBigUint64(off + 40, true);
      const nameAt = off + 56;
      const name = b.toString("utf8", nameAt, b.indexOf(0, nameAt));
      const code = { at, start, end: start + len, name };
      for (let p = start >> 12n; p <= (code.end - 1n) >> 12n; p++) {
        const list = byPage.get(p);
        if (list) list.push(code);
        else byPage.set(p, [code]);
      }
    }
    off += size;
  }
  return byPage;
}

const dir = dirname(file);
const dump = readdirSync(dir).find((f) => f.startsWith("jit-") && f.endsWith(`-${meta.pid}.dump`));
if (!dump) throw new Error(`no jit-*-${meta.pid}.dump in ${dir}: was the hop started by relay.ts --perf?`);
const code = jitCode(join(dir, dump));

/** The JavaScript function at `addr` when the sample was taken (code is freed and its memory reused). */
function jsAt(addr: bigint, ns: bigint): string | null {
  let best: Code | null = null;
  for (const c of code.get(addr >> 12n) ?? []) {
    if (c.start <= addr && addr < c.end && c.at <= ns && (!best || c.at > best.at)) best = c;
  }
  if (!best || /Thunk|^JSC-LLInt/.test(best.name)) return null;
  return best.name.replace(/^JSC-\w+: /, "");
}

const script = spawnSync(["perf", "script", "-i", file, "-F", "tid,time,ip,sym,dso"], {
  stdout: "pipe",
  stderr: "ignore",
  maxBuffer: 1 << 30,
});
const text = script.stdout.toString();
const fn = new Map<string, number>();
const leaf = new Map<string, number>();
const entry = new Map<string, number>();
const landed = new Map<string, number>();
let samples = 0;
const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
for (const block of text.split("\n\n")) {
  const lines = block.trim().split("\n");
  const head = /^\s*(\d+)\s+([\d.]+):/.exec(lines[0] ?? "");
  if (!head || Number(head[1]) !== meta.pid) continue; // the main thread only
  samples++;
  const ns = BigInt(Math.round(Number(head[2]) * 1e9));
  const frames = lines.slice(1).map((l) => l.trim().split(/\s+/));
  // JIT code lives outside the binary's and the kernel's address ranges, so every frame can be looked up.
  let owner: string | null = null;
  let depth = 0;
  for (; depth < frames.length; depth++) if ((owner = jsAt(BigInt(`0x${frames[depth][0]}`), ns))) break;
  if (within && owner?.split("#")[0] === within) {
    add(entry, depth > 0 ? frames[depth - 1].slice(1).join(" ") : "(its own JavaScript)");
    add(landed, depth > 0 ? frames[0].slice(1).join(" ") : "(its own JavaScript)");
  }
  const where = frames[0]?.slice(1).join(" ") ?? "";
  add(
    leaf,
    frames[0] && jsAt(BigInt(`0x${frames[0][0]}`), ns)
      ? "JIT-compiled JavaScript"
      : where.includes("kernel")
        ? "kernel"
        : where.includes("libc")
          ? "libc"
          : "runtime (native)",
  );
  add(fn, owner ?? "(no JavaScript frame: the runtime's own work)");
}
const us = (n: number) => ((n * 1e6) / 1999 / meta.calls).toFixed(2).padStart(6);
console.log(
  `${basename(file)}: ${meta.target} ${meta.cell}, ${samples} main-thread samples over ${meta.calls} calls = ${us(samples)} µs per call`,
);
console.log(
  `where the samples landed: ${[...leaf]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${us(n).trim()}`)
    .join(" · ")} (µs per call)`,
);
console.log(`\nµs per call by innermost JavaScript function (its own code and the native calls it makes):`);
for (const [k, n] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${us(n)}  ${k}`);
if (within) {
  console.log(`\n${within}: µs per call by the native entry point it called`);
  for (const [k, n] of [...entry].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${us(n)}  ${k}`);
  console.log(`\n${within}: µs per call by the native code the samples landed in`);
  for (const [k, n] of [...landed].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${us(n)}  ${k}`);
}
