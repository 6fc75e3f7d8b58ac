// Realtime sessions and per-token limits: a session is one request (rpm) and holds a slot until it closes; each
// response is spent from the budget as it is billed; a session over a limit is refused at the upgrade with 429
// and Retry-After.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { relayFixture, tokenRow, type RelayFixture } from "./fixtures.ts";
import { startRealtimeUpstream, type RealtimeMock } from "../mocks/realtime-upstream.ts";
import { setLimits } from "./token-limits-fixtures.ts";
import { limitsRuntime } from "../../server/modules/token/limits.ts";

let fx: RelayFixture;
let up: RealtimeMock;
let port = 0;
/** RT_USAGE at ratio 1, completion 2, audio 8 / audio completion 2 (see tests/compat/realtime.test.ts). */
const RT_QUOTA = 20 + 20 + 80 * 8 + 30 * 2 + 120 * 8 * 2;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  up = startRealtimeUpstream();
  for (const [k, v] of [
    ["ModelRatio", 1],
    ["CompletionRatio", 2],
    ["AudioRatio", 8],
    ["AudioCompletionRatio", 2],
  ] as const) {
    await fx.option(k, JSON.stringify({ "rt-lim": v }));
  }
  await fx.channel({
    type: 1,
    key: "sk-rt-channel",
    base_url: up.url,
    models: ["rt-lim"],
    model_mapping: { "rt-lim": "gpt-realtime" },
  });
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" } as any);
  port = app.server!.port!;
});
afterAll(async () => {
  await fx.ctx.app.stop(true);
  up.stop();
  await fx.close();
});

function open(key: string) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/realtime?model=rt-lim`, {
    protocols: ["realtime", `openai-insecure-api-key.${key}`],
  } as any);
  const seen = (type: string) =>
    new Promise<any>((resolve) =>
      ws.addEventListener("message", (m) => {
        const ev = JSON.parse(String(m.data));
        if (ev.type === type) resolve(ev);
      }),
    );
  return { ws, seen };
}

/** The status line and headers of a websocket upgrade the gateway refuses, read off a raw socket. */
function refusedUpgrade(key: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, "127.0.0.1", () => {
      sock.write(
        `GET /v1/realtime?model=rt-lim HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
          + `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      );
    });
    let text = "";
    sock.on("data", (d) => {
      text += d.toString();
      const end = text.indexOf("\r\n\r\n");
      if (end === -1) return;
      const len = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0);
      if (text.length - end - 4 < len) return;
      sock.destroy();
      resolve({ status: Number(text.split(" ")[1]), headers: text.slice(0, end), body: text.slice(end + 4) });
    });
    sock.on("error", reject);
  });
}

test("a session counts one request, holds its slot until it closes, and spends each response from the budget", async () => {
  const user = await fx.user(100_000_000);
  const t = await fx.token(user.id, { unlimited_quota: true });
  await setLimits(fx, t.id, { rpm_limit: 2, concurrency_limit: 1, budget_quota: 100_000, budget_period: "daily" });
  const at = Date.now();
  limitsRuntime(fx.ctx.deps).clock = () => at; // one minute for the whole test
  const { ws, seen } = open(t.key);
  await seen("session.created");
  // The slot is taken: a second session is refused at the upgrade, in OpenAI's format.
  const second = await refusedUpgrade(t.key);
  expect(second.status).toBe(429);
  expect(second.headers).toMatch(/retry-after: 1\r?$/im);
  expect(JSON.parse(second.body).error.code).toBe("rate_limit_exceeded");
  ws.send(JSON.stringify({ type: "response.create" }));
  await seen("response.done");
  ws.send(JSON.stringify({ type: "response.create" }));
  await seen("response.done");
  ws.close(1000);
  for (let i = 0; i < 100 && limitsRuntime(fx.ctx.deps).live.size > 0; i++) await Bun.sleep(10);
  expect(limitsRuntime(fx.ctx.deps).live.size).toBe(0);
  await fx.flush();
  expect(Number((await tokenRow(fx, t.id)).budget_used)).toBe(2 * RT_QUOTA);
  // The second session is this minute's second request (the refused upgrade took nothing); a third is refused.
  const again = open(t.key);
  await again.seen("session.created");
  again.ws.close(1000);
  const third = await refusedUpgrade(t.key);
  expect(third.status).toBe(429);
  expect(JSON.parse(third.body).error.message).toContain("2 requests per minute");
});

test("each next response is held from the budget like the first: a session whose next response does not fit is told and closed", async () => {
  const user = await fx.user(100_000_000);
  const t = await fx.token(user.id, { unlimited_quota: true });
  // A response holds 1024 audio output tokens (16384 quota) and costs RT_QUOTA (2660): the third does not fit 20000.
  await setLimits(fx, t.id, { budget_quota: 20_000, budget_period: "daily" });
  const { ws, seen } = open(t.key);
  await seen("session.created");
  const closed = new Promise<number>((resolve) => ws.addEventListener("close", (e) => resolve(e.code)));
  const error = seen("error");
  ws.send(JSON.stringify({ type: "response.create" }));
  await seen("response.done");
  ws.send(JSON.stringify({ type: "response.create" }));
  await seen("response.done");
  const ev = await error;
  expect(ev.error.code).toBe("budget_exceeded");
  expect(ev.error.message).toContain("daily budget");
  expect(await closed).toBe(1008);
  for (let i = 0; i < 100 && limitsRuntime(fx.ctx.deps).live.size > 0; i++) await Bun.sleep(10);
  await Bun.sleep(50);
  await fx.flush();
  expect(Number((await tokenRow(fx, t.id)).budget_used)).toBe(2 * RT_QUOTA);
});
