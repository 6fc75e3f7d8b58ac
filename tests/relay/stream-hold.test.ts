// Streams are metered against their hold. Once what a stream has generated reaches what its hold pays and the
// balance cannot pay more, it is cut with an error event in the client's own format (OpenAI's error chunk,
// Claude's `event: error`, Gemini's error object) — the upstream is stopped — and the call is billed for what
// was delivered, at most its hold. A payer who can pay more has the hold extended and the stream goes on. A
// capped stream whose upstream keeps to the cap ends as usual. A client that stops reading is not waited for
// past STREAM_STALL_TIMEOUT: the stream is cut, the upstream stopped, and the call billed for what was sent.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { relayFixture, logsOf, tokenRow, type RelayFixture } from "./fixtures.ts";
import { LONG, startLongUpstream, type LongUpstream } from "./long-upstream.ts";
import { countTokens } from "../../server/relay/tokenizer.ts";

const MODELS = ["long-m", "long-m-ignore", "claude-long-ignore", "gemini-long-ignore"];
const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  stream: true,
  messages: [{ role: "user", content: "write a long story" }],
  ...extra,
});

async function prices(fx: RelayFixture) {
  const each = (v: number) => JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, v])));
  await fx.option("ModelRatio", each(1));
  await fx.option("CompletionRatio", each(1));
}

/** The data of each SSE frame, with its event name. */
function frames(text: string): { event: string | null; data: string }[] {
  return text
    .split("\n\n")
    .filter((f) => f.trim())
    .map((f) => ({
      event: /^event: (.*)$/m.exec(f)?.[1] ?? null,
      data: f
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6))
        .join("\n"),
    }));
}

/** The words (one token each) a streamed answer delivered. */
const words = (text: string) => (text.match(/ hi/g) ?? []).length;

async function waitFor(cond: () => boolean, ms = 5000) {
  for (let i = 0; i < ms / 20 && !cond(); i++) await Bun.sleep(20);
}

for (const kind of storageKinds()) {
  describe(`streams cut at the hold on ${kind}`, () => {
    let fx: RelayFixture;
    let up: LongUpstream;
    beforeAll(async () => {
      fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 20 });
      up = startLongUpstream();
      await prices(fx);
      await fx.channel({ base_url: up.url, models: ["long-m", "long-m-ignore"] });
    });
    afterAll(async () => {
      up.stop();
      await fx.close();
    });

    test("an upstream past the cap: cut with an OpenAI error chunk, the upstream stopped, billed at most the hold and no less than delivered", async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 200 });
      const cancelled = up.cancelled;
      const res = await fx.call("/v1/chat/completions", token.key, chat("long-m-ignore"));
      expect(res.status).toBe(200);
      const text = await res.text();
      const last = frames(text).at(-1)!;
      expect(JSON.parse(last.data).error.code).toBe("insufficient_token_quota");
      expect(text).not.toContain("[DONE]");
      const delivered = words(text);
      expect(delivered).toBeGreaterThan(0);
      expect(delivered).toBeLessThan(200);
      await waitFor(() => up.cancelled > cancelled);
      expect(up.cancelled).toBe(cancelled + 1);
      expect(up.streamedTokens).toBeLessThan(LONG / 2);
      await fx.flush();
      const [log] = await logsOf(fx, user.id);
      expect(log.quota).toBeLessThanOrEqual(200);
      expect(log.completion_tokens).toBeGreaterThanOrEqual(delivered);
      expect(log.quota).toBeGreaterThanOrEqual(delivered);
      const t = await tokenRow(fx, token.id);
      expect(t.remain_quota).toBe(200 - log.quota);
      expect(JSON.parse(log.other).stream_interrupted).toBe(true);
    });

    test("a stream capped to the balance whose upstream keeps to the cap ends as usual, billed its usage", async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 1000 });
      const before = up.seen.length;
      const res = await fx.call("/v1/chat/completions", token.key, chat("long-m", { max_tokens: 50_000 }));
      const text = await res.text();
      expect(text).toContain('"finish_reason":"length"');
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
      const cap = up.seen[before].bound!;
      expect(cap).toBeLessThan(1000);
      expect(words(text)).toBe(cap);
      await fx.flush();
      const [log] = await logsOf(fx, user.id);
      expect(log.quota).toBe(10 + cap);
      expect((await tokenRow(fx, token.id)).remain_quota).toBe(1000 - 10 - cap);
    });

    test("a payer who can pay more: a model answering past its output limit has its hold extended and the stream goes on", async () => {
      await fx.option("ModelOutputLimit", JSON.stringify({ "long-m": 100 }));
      try {
        const user = await fx.user(1_000_000_000);
        const token = await fx.token(user.id, { remain_quota: 1_000_000 });
        const res = await fx.call("/v1/chat/completions", token.key, chat("long-m"));
        const text = await res.text();
        expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
        expect(words(text)).toBe(LONG);
        await fx.flush();
        const [log] = await logsOf(fx, user.id);
        expect(log.quota).toBe(10 + LONG);
        expect((await tokenRow(fx, token.id)).remain_quota).toBe(1_000_000 - 10 - LONG);
      } finally {
        await fx.option("ModelOutputLimit", "{}");
      }
    }, 30_000);
  });
}

