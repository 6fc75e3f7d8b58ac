// Memory benchmark: the gateway's RSS on a very long stream and on a very large non-stream answer.
//
//   bun scripts/bench/memory.ts [--chunks 200000] [--minutes 0] [--burst 500] [--mb 50] [--target gateway|proxy] [--cases answer,stream]
//
// A mock upstream streams `--chunks` chat chunks (spread over `--minutes`, 0 = as fast as it can, sent
// `--burst` at a time: 1 sends each chunk on its own, as a model's tokens arrive) and answers
// an embeddings call with a JSON body of `--mb` megabytes. The gateway (scripts/bench/relay.ts's gateway: token
// auth, billing, routing and logging on, SQLite) relays both; its RSS is read from /proc before (idle, after a
// warm-up), through the stream every 2 s, and after each call. Target: both stay within 20 MB of idle.
import { spawn } from "bun";
import { readFileSync } from "node:fs";

const role = process.argv[2];
const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : def;
};

function runMock(chunks: number, minutes: number, mb: number, burst: number) {
  const piece = (i: number) =>
    `data: {"id":"c","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":{"content":"tok${i % 10} "},"finish_reason":null}]}\n\n`;
  const vector = Array.from({ length: 1536 }, (_, i) => ((i % 97) / 97).toFixed(6)).join(",");
  const item = (i: number) => `{"object":"embedding","index":${i},"embedding":[${vector}]}`;
  const items = Math.ceil((mb * 1024 * 1024) / (vector.length + 60));
  const server = Bun.serve({
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const body: any = await req.json();
      if (new URL(req.url).pathname.endsWith("/embeddings")) {
        // Built as it is sent, so the mock's own memory stays small too.
        return new Response(
          new ReadableStream({
            async pull(c) {
              c.enqueue(`{"object":"list","model":"bench-model","data":[`);
              for (let i = 0; i < items; i++) {
                c.enqueue((i ? "," : "") + item(i));
                if (i % 200 === 0) await Bun.sleep(0);
              }
              c.enqueue(`],"usage":{"prompt_tokens":8,"total_tokens":8}}`);
              c.close();
            },
          }),
          { headers: { "content-type": "application/json" } },
        );
      }
      if (!body.stream)
        return Response.json({
          id: "c",
          object: "chat.completion",
          model: "bench-model",
          choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
          usage: { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 },
        });
      const gap = minutes > 0 ? (minutes * 60_000) / chunks : 0;
      return new Response(
        new ReadableStream({
          type: "direct",
          async pull(c: any) {
            for (let i = 0; i < chunks; i++) {
              c.write(piece(i));
              if (i % burst === 0) {
                await c.flush();
                await Bun.sleep(gap * burst);
              }
            }
            const tail = body.stream_options?.include_usage
              ? `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":${chunks},"total_tokens":${chunks + 9}}}\n\n`
              : "";
            c.write(
              `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n${tail}data: [DONE]\n\n`,
            );
            c.close();
          },
        } as any),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  });
  console.log(JSON.stringify({ port: server.port }));
}

async function start(args: string[]) {
  const proc = spawn([process.execPath, ...args], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  reader.releaseLock();
  return { proc, info: JSON.parse(text.split("\n")[0]) };
}

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

async function main() {
  const chunks = Number(arg("chunks", "200000"));
  const minutes = Number(arg("minutes", "0"));
  const mb = Number(arg("mb", "50"));
  const burst = Number(arg("burst", "500"));
  const mock = await start([import.meta.path, "mock", String(chunks), String(minutes), String(mb), String(burst)]);
  // --target proxy measures relay.ts's bare pass-through proxy instead: the floor Bun itself sets.
  const target = arg("target", "gateway");
  const gateway = await start([
    new URL("./relay.ts", import.meta.url).pathname,
    target,
    `http://127.0.0.1:${mock.info.port}`,
  ]);
  const base = `http://127.0.0.1:${gateway.info.port}`;
  const headers = { "content-type": "application/json", authorization: `Bearer ${gateway.info.key}` };
  // A refused call would measure nothing (a 401 once printed "0.0 MB answer" as a result): it stops the run.
  const call = async (path: string, body: unknown) => {
    const res = await fetch(base + path, { method: "POST", headers, body: JSON.stringify(body) });
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return res;
  };
  try {
    // Warm-up: short calls of both kinds, then idle.
    for (let i = 0; i < 20; i++)
      await (
        await call("/v1/chat/completions", { model: "bench-model", messages: [{ role: "user", content: "hi" }] })
      ).text();
    Bun.gc(true);
    await Bun.sleep(2000);
    const idle = rssMb(gateway.proc.pid);
    console.log(`gateway idle RSS ${idle.toFixed(1)} MB`);

    // Each case is measured from the RSS just before it as well as from idle: a burst stream leaves the
    // allocator holding pages it freed, which would otherwise count against whatever runs next.
    const cases = arg("cases", "answer,stream").split(",");
    for (const which of cases) {
      const before = rssMb(gateway.proc.pid);
      if (which === "stream") {
        const samples: number[] = [];
        const sampler = setInterval(() => samples.push(rssMb(gateway.proc.pid)), 2000);
        const t0 = performance.now();
        const res = await call("/v1/chat/completions", {
          model: "bench-model",
          stream: true,
          messages: [{ role: "user", content: "a long one" }],
        });
        const reader = res.body!.getReader();
        let bytes = 0;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          bytes += value.byteLength;
        }
        clearInterval(sampler);
        samples.push(rssMb(gateway.proc.pid));
        const peak = Math.max(...samples);
        console.log(
          `stream: ${chunks} chunks, ${(bytes / 1e6).toFixed(1)} MB in ${((performance.now() - t0) / 1000).toFixed(1)} s; RSS peak ${peak.toFixed(1)} MB (+${(peak - idle).toFixed(1)} over idle, +${(peak - before).toFixed(1)} over the ${before.toFixed(1)} MB before it), samples ${samples.map((x) => x.toFixed(0)).join(" ")}`,
        );
      } else {
        let peak = 0;
        const big = setInterval(() => (peak = Math.max(peak, rssMb(gateway.proc.pid))), 50);
        const r2 = await call("/v1/embeddings", { model: "bench-model", input: "hi" });
        const size = (await r2.arrayBuffer()).byteLength;
        clearInterval(big);
        peak = Math.max(peak, rssMb(gateway.proc.pid));
        console.log(
          `non-stream: ${(size / 1e6).toFixed(1)} MB answer; RSS peak ${peak.toFixed(1)} MB (+${(peak - idle).toFixed(1)} over idle, +${(peak - before).toFixed(1)} over the ${before.toFixed(1)} MB before it)`,
        );
      }
      await Bun.sleep(2000);
    }
  } finally {
    gateway.proc.kill("SIGTERM");
    mock.proc.kill("SIGTERM");
    await Promise.all([gateway.proc.exited, mock.proc.exited]);
  }
}

if (role === "mock")
  runMock(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]), Number(process.argv[6]));
else await main();
