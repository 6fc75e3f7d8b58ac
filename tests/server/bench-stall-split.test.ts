// scripts/bench/stall-split.ts (relay.ts --stall-why): a gap between the stall timer's ticks is split into the time
// the thread ran, waited for a core and was blocked. Two gaps of the kinds it must tell apart: a busy loop (ran)
// and a thread asleep in the kernel (blocked), with the ticks called by hand as the timer would.
import { expect, test } from "bun:test";
import { describeStalls, stallSplitter } from "../../scripts/bench/stall-split.ts";

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

test("a busy gap is counted as run, a blocked one as neither run nor waiting; short gaps are not stalls", () => {
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
  expect(s.n).toBe(2);
  // The busy gap ran nearly all of its 30 ms (or waited for a core, on a loaded machine); the blocked one neither.
  expect(s.ranMs + s.waitedMs).toBeGreaterThan(25);
  expect(s.ranMs + s.waitedMs).toBeLessThan(s.gapMs - 30);
  expect(s.longest.gapMs).toBeGreaterThan(39);
  expect(s.longest.ranMs).toBeLessThan(5);
  expect(describeStalls(s, 10_000)).toContain("2 of 4 ms or more (2.0 per 10,000 calls)");
  // Read resets.
  expect(split.read().n).toBe(0);
});
