// What reading an upstream's streamed answer costs a hop, by how it is read: `fetch()` and a body reader against
// the relay's keep-alive HTTP/1.1 client over `Bun.connect`
// (server/infra/stream-client.ts, whose body chunks are the socket's own buffers). Each hop relays the mock's seven-chunk SSE answer (decoded to text and written to a
// direct stream, as the relay does) and runs with JavaScriptCore's collection log on; wrk drives c=64 streams.
//   bun scripts/bench/stream-client.ts [--rounds 2] [--seconds 6]        (needs wrk: apt-get install wrk)
// Prints, per hop and round: streams/s, p99, CPU per stream (every thread, from /proc) and the collections.
// It shows why the relay's streamed calls use the socket client (docs/development/hot-path.md, rule 9): Bun's
// reader of a fetch() body allocates a 256 KB buffer per stream before its first read.
import { spawn } from "bun";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeGc, summariseGcLog } from "./gc-log.ts";
import { streamFetch } from "../../server/infra/stream-client.ts";

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : d;
};

const SSE = new Headers({ "content-type": "text/event-stream; charset=utf-8" });

/** A hop: `how` is fetch (Bun's fetch()) or socket (the relay's client, server/infra/stream-client.ts). */
function runHop(upstream: URL, how: string) {
  const send = how === "fetch" ? fetch : streamFetch;
  const server = Bun.serve({
    port: 0,
    async fetch(req) {
      const body: any = await req.json();
      body.stream_options = { include_usage: true };
      const decoder = new TextDecoder();
      const res = await send(upstream.origin + "/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-upstream" },
        body: JSON.stringify(body),
        redirect: "manual",
      });
      const reader = res.body!.getReader();
      return new Response(
        new ReadableStream({
          type: "direct",
          async pull(out: any) {
            for (;;) {
              const { value, done } = await reader.read();
              if (done) return out.close();
              out.write(decoder.decode(value, { stream: true }));
            }
          },
        } as any),
        { headers: SSE },
      );
    },
  });
  console.log(JSON.stringify({ port: server.port }));
}

async function start(args: string[], env: Record<string, string> = {}, stderr: any = "inherit") {
  const script = args[0] === "mock" ? join(import.meta.dir, "relay.ts") : import.meta.path;
  const proc = spawn([process.execPath, script, ...args], { stdout: "pipe", stderr, env: { ...process.env, ...env } });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${args[0]} exited before it was ready`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return { proc, port: JSON.parse(text.split("\n")[0]).port as number };
}

/** User + system CPU time of a process, ms (USER_HZ 100). */
const cpuMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
};

async function wrk(url: string, seconds: number, script: string) {
  const p = spawn(["wrk", "-t", "1", "-c", "64", "-d", `${seconds}s`, "--latency", "-s", script, url], {
    stdout: "pipe",
  });
  const out = await new Response(p.stdout).text();
  const n = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const p99 = /\s99%\s+([\d.]+)(us|ms|s)/.exec(out);
  const ms = p99 ? Number(p99[1]) * (p99[2] === "us" ? 0.001 : p99[2] === "s" ? 1000 : 1) : NaN;
  return { n, p99: ms };
}

if (process.argv[2] === "hop") runHop(new URL(process.argv[3]), process.argv[4]);
else {
  const rounds = Number(arg("rounds", "2"));
  const seconds = Number(arg("seconds", "6"));
  const mock = await start(["mock"]);
  const upstream = `http://127.0.0.1:${mock.port}`;
  const lua = join(tmpdir(), `stream-client-${process.pid}.lua`);
  writeFileSync(
    lua,
    `wrk.method="POST"\nwrk.body=${JSON.stringify(JSON.stringify({ model: "bench-model", stream: true, messages: [{ role: "user", content: "Say hello to the benchmark." }] }))}\nwrk.headers["content-type"]="application/json"\n`,
  );
  try {
    for (let r = 1; r <= rounds; r++) {
      for (const how of ["fetch", "socket"]) {
        const log = join(tmpdir(), `stream-client-${process.pid}-${how}.log`);
        const hop = await start(["hop", upstream, how], { BUN_JSC_logGC: "1" }, Bun.file(log));
        const url = `http://127.0.0.1:${hop.port}/v1/chat/completions`;
        await wrk(url, 2, lua);
        const logged = readFileSync(log, "utf8").length;
        const c0 = cpuMs(hop.proc.pid);
        const w = await wrk(url, seconds, lua);
        const cpu = cpuMs(hop.proc.pid) - c0;
        await Bun.sleep(100);
        const gc = summariseGcLog(readFileSync(log, "utf8").slice(logged));
        console.log(
          `round ${r} ${how.padEnd(6)} ${(w.n / seconds).toFixed(0)} streams/s, p99 ${w.p99.toFixed(2)} ms, CPU ${((cpu * 1000) / Math.max(1, w.n)).toFixed(1)} µs per stream; ${gc ? describeGc(gc, seconds) : "no collections"}`,
        );
        hop.proc.kill();
        await hop.proc.exited;
        rmSync(log, { force: true });
      }
    }
  } finally {
    mock.proc.kill();
    rmSync(lua, { force: true });
  }
}
