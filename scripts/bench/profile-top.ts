// Summarises a Bun/V8 .cpuprofile: self time by category (native code, the project's JavaScript, dependencies,
// idle, GC) and the top functions by self time, optionally with the project callers that reached native code.
//
//   bun scripts/bench/profile-top.ts PROFILE.cpuprofile [--top 30]
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const file = process.argv[2];
if (!file) {
  console.error("usage: bun scripts/bench/profile-top.ts PROFILE.cpuprofile [--top N]");
  process.exit(2);
}
const topIdx = process.argv.indexOf("--top");
const topN = topIdx >= 0 ? Number(process.argv[topIdx + 1]) : 30;
const prof: Profile = JSON.parse(readFileSync(file, "utf8"));

const byId = new Map<number, Node>();
const parent = new Map<number, number>();
for (const n of prof.nodes) {
  byId.set(n.id, n);
  for (const c of n.children ?? []) parent.set(c, n.id);
}
// Counted in samples, not timeDeltas: the profiler takes no samples while the thread sleeps, so a delta after
// an idle gap would charge the whole gap to whatever ran next.
const self = new Map<number, number>();
for (let i = 0; i < prof.samples.length; i++) self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + 1);

const root = process.cwd();
function category(n: Node): string {
  const { functionName: f, url } = n.callFrame;
  if (f === "(idle)" || (f === "(program)" && !url)) return f === "(idle)" ? "idle" : "native";
  if (f === "(garbage collector)") return "gc";
  if (!url || url.startsWith("native") || url.startsWith("bun:") || url.startsWith("node:")) return "native";
  if (url.includes("/node_modules/")) return "dependencies";
  if (url.includes(root) || url.includes("/server/") || url.includes("/db/")) return "project";
  return "native";
}
const label = (n: Node) =>
  `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.replace(root + "/", "").replace(/^file:\/\//, "")}${n.callFrame.url ? ":" + (n.callFrame.lineNumber + 1) : ""}`;

/** The nearest project frame above a node: who in our code reached this native/dependency work. */
function projectCaller(id: number): string {
  let p = parent.get(id);
  while (p !== undefined) {
    const n = byId.get(p)!;
    if (category(n) === "project") return label(n);
    p = parent.get(p);
  }
  return "-";
}

let total = 0;
const cats = new Map<string, number>();
const fns = new Map<string, { t: number; cat: string; callers: Map<string, number> }>();
for (const [id, t] of self) {
  const n = byId.get(id)!;
  total += t;
  const c = category(n);
  cats.set(c, (cats.get(c) ?? 0) + t);
  if (c === "idle") continue;
  const key = label(n);
  let e = fns.get(key);
  if (!e) fns.set(key, (e = { t: 0, cat: c, callers: new Map() }));
  e.t += t;
  if (c !== "project") {
    const caller = projectCaller(id);
    e.callers.set(caller, (e.callers.get(caller) ?? 0) + t);
  }
}
const busy = total - (cats.get("idle") ?? 0);
const pct = (t: number, of: number) => `${((100 * t) / of).toFixed(1)}%`;
console.log(`samples: ${prof.samples.length}, busy ${busy}`);
for (const [c, t] of [...cats].sort((a, b) => b[1] - a[1]))
  console.log(
    `  ${c.padEnd(13)} ${pct(t, total).padStart(6)} of all, ${c === "idle" ? "" : pct(t, busy) + " of busy"}`,
  );
console.log(`\ntop ${topN} by self time (share of busy time):`);
for (const [k, e] of [...fns].sort((a, b) => b[1].t - a[1].t).slice(0, topN)) {
  const callers = [...e.callers]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 2)
    .map(([c, t]) => `${c} ${pct(t, e.t)}`)
    .join("; ");
  console.log(`${pct(e.t, busy).padStart(6)}  [${e.cat}] ${k}${callers ? `   ← ${callers}` : ""}`);
}
