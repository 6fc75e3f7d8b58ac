// Summarises JavaScriptCore's collection log (a process run with BUN_JSC_logGC=1 writes it to stderr): how often
// the busiest heap (the event loop's, under load) collected, how long each collection stopped it, and how many
// bytes were allocated between collections, with the share of "oversized" blocks (large single allocations,
// e.g. typed-array buffers). `relay.ts --gc-log DIR` prints this under each cell for each hop.
//   bun scripts/bench/gc-log.ts FILE [SECONDS]
import { readFileSync } from "node:fs";

export interface GcSummary {
  collections: number;
  full: number;
  /** per collection: the sum of its pauses, ms */
  pauseP50: number;
  pauseP90: number;
  pauseMax: number;
  pauseTotal: number;
  /** bytes allocated as reported by the collections that allocation triggered */
  allocated: number;
  oversized: number;
}

const START = /^\[GC<(0x[0-9a-f]+)>: START/;
const LINE = /^\[GC<(0x[0-9a-f]+)>: (START )?M/;
const PAUSE = / p=([0-9.]+)ms/g;
const REQUESTED = /bytes allocated this cycle: (\d+) .*oversized bytes: (\d+)/;

export function summariseGcLog(text: string): GcSummary | null {
  const lines = text.split("\n");
  const starts = new Map<string, number>();
  for (const l of lines) {
    const m = START.exec(l);
    if (m) starts.set(m[1], (starts.get(m[1]) ?? 0) + 1);
  }
  if (starts.size === 0) return null;
  const heap = [...starts].sort((a, b) => b[1] - a[1])[0][0];
  const cycles: number[] = [];
  let current: number | null = null;
  let full = 0;
  let allocated = 0;
  let oversized = 0;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const req = REQUESTED.exec(l);
    if (req) {
      // The request names no heap: it belongs to the next collection that starts.
      const next = lines
        .slice(i + 1, i + 6)
        .map((x) => START.exec(x))
        .find(Boolean);
      if (next?.[1] === heap) {
        allocated += Number(req[1]);
        oversized += Number(req[2]);
      }
      continue;
    }
    const m = LINE.exec(l);
    if (!m || m[1] !== heap) continue;
    if (m[2]) {
      current = 0;
      if (l.includes("FullCollection")) full++;
    }
    for (const p of l.matchAll(PAUSE)) current = (current ?? 0) + Number(p[1]);
    if (l.includes("END]") && current !== null) {
      cycles.push(current);
      current = null;
    }
  }
  const sorted = [...cycles].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
  return {
    collections: cycles.length,
    full,
    pauseP50: at(0.5),
    pauseP90: at(0.9),
    pauseMax: sorted[sorted.length - 1] ?? 0,
    pauseTotal: cycles.reduce((a, b) => a + b, 0),
    allocated,
    oversized,
  };
}

/** One line: collections per second, pauses, the share of time paused, allocation per second. */
export function describeGc(s: GcSummary, seconds: number): string {
  const mb = (b: number) => (b / 1e6 / seconds).toFixed(0);
  return (
    `${(s.collections / seconds).toFixed(1)} collections/s (${s.full} full), pause per collection p50 ${s.pauseP50.toFixed(2)} / p90 ${s.pauseP90.toFixed(2)} / max ${s.pauseMax.toFixed(2)} ms, `
    + `${((s.pauseTotal / (seconds * 1000)) * 100).toFixed(1)} % of the time paused; allocated ${mb(s.allocated)} MB/s (${mb(s.oversized)} MB/s in oversized blocks)`
  );
}

if (import.meta.main) {
  const file = process.argv[2];
  if (!file) throw new Error("usage: bun scripts/bench/gc-log.ts FILE [SECONDS]");
  const s = summariseGcLog(readFileSync(file, "utf8"));
  console.log(s ? describeGc(s, Number(process.argv[3] ?? 1)) : "no collections in the log");
}
