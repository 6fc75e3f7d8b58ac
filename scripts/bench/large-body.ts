// The event loop's longest stall while a hop relays one large request, in steady state: the mock upstream and
// the hop (gateway or the minimal JSON hop from relay.ts) in their own processes, one call at a time, the
// hop's 1 ms stall timer read after each call (the first four calls of a size warm up and are not counted).
//
//   bun scripts/bench/large-body.ts [--targets gateway,minimal] [--kb 20,200,1000] [--modes json,stream] [--calls 12]
//
// The body is one user message of that many KB ("word word ..."); relay.ts --prompt-bytes measures a
// conversation of many messages under load instead.
import { spawn } from "bun";
import { join } from "node:path";

const RELAY = join(import.meta.dir, "relay.ts");
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const targets = arg("targets", "gateway,minimal").split(",");
const sizes = arg("kb", "20,200,1000").split(",").map(Number);
const modes = arg("modes", "json,stream").split(",");
const calls = Math.max(6, Number(arg("calls", "12")));
const WARM = 4;

/** Starts a relay.ts role and reads the JSON line it prints when it listens. */
async function start(args: string[]) {
  const proc = spawn([process.execPath, RELAY, ...args], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let buf = "";
  while (!buf.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${args[0]} exited before it listened`);
    buf += new TextDecoder().decode(value);
  }
  return { proc, info: JSON.parse(buf.split("\n")[0]!) };
}

const mock = await start(["mock"]);
const upstream = `http://127.0.0.1:${mock.info.port}`;
console.log("target    size     mode    stall median / max (ms)");
for (const target of targets) {
  const hop = await start(target === "gateway" ? ["gateway", upstream, "1"] : [target, upstream]);
  const base = `http://127.0.0.1:${hop.info.port}`;
  const stall = async () => ((await (await fetch(base + "/__bench/stall")).json()) as { stall: number }).stall;
  for (const kb of sizes) {
    const content = "word ".repeat((kb * 1000) / 5);
    for (const mode of modes) {
      const body = JSON.stringify({
        model: "bench-model",
        stream: mode === "stream",
        messages: [{ role: "user", content }],
      });
      const stalls: number[] = [];
      for (let i = 0; i < calls; i++) {
        await stall();
        const res = await fetch(base + "/v1/chat/completions", {
          method: "POST",
          headers: { authorization: `Bearer ${hop.info.key}`, "content-type": "application/json" },
          body,
        });
        await res.arrayBuffer();
        await Bun.sleep(50);
        if (i >= WARM) stalls.push(await stall());
      }
      stalls.sort((a, b) => a - b);
      const median = stalls[Math.floor(stalls.length / 2)]!;
      console.log(
        `${target.padEnd(9)} ${`${kb} KB`.padEnd(8)} ${mode.padEnd(7)} ${median.toFixed(1)} / ${stalls.at(-1)!.toFixed(1)}`,
      );
    }
  }
  hop.proc.kill("SIGTERM");
  await hop.proc.exited;
}
mock.proc.kill();
process.exit(0);
