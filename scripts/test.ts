export {};
// `npm test`: runs the whole suite with bun test and ends with the line "N passed, N failed".
// Extra arguments go to bun test (a path filter, -t NAME, ...).
const args = process.argv.slice(2);
const proc = Bun.spawn([process.execPath, "test", ...(args.length ? args : ["tests/"])], {
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
const failed = fail + errors + (code !== 0 && fail + errors === 0 ? 1 : 0);
console.log(`${pass} passed, ${failed} failed`);
process.exit(code === 0 && pass > 0 ? 0 : 1);