describe("the cut speaks the client's format", () => {
  let fx: RelayFixture;
  let up: LongUpstream;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    up = startLongUpstream();
    await prices(fx);
    await fx.channel({ base_url: up.url, models: ["long-m-ignore"] });
    await fx.channel({ type: 14, base_url: up.url, models: ["claude-long-ignore"] });
    await fx.channel({ type: 24, base_url: up.url, models: ["gemini-long-ignore"] });
  });
  afterAll(async () => {
    up.stop();
    await fx.close();
  });

  const prompt = "write a long story";
  const cases: {
    name: string;
    path: string;
    body: unknown;
    check: (last: { event: string | null; data: string }) => void;
  }[] = [
    {
      name: "Claude Messages: an `error` event",
      path: "/v1/messages",
      body: {
        model: "claude-long-ignore",
        max_tokens: 100_000,
        stream: true,
        messages: [{ role: "user", content: prompt }],
      },
      check: (last) => {
        expect(last.event).toBe("error");
        const body = JSON.parse(last.data);
        expect(body.type).toBe("error");
        expect(body.error.message).toContain("balance");
      },
    },
    {
      name: "Gemini: an error object",
      path: "/v1beta/models/gemini-long-ignore:streamGenerateContent?alt=sse",
      body: { contents: [{ role: "user", parts: [{ text: prompt }] }] },
      check: (last) => {
        const body = JSON.parse(last.data);
        expect(body.error.code).toBe(403);
        expect(body.error.status).toBe("PERMISSION_DENIED");
      },
    },
    {
      name: "OpenAI chat on a Claude channel: an error chunk",
      path: "/v1/chat/completions",
      body: chat("claude-long-ignore"),
      check: (last) => expect(JSON.parse(last.data).error.code).toBe("insufficient_token_quota"),
    },
    {
      name: "Responses: an error",
      path: "/v1/responses",
      body: { model: "long-m-ignore", input: prompt, stream: true },
      check: (last) => expect(JSON.parse(last.data).error.code).toBe("insufficient_token_quota"),
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 300 });
      const res = await fx.call(c.path, token.key, c.body);
      expect(res.status).toBe(200);
      const text = await res.text();
      c.check(frames(text).at(-1)!);
      const delivered = words(text);
      expect(delivered).toBeGreaterThan(0);
      await fx.flush();
      const [log] = await logsOf(fx, user.id);
      expect(log.quota).toBeLessThanOrEqual(300);
      expect(log.quota).toBeGreaterThanOrEqual(delivered);
      expect((await tokenRow(fx, token.id)).remain_quota).toBe(300 - log.quota);
    });
  }
});

describe("a client that stops reading", () => {
  const CHUNKS = 8000;
  const CONTENT = " ~".repeat(8 * 1024);
  const FRAME = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "paused-m", choices: [{ index: 0, delta: { content: CONTENT }, finish_reason: null }] })}\n\n`;
  let fx: RelayFixture;
  let upstream: ReturnType<typeof Bun.serve>;
  let gateway: ReturnType<typeof Bun.serve>;
  let written = 0;
  let cancelled = 0;
  beforeAll(async () => {
    fx = await relayFixture("sqlite", {}, { streamStallMs: 500 });
    upstream = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        await req.text();
        let gone = false;
        return new Response(
          new ReadableStream({
            type: "direct",
            cancel() {
              gone = true;
              cancelled++;
            },
            async pull(controller: any) {
              for (let i = 0; i < CHUNKS && !gone; i++) {
                const sent = controller.write(FRAME);
                written += FRAME.length;
                if (typeof sent !== "number") await sent;
                if (i % 16 === 15) await Bun.sleep(0);
              }
              controller.close();
            },
          } as any),
          { headers: { "content-type": "text/event-stream" } },
        );
      },
    });
    await fx.channel({ base_url: `http://127.0.0.1:${upstream.port}`, models: ["paused-m"] });
    await fx.option("ModelRatio", JSON.stringify({ "paused-m": 1 }));
    gateway = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fx.ctx.app.handle(req) });
  });
  afterAll(async () => {
    gateway.stop(true);
    upstream.stop(true);
    await fx.close();
  });

  test("is cut after the stall bound while still connected: the upstream stopped, billed for exactly what it was sent", async () => {
    const user = await fx.user(1_000_000_000);
    const token = await fx.token(user.id, { unlimited_quota: true });
    const body = JSON.stringify({ model: "paused-m", stream: true, messages: [{ role: "user", content: "hi" }] });
    let tildes = 0;
    let tail = "";
    let ended: () => void;
    const end = new Promise<void>((r) => (ended = r));
    const socket = await Bun.connect({
      hostname: "127.0.0.1",
      port: gateway.port!,
      socket: {
        data(_s, d) {
          for (let i = 0; i < d.length; i++) if (d[i] === 0x7e) tildes++;
          tail = (tail + d.subarray(Math.max(0, d.length - 64)).toString("latin1")).slice(-64);
          if (tail.endsWith("0\r\n\r\n")) ended();
        },
        close() {
          ended();
        },
      },
    });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${gateway.port}\r\nAuthorization: Bearer ${token.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    socket.pause();
    // The gateway stops the upstream by itself, the client still connected and not reading.
    await waitFor(() => cancelled === 1, 15_000);
    expect(cancelled).toBe(1);
    const atCut = written;
    expect(atCut).toBeLessThan(CHUNKS * FRAME.length * 0.7);
    await Bun.sleep(200);
    expect(written).toBe(atCut);
    // Reading again, the client gets what the gateway had sent before it cut, and the end of the answer.
    socket.resume();
    await end;
    socket.end();
    expect(tildes).toBeGreaterThan(0);
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(log.completion_tokens).toBe(await countTokens(" ~".repeat(tildes)));
    expect(JSON.parse(log.other).stream_interrupted).toBe(true);
  }, 30_000);
});
