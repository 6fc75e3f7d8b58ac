// A client that reads a stream slower than the upstream produces it (a paused reader, a slow link) holds the
// relay back: the gateway stops reading the upstream once its socket and sink are full, so the answer waits
// in the upstream instead of piling up in the gateway's memory; once the client reads again, it gets all of
// it and the call is billed as usual; one that goes away instead stops the upstream and pays for what it got.
//
// How much a paused connection holds is not fixed: Linux autotunes a socket's receive buffer up to
// net.ipv4.tcp_rmem's maximum (32 MB on the CI machine), and a relayed stream crosses two receiving sockets.
// So the tests do not bound the held bytes by a guess; they wait until the upstream stops writing and check
// that it stopped well before the end of a stream larger than all those buffers together could hold.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { relayFixture, logsOf, type RelayFixture } from "./fixtures.ts";

const CHUNKS = 8000;
/** "~" appears nowhere else in a relayed answer (ids, headers, chunk sizes), so counting it counts the content. */
const CONTENT = "~".repeat(16 * 1024);
const TILDE = 0x7e;
const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "slow-m", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
const FRAME = chunk(CONTENT);
const STREAM_BYTES = CHUNKS * FRAME.length;

let fx: RelayFixture;
let upstream: ReturnType<typeof Bun.serve>;
let gateway: ReturnType<typeof Bun.serve>;
/** Bytes the upstream has handed to its socket (it waits whenever its own sink is full). */
let written = 0;
/** Upstream streams the gateway broke off (a closed connection does not fail a write: the stream has to be told). */
let cancelled = 0;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  upstream = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      await req.text();
      let gone = false;
      const stream = new ReadableStream({
        cancel() {
          gone = true;
          cancelled++;
        },
        type: "direct",
        async pull(controller: any) {
          for (let i = 0; i < CHUNKS; i++) {
            if (gone) return;
            const sent = controller.write(FRAME);
            written += FRAME.length;
            if (typeof sent !== "number") await sent;
            if (i % 16 === 15) await Bun.sleep(0);
          }
          controller.write(
            `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "slow-m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 } })}\n\ndata: [DONE]\n\n`,
          );
          controller.close();
        },
      } as any);
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    },
  });
  await fx.channel({ base_url: `http://127.0.0.1:${upstream.port}`, models: ["slow-m"] });
  await fx.option("ModelRatio", JSON.stringify({ "slow-m": 1 }));
  gateway = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
});

afterAll(async () => {
  gateway.stop(true);
  upstream.stop(true);
  await fx.close();
});

/** Waits until the upstream has started and then written nothing new for 600 ms (its sink is full); answers how much it wrote since `from`. */
async function upstreamHeld(from: number): Promise<number> {
  let last = -1;
  let still = 0;
  for (let i = 0; i < 200 && still < 6; i++) {
    await Bun.sleep(100);
    still = written > from && written === last ? still + 1 : 0;
    last = written;
  }
  return written - from;
}

test("a paused client holds the upstream back; once it reads, the whole stream arrives and is billed", async () => {
  const user = await fx.user(100_000_000);
  const token = await fx.token(user.id, { unlimited_quota: true });
  const body = JSON.stringify({ model: "slow-m", stream: true, messages: [{ role: "user", content: "hi" }] });
  let head = "";
  let tail = "";
  let content = 0;
  let ended: () => void;
  const end = new Promise<void>((r) => (ended = r));
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port: gateway.port!,
    socket: {
      data(_s, d) {
        if (head.length < 4096) head += d.subarray(0, 4096).toString("latin1");
        for (let i = 0; i < d.length; i++) if (d[i] === TILDE) content++;
        tail = (tail + d.subarray(Math.max(0, d.length - 4096)).toString("latin1")).slice(-4096);
        if (tail.endsWith("0\r\n\r\n")) ended();
      },
    },
  });
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${gateway.port}\r\nAuthorization: Bearer ${token.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  socket.pause();
  const held = await upstreamHeld(0);
  expect(head).toBe("");
  // Without backpressure the gateway reads the whole stream into its memory within a few seconds.
  expect(held).toBeGreaterThan(0);
  expect(held).toBeLessThan(STREAM_BYTES * 0.7);
  socket.resume();
  await end;
  socket.end();
  expect(head.startsWith("HTTP/1.1 200")).toBe(true);
  expect(content).toBe(CHUNKS * CONTENT.length);
  expect(tail).toContain("data: [DONE]");
  await fx.flush();
  const [log] = await logsOf(fx, user.id);
  expect([log.prompt_tokens, log.completion_tokens]).toEqual([5, 7]);
}, 30_000);

test("a paused client that goes away: the upstream is stopped and the call is billed and logged", async () => {
  const user = await fx.user(100_000_000);
  const token = await fx.token(user.id, { unlimited_quota: true });
  const body = JSON.stringify({ model: "slow-m", stream: true, messages: [{ role: "user", content: "hi" }] });
  const startedAt = written;
  const socket = await Bun.connect({ hostname: "127.0.0.1", port: gateway.port!, socket: { data() {} } });
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${gateway.port}\r\nAuthorization: Bearer ${token.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  socket.pause();
  const held = await upstreamHeld(startedAt);
  expect(held).toBeGreaterThan(0);
  expect(held).toBeLessThan(STREAM_BYTES * 0.7);
  socket.terminate();
  // The gateway notices, stops reading the upstream (whose writes then stop) and settles what was generated.
  let logs: Awaited<ReturnType<typeof logsOf>> = [];
  for (let i = 0; i < 100 && logs.length === 0; i++) {
    await Bun.sleep(50);
    await fx.flush();
    logs = await logsOf(fx, user.id);
  }
  expect(logs.length).toBe(1);
  expect(logs[0].completion_tokens).toBeGreaterThan(0);
  for (let i = 0; i < 40 && cancelled === 0; i++) await Bun.sleep(25);
  expect(cancelled).toBe(1);
  // Once cancelled, the upstream writes nothing more.
  const atCancel = written;
  await Bun.sleep(300);
  expect(written).toBe(atCancel);
  expect(written - startedAt).toBeLessThan(STREAM_BYTES * 0.7);
}, 30_000);
