// Pass-through answers larger than 1 MiB are streamed through as they arrive instead of being held whole:
// the client receives the upstream's bytes unchanged, the call is billed from the usage at the answer's
// end, and an answer that breaks off or does not end like JSON is not billed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, logsOf, userRow, type RelayFixture } from "./fixtures.ts";

let fx: RelayFixture;
let upstream: ReturnType<typeof Bun.serve>;

/** An embeddings answer of about `mb` megabytes with usage last, as OpenAI sends it. */
function bigAnswer(mb: number): string {
  const vector = Array.from({ length: 1536 }, (_, i) => ((i % 97) / 97).toFixed(6)).join(",");
  const per = vector.length + 60;
  const n = Math.ceil((mb * 1024 * 1024) / per);
  const data = Array.from({ length: n }, (_, i) => `{"object":"embedding","index":${i},"embedding":[${vector}]}`).join(
    ",",
  );
  return `{"object":"list","model":"big-embed","data":[${data}],"usage":{"prompt_tokens":321,"total_tokens":321}}`;
}

const FIVE = bigAnswer(5);
const HALF = bigAnswer(0.5);
/** The same answer with its usage first: not in the tail. */
const HALF_USAGE_FIRST = `{"usage":{"prompt_tokens":123,"total_tokens":123},${HALF.slice(1, HALF.lastIndexOf(',"usage"'))}}`;

beforeAll(async () => {
  upstream = Bun.serve({
    port: 0,
    async fetch(req) {
      const body: any = await req.json();
      const enc = new TextEncoder().encode(FIVE);
      if (body.model === "big-sized") return new Response(FIVE, { headers: { "content-type": "application/json" } });
      if (body.model === "mid-sized") return new Response(HALF, { headers: { "content-type": "application/json" } });
      if (body.model === "mid-usage-first")
        return new Response(HALF_USAGE_FIRST, { headers: { "content-type": "application/json" } });
      if (body.model === "mid-truncated")
        return new Response(HALF.slice(0, -1), { headers: { "content-type": "application/json" } });
      // No Content-Length: chunked, and sometimes broken.
      return new Response(
        new ReadableStream({
          async start(c) {
            const step = 256 * 1024;
            for (let i = 0; i < enc.length; i += step) {
              if ((body.model === "big-cut" && i > 8 * step) || (body.model === "small-cut" && i > step)) {
                c.error(new Error("reset"));
                return;
              }
              c.enqueue(enc.subarray(i, Math.min(enc.length, i + step)));
              await Bun.sleep(1);
            }
            if (body.model === "big-trailing") c.enqueue(new TextEncoder().encode(',"extra":'));
            c.close();
          },
        }),
        { headers: { "content-type": "application/json" } },
      );
    },
  });
  fx = await relayFixture("sqlite");
  const models = [
    "big-sized",
    "big-chunked",
    "big-cut",
    "big-trailing",
    "small-cut",
    "mid-sized",
    "mid-usage-first",
    "mid-truncated",
  ];
  await fx.channel({ base_url: `http://127.0.0.1:${upstream.port}`, models });
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
  await fx.option("LogErrorEnabled", "true");
});

afterAll(async () => {
  upstream.stop(true);
  await fx.close();
});

async function call(model: string) {
  const user = await fx.user(10_000_000);
  const token = await fx.token(user.id, { remain_quota: 10_000_000 });
  const res = await fx.call("/v1/embeddings", token.key, { model, input: "hello" });
  const text = await res.text().catch(() => "");
  await fx.flush();
  return { res, text, user, logs: await logsOf(fx, user.id) };
}

describe("a pass-through answer over 1 MiB", () => {
  for (const model of ["big-sized", "big-chunked"])
    test(`${model}: arrives byte for byte and is billed from the usage at its end`, async () => {
      const { res, text, user, logs } = await call(model);
      expect(res.status).toBe(200);
      expect(text.length).toBe(FIVE.length);
      expect(text === FIVE).toBe(true);
      const consume = logs.filter((l) => l.type === 2);
      expect(consume).toHaveLength(1);
      expect(consume[0].prompt_tokens).toBe(321);
      expect(consume[0].quota).toBe(321);
      expect((await userRow(fx, user.id)).quota).toBe(10_000_000 - 321);
    });

  for (const model of ["big-cut", "big-trailing"])
    test(`${model}: not billed, logged as an error`, async () => {
      const { user, logs } = await call(model);
      expect(logs.filter((l) => l.type === 2)).toHaveLength(0);
      expect(logs.some((l) => l.type === 5)).toBe(true);
      expect((await userRow(fx, user.id)).quota).toBe(10_000_000);
    });
});

