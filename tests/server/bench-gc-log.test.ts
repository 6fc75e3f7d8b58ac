// scripts/bench/gc-log.ts reads JavaScriptCore's collection log (BUN_JSC_logGC=1) for relay.ts --gc-log: the
// busiest heap's collections, the pauses of each (summed over its increments), and the bytes that triggered them.
import { expect, test } from "bun:test";
import { describeGc, summariseGcLog } from "../../scripts/bench/gc-log.ts";

// Lines as JavaScriptCore 1.4 prints them (shortened): two heaps, the first with three collections.
const LOG = [
  "Requesting GC because bytes allocated this cycle: 8500000 exceed bytes allowed: 8388608 normal bytes: 8000000 oversized bytes: 500000 last oversized: 262144",
  "[GC<0xaaa>: START M 8786kb => EdenCollection, a=0kb hf=0.000 p=1.000000ms (max 1.000000)...]",
  "[GC<0xaaa>: M a=73kb hf=0.022 v=1901kb p=0.500000ms (max 1.000000)...]",
  "[GC<0xaaa>: M a=249kb v=3195kb p=0.250000ms (max 1.000000), cycle 7.5ms END]",
  "GC END!",
  "[GC<0xbbb>: START M 720kb => FullCollection, a=0kb p=9.000000ms (max 9.000000), cycle 9ms END]",
  "Requesting GC because bytes allocated this cycle: 9000000 exceed bytes allowed: 8388608 normal bytes: 9000000 oversized bytes: 0 last oversized: 0",
  "[GC<0xaaa>: START M 9000kb => FullCollection, a=0kb p=3.000000ms (max 3.000000), cycle 3ms END]",
  "[GC<0xaaa>: START M 9100kb => EdenCollection, a=0kb p=2.000000ms (max 3.000000)...]",
  "[GC<0xaaa>: M a=10kb p=0.000000ms (max 3.000000), cycle 2ms END]",
].join("\n");

test("the busiest heap's collections, each collection's pauses summed, and the bytes that triggered them", () => {
  const s = summariseGcLog(LOG)!;
  expect(s.collections).toBe(3);
  expect(s.full).toBe(1);
  expect(s.pauseTotal).toBeCloseTo(1.75 + 3 + 2, 6);
  expect([s.pauseP50, s.pauseMax]).toEqual([2, 3]);
  // The other heap's 9 ms collection is not counted; both requests were the busy heap's.
  expect(s.allocated).toBe(17_500_000);
  expect(s.oversized).toBe(500_000);
  expect(describeGc(s, 1)).toContain("3.0 collections/s (1 full)");
  expect(summariseGcLog("no collections here")).toBeNull();
});
