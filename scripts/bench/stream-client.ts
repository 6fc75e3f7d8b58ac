// What reading an upstream's streamed answer costs a hop, by how it is read: `fetch()` and a body reader (what
// the relay does) against a keep-alive HTTP/1.1 client over a raw socket (`Bun.connect`) that hands the body's
// bytes over as they arrive. Each hop relays the mock's seven-chunk SSE answer (decoded to text and written to a
// direct stream, as the relay does) and runs with JavaScriptCore's collection log on; wrk drives c=64 streams.
//   bun scripts/bench/stream-client.ts [--rounds 2] [--seconds 6]        (needs wrk: apt-get install wrk)
// Prints, per hop and round: streams/s, p99, CPU per stream (every thread, from /proc) and the collections.
// Session 14 measured here why the relay's streams cost more than a bare pipe: Bun's reader of a fetch() body
// allocates a 256 KB buffer per stream before its first read (see README, "Session 14").
import { spawn } from "bun";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeGc, summariseGcLog } from "./gc-log.ts";

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : d;
};

/** A keep-alive HTTP/1.1 client for one origin: POSTs a body and hands the answer's status, then its body's
 * bytes (chunked or with a length), to a sink. A prototype for measuring: no TLS, proxies or stale-socket retry. */
class SocketClient {
  private idle: Conn[] = [];
  constructor(private host: string, private port: number) {}

  async post(path: string, headers: string, body: string, sink: Sink): Promise<void> {
    let c = this.idle.pop();
    if (!c) {
      const conn = new Conn(this);
      conn.sock = await Bun.connect({ hostname: this.host, port: this.port, socket: {
        data: (_s, d) => conn.onData(d as unknown as Buffer),
        close: () => conn.closed(),
        error: () => {},
      } });
      c = conn;
    }
    c.sink = sink;
    c.sock.write(`POST ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }

  release(c: Conn): void {
    this.idle.push(c);
  }

  forget(c: Conn): void {
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
  }
}

interface Sink { head(status: number): void; data(b: Uint8Array): void; end(): void; fail(e: Error): void }

const HEAD_END = Buffer.from("\r\n\r\n");
const enum At { Head, SizeLine, Data, LengthData, SizeCrlf, LastCrlf }

class Conn {
  sock: any;
  sink: Sink | null = null;
  private held: Buffer | null = null;
  private at = At.Head;
  private left = 0;
  constructor(private client: SocketClient) {}

  onData(data: Buffer): void {
    const b = this.held ? Buffer.concat([this.held, data]) : data;
    this.held = null;
    let i = 0;
    while (i < b.length || this.at === At.LastCrlf) {
      if (this.at === At.Head) {
        const end = b.indexOf(HEAD_END, i);
        if (end < 0) break;
        const head = b.toString("latin1", i, end).toLowerCase();
        i = end + 4;
        this.sink!.head(Number(head.slice(9, 12)));
        const length = /\r\ncontent-length: *(\d+)/.exec(head);
        if (head.includes("\r\ntransfer-encoding: chunked")) this.at = At.SizeLine;
        else if ((this.left = length ? Number(length[1]) : 0) > 0) this.at = At.LengthData;
        else return this.done();
      } else if (this.at === At.SizeLine) {
        const end = b.indexOf("\r\n", i);
        if (end < 0) break;
        this.left = parseInt(b.toString("latin1", i, end), 16);
        i = end + 2;
        this.at = this.left === 0 ? At.LastCrlf : At.Data;
      } else if (this.at === At.Data || this.at === At.LengthData) {
        const n = Math.min(this.left, b.length - i);
        this.sink!.data(b.subarray(i, i + n));
        i += n;
        if ((this.left -= n) > 0) break;
        if (this.at === At.LengthData) return this.done();
        this.at = At.SizeCrlf;
      } else {
        if (b.length - i < 2) break;
        i += 2;
        if (this.at === At.LastCrlf) return this.done();
        this.at = At.SizeLine;
      }
    }
    if (i < b.length) this.held = b.subarray(i);
  }

  closed(): void {
    this.client.forget(this);
    this.sink?.fail(new Error("the upstream closed the connection"));
  }

  private done(): void {
    const sink = this.sink!;
    this.sink = null;
    this.at = At.Head;
    this.client.release(this);
    sink.end();
  }
}

const SSE = new Headers({ "content-type": "text/event-stream; charset=utf-8" });

/** A hop: `how` is fetch or socket. */
function runHop(upstream: URL, how: string) {
  const client = new SocketClient(upstream.hostname, Number(upstream.port));
  const server = Bun.serve({ port: 0, async fetch(req) {
    const body: any = await req.json();
    body.stream_options = { include_usage: true };
    const text = JSON.stringify(body);
    const decoder = new TextDecoder();
    if (how === "fetch") {
      const res = await fetch(upstream.origin + "/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer sk-upstream" }, body: text });
      const reader = res.body!.getReader();
      return new Response(new ReadableStream({ type: "direct", async pull(out: any) {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return out.close();
          out.write(decoder.decode(value, { stream: true }));
        }
      } } as any), { headers: SSE });
    }
    // The answer's bytes arrive by callback: written at once once the stream is being served, kept until then.
    let out: any = null;
    const early: string[] = [];
    let ended = false;
    let wake: (() => void) | null = null;
    await new Promise<void>((resolve, reject) => void client.post("/v1/chat/completions", "Content-Type: application/json\r\nAuthorization: Bearer sk-upstream\r\n", text, {
      head: () => resolve(),
      data: (b) => {
        const s = decoder.decode(b, { stream: true });
        if (out) out.write(s);
        else early.push(s);
      },
      end: () => {
        ended = true;
        wake?.();
      },
      fail: (e) => {
        ended = true;
        wake?.();
        reject(e);
      },
    }).catch(reject));
    return new Response(new ReadableStream({ type: "direct", async pull(controller: any) {
      out = controller;
      for (const s of early) controller.write(s);
      early.length = 0;
      if (!ended) await new Promise<void>((r) => (wake = r));
      controller.close();
    } } as any), { headers: SSE });
  } });
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
  const p = spawn(["wrk", "-t", "1", "-c", "64", "-d", `${seconds}s`, "--latency", "-s", script, url], { stdout: "pipe" });
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
  writeFileSync(lua, `wrk.method="POST"\nwrk.body=${JSON.stringify(JSON.stringify({ model: "bench-model", stream: true, messages: [{ role: "user", content: "Say hello to the benchmark." }] }))}\nwrk.headers["content-type"]="application/json"\n`);
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
        console.log(`round ${r} ${how.padEnd(6)} ${(w.n / seconds).toFixed(0)} streams/s, p99 ${w.p99.toFixed(2)} ms, CPU ${((cpu * 1000) / Math.max(1, w.n)).toFixed(1)} µs per stream; ${gc ? describeGc(gc, seconds) : "no collections"}`);
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
