export {};
// `npm test`: runs the whole suite with bun test and ends with the line "N passed, N failed".
// Extra arguments go to bun test (a path filter, -t NAME, ...).
const args = process.argv.slice(2);
const proc = Bun.spawn([process.execPath, "test", ...(args.length ? args : ["tests/"])], {
  stdout: "inherit",
  stderr: "pipe",
  env: process.env,
});

let tail = "";
const decoder = new TextDecoder();
for await (const chunk of proc.stderr) {
  process.stderr.write(chunk);
  tail = (tail + decoder.decode(chunk, { stream: true })).slice(-4000);
}
const code = await proc.exited;
const pass = Number(/(\d+) pass/.exec(tail)?.[1] ?? 0);
const fail = Number(/(\d+) fail/.exec(tail)?.[1] ?? 0);
const errors = Number(/(\d+) errors?/.exec(tail)?.[1] ?? 0);
const failed = fail + errors + (code !== 0 && fail + errors === 0 ? 1 : 0);
console.log(`${pass} passed, ${failed} failed`);
process.exit(code === 0 && pass > 0 ? 0 : 1);