// Between 64 KiB and 1 MiB an answer is read whole, but parsing it all to find its usage held the event loop
// ~1.7 ms for 16 embeddings (500 KB of numbers, 2.7 ms at 30): the usage comes from its tail instead.
describe("a pass-through answer between 64 KiB and 1 MiB", () => {
  const parsedLengths: number[] = [];
  const parse = JSON.parse;
  const spying =
    <T>(run: () => Promise<T>) =>
    async () => {
      parsedLengths.length = 0;
      JSON.parse = ((text: string, reviver?: any) => (
        parsedLengths.push(String(text).length), parse(text, reviver)
      )) as typeof JSON.parse;
      try {
        return await run();
      } finally {
        JSON.parse = parse;
      }
    };

  test(
    "with its usage last (as OpenAI sends it): byte for byte, billed from the usage, never parsed whole",
    spying(async () => {
      const { res, text, user, logs } = await call("mid-sized");
      expect(res.status).toBe(200);
      expect(text === HALF).toBe(true);
      expect(logs.filter((l) => l.type === 2).map((l) => [l.prompt_tokens, l.quota])).toEqual([[321, 321]]);
      expect((await userRow(fx, user.id)).quota).toBe(10_000_000 - 321);
      expect(Math.max(...parsedLengths)).toBeLessThan(64 * 1024);
    }),
  );

  test("with its usage first: parsed whole, billed from that usage", async () => {
    const { res, text, logs } = await call("mid-usage-first");
    expect(res.status).toBe(200);
    expect(text === HALF_USAGE_FIRST).toBe(true);
    expect(logs.filter((l) => l.type === 2).map((l) => l.prompt_tokens)).toEqual([123]);
  });

  test("cut short: a 502, not billed", async () => {
    const { res, user, logs } = await call("mid-truncated");
    expect(res.status).toBe(502);
    expect(logs.map((l) => l.type)).toEqual([5]);
    expect((await userRow(fx, user.id)).quota).toBe(10_000_000);
  });
});

test("an answer that breaks off before 1 MiB is a 502, not billed, logged as an error", async () => {
  const user = await fx.user(10_000_000);
  const token = await fx.token(user.id, { remain_quota: 10_000_000 });
  const res = await fx.call("/v1/embeddings", token.key, { model: "small-cut", input: "hello" });
  expect(res.status).toBe(502);
  await fx.flush();
  const logs = await logsOf(fx, user.id);
  expect(logs.map((l) => l.type)).toEqual([5]);
  expect((await userRow(fx, user.id)).quota).toBe(10_000_000);
});

// The gateway gives each chunk's memory back once the client's connection has taken it; a client that reads
// slowly (the socket pushing back) must still get every byte as sent.
test("a slow client over a real socket receives a large answer byte for byte", async () => {
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  try {
    for (const model of ["big-sized", "big-chunked"]) {
      const user = await fx.user(10_000_000);
      const token = await fx.token(user.id, { remain_quota: 10_000_000 });
      const res = await fetch(`http://127.0.0.1:${app.server!.port}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${token.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model, input: "hello" }),
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const parts: Uint8Array[] = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parts.push(value.slice());
        await Bun.sleep(4);
      }
      const text = Buffer.concat(parts).toString("utf8");
      expect(text.length).toBe(FIVE.length);
      expect(text === FIVE).toBe(true);
      await fx.flush();
      expect((await userRow(fx, user.id)).quota).toBe(10_000_000 - 321);
    }
  } finally {
    await app.stop(true);
  }
}, 30_000);

// With the response cache recording the answer, its chunks are kept for the cache entry, not given back.
test("a large answer the response cache records over a real socket is stored and replayed whole", async () => {
  await fx.option("ResponseCacheEnabled", "true");
  await fx.option("ResponseCacheMaxEntryBytes", String(8 * 1024 * 1024));
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
  try {
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id, { remain_quota: 10_000_000 });
    const send = () =>
      fetch(`http://127.0.0.1:${app.server!.port}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${token.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "big-chunked", input: "cache me" }),
      });
    const first = await send();
    expect(first.headers.get("x-switchyard-cache")).toBe("MISS");
    expect((await first.text()) === FIVE).toBe(true);
    await fx.flush();
    const second = await send();
    expect(second.headers.get("x-switchyard-cache")).toBe("HIT");
    expect((await second.text()) === FIVE).toBe(true);
  } finally {
    await app.stop(true);
    await fx.option("ResponseCacheEnabled", "false");
  }
}, 30_000);
