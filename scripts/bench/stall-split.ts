// The stall instrument's --stall-why split (relay.ts, watchStalls): for each gap of 4 ms or more between the 1 ms
// timer's ticks, how much of it the event loop's thread ran, waited for a core, or was blocked in the kernel,
// from /proc/thread-self/schedstat read at every tick (call tick() from the thread being watched).
import { openSync, readSync } from "node:fs";

/** What the long gaps between the stall timer's ticks were made of (see watchStalls). */
export interface StallSplit {
  n: number;
  gapMs: number;
  ranMs: number;
  waitedMs: number;
  longest: { gapMs: number; ranMs: number; waitedMs: number };
}

/** A cell's stalls of 4 ms or more: how many, and what their time was made of. */
export function describeStalls(w: StallSplit, calls: number): string {
  const blocked = (x: { gapMs: number; ranMs: number; waitedMs: number }) =>
    Math.max(0, x.gapMs - x.ranMs - x.waitedMs);
  const l = w.longest;
  return `${w.n} of 4 ms or more (${((w.n * 1e4) / Math.max(1, calls)).toFixed(1)} per 10,000 calls), ${w.gapMs.toFixed(0)} ms in all: ran ${w.ranMs.toFixed(0)}, waited for a core ${w.waitedMs.toFixed(0)}, blocked ${blocked(w).toFixed(0)}; the longest ${l.gapMs.toFixed(1)} ms: ran ${l.ranMs.toFixed(1)}, waited ${l.waitedMs.toFixed(1)}, blocked ${blocked(l).toFixed(1)}`;
}

export function stallSplitter() {
  const fd = openSync("/proc/thread-self/schedstat", "r");
  const buf = Buffer.alloc(128);
  // schedstat: ns on a core, ns waiting for one, time slices. The kernel brings a running thread's count up to
  // date only at its accounting points, so one gap's split can take in time run just before the gap (a busy
  // turn, then a sleep, once read as 10 ms run while asleep); a cell's totals are not affected.
  const sample = (): [number, number] => {
    const n = readSync(fd, buf, 0, buf.length, 0);
    const [ran, waited] = buf.toString("latin1", 0, n).split(" ");
    return [Number(ran) / 1e6, Number(waited) / 1e6];
  };
  let [ran0, waited0] = sample();
  const zero = (): StallSplit => ({
    n: 0,
    gapMs: 0,
    ranMs: 0,
    waitedMs: 0,
    longest: { gapMs: 0, ranMs: 0, waitedMs: 0 },
  });
  let acc = zero();
  return {
    tick(gapMs: number) {
      const [ran, waited] = sample();
      if (gapMs >= 5) {
        const s = { gapMs: gapMs - 1, ranMs: ran - ran0, waitedMs: waited - waited0 };
        acc.n++;
        acc.gapMs += s.gapMs;
        acc.ranMs += s.ranMs;
        acc.waitedMs += s.waitedMs;
        if (s.gapMs > acc.longest.gapMs) acc.longest = s;
      }
      ran0 = ran;
      waited0 = waited;
    },
    read(): StallSplit {
      const out = acc;
      acc = zero();
      return out;
    },
  };
}

// `bun run scripts/bench/stall-split.ts --self-check`: the split must tell a busy gap (ran) from a thread asleep in
// the kernel (blocked), with the ticks called by hand as the timer would. It depends on the scheduler, so it is
// the benchmark's own check, run before trusting --stall-why on a machine, not a test of the product suite.
function selfCheck(): boolean {
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };
  const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  const split = stallSplitter();
  let last = performance.now();
  const tick = () => {
    const now = performance.now();
    split.tick(now - last);
    last = now;
  };
  tick();
  busy(30);
  // The kernel adds a running thread's time to schedstat when it leaves the core (or at a scheduler tick), so
  // without this short sleep up to a tick's worth of the busy gap would be read in the next one.
  sleep(2);
  tick();
  sleep(40);
  tick();
  busy(1);
  tick();
  const s = split.read();
  console.log(describeStalls(s, 10_000));
  const checks: [string, boolean][] = [
    ["two gaps of 4 ms or more, the 1 ms one not a stall", s.n === 2],
    // The busy gap ran nearly all of its 30 ms (or waited for a core, on a loaded machine); the blocked one neither.
    ["the busy gap counted as run or waiting (over 25 ms)", s.ranMs + s.waitedMs > 25],
    ["the asleep gap counted as neither", s.ranMs + s.waitedMs < s.gapMs - 30],
    [
      "the longest gap is the asleep one (over 39 ms) and barely ran (under 5 ms)",
      s.longest.gapMs > 39 && s.longest.ranMs < 5,
    ],
    [
      "the summary counts per 10,000 calls",
      describeStalls(s, 10_000).includes("2 of 4 ms or more (2.0 per 10,000 calls)"),
    ],
    ["read() resets", split.read().n === 0],
  ];
  for (const [what, ok] of checks) console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  return checks.every(([, ok]) => ok);
}

if (import.meta.main && process.argv.includes("--self-check")) process.exit(selfCheck() ? 0 : 1);
