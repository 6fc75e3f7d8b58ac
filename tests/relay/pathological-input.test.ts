// No input can freeze the gateway. A live server (random port) gets pathological bodies on every relay
// route from one client: 100 KB and 3 MB of one repeated character, JSON nested 100,000 deep, an array of
// a million values, and a hundred thousand messages. Meanwhile another client keeps calling
// GET /api/status and a small chat completion; every one of its calls must answer while the attack goes on (a
// loop frozen by a quadratic step, as a 30 KB count_tokens call once did for minutes, runs the test out of time).
// How long the victim's calls took is printed, not asserted: on a loaded machine that is the machine's figure.
// The upstream never reports usage, so the gateway counts every prompt and answer itself.
// Also here: the per-route byte caps (413 on Content-Length and on chunked bodies) and the JSON shape
// check (400), answered in each API's own error format.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, ratios, logsOf, type RelayFixture } from "./fixtures.ts";
import type { Session } from "../helpers/app.ts";
import { jsonShapeError, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../../server/relay/body.ts";

const MODEL = "patho-nousage";
const VICTIM = "victim-nousage";
const KB = 1000;
const MiB = 1024 * 1024;

let fx: RelayFixture;
let server: { stop(force?: boolean): unknown; server: { port?: number } | null };
let base = "";
let key = "";
let user: Session;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  await ratios(fx, [MODEL, VICTIM], 1, 1);
  await fx.channel({ base_url: fx.mock.url, models: [MODEL, VICTIM] });
  user = await fx.user(1e12);
  key = (await fx.token(user.id, { unlimited_quota: true })).key;
  // The sensitive-word scan runs over every prompt too.
  await fx.option("SensitiveWords", "forbidden thing\nbadword\n违禁词");
  await fx.option("CheckSensitiveEnabled", "true");
  await fx.option("CheckSensitiveOnPromptEnabled", "true");
  server = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" }) as any;
  base = `http://127.0.0.1:${server.server!.port}`;
});

afterAll(async () => {
  await server?.stop(true);
  await fx?.close();
});

/** A JSON text with `inner` (raw JSON) at the place each route reads its prompt from. */
type Route = { path: string; limit: number; body(inner: string): string; session?: boolean };
const wrap = (obj: Record<string, unknown>, slot: string) => (inner: string) =>
  JSON.stringify(obj).replace(`"${slot}"`, inner);

const ROUTES: Route[] = [
  {
    path: "/v1/chat/completions",
    limit: 32 * MiB,
    body: wrap({ model: MODEL, messages: [{ role: "user", content: "$" }] }, "$"),
  },
  {
    path: "/v1/chat/completions",
    limit: 32 * MiB,
    body: wrap({ model: MODEL, stream: true, messages: [{ role: "user", content: "$" }] }, "$"),
  },
  { path: "/v1/completions", limit: 8 * MiB, body: wrap({ model: MODEL, prompt: "$" }, "$") },
  { path: "/v1/embeddings", limit: 8 * MiB, body: wrap({ model: MODEL, input: "$" }, "$") },
  { path: "/v1/moderations", limit: 32 * MiB, body: wrap({ model: MODEL, input: "$" }, "$") },
  { path: "/v1/images/generations", limit: 1 * MiB, body: wrap({ model: MODEL, prompt: "$" }, "$") },
  { path: "/v1/audio/speech", limit: 1 * MiB, body: wrap({ model: MODEL, input: "$", voice: "alloy" }, "$") },
  { path: "/v1/rerank", limit: 8 * MiB, body: wrap({ model: MODEL, query: "$", documents: ["a", "b"] }, "$") },
  { path: "/v1/responses", limit: 32 * MiB, body: wrap({ model: MODEL, input: "$" }, "$") },
  {
    path: "/v1/messages",
    limit: 32 * MiB,
    body: wrap({ model: MODEL, max_tokens: 16, messages: [{ role: "user", content: "$" }] }, "$"),
  },
  {
    path: "/v1/messages",
    limit: 32 * MiB,
    body: wrap({ model: MODEL, max_tokens: 16, stream: true, messages: [{ role: "user", content: "$" }] }, "$"),
  },
  {
    path: "/v1/messages/count_tokens",
    limit: 32 * MiB,
    body: wrap({ model: MODEL, messages: [{ role: "user", content: "$" }] }, "$"),
  },
  {
    path: `/v1beta/models/${MODEL}:generateContent`,
    limit: 32 * MiB,
    body: wrap({ contents: [{ role: "user", parts: [{ text: "$" }] }] }, "$"),
  },
  {
    path: `/v1beta/models/${MODEL}:streamGenerateContent`,
    limit: 32 * MiB,
    body: wrap({ contents: [{ role: "user", parts: [{ text: "$" }] }] }, "$"),
  },
  {
    path: `/v1beta/models/${MODEL}:countTokens`,
    limit: 32 * MiB,
    body: wrap({ contents: [{ role: "user", parts: [{ text: "$" }] }] }, "$"),
  },
  {
    path: "/pg/chat/completions",
    limit: 32 * MiB,
    session: true,
    body: wrap({ model: MODEL, messages: [{ role: "user", content: "$" }] }, "$"),
  },
];

/** Payloads as raw JSON for the prompt's place, and whether the shape check refuses them. */
const PAYLOADS: { name: string; json: string; refused: boolean }[] = [
  { name: "100 KB of one character", json: JSON.stringify("a".repeat(100 * KB)), refused: false },
  { name: "3 MB of one character", json: JSON.stringify("a".repeat(3 * MiB)), refused: false },
  { name: "3 MB of one CJK character", json: JSON.stringify("中".repeat(MiB)), refused: false },
  { name: "JSON nested 100,000 deep", json: "[".repeat(100_000) + "]".repeat(100_000), refused: true },
  { name: "an array of a million values", json: "[" + "1,".repeat(999_999) + "1]", refused: true },
];

function send(route: Route, body: string, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (route.session) Object.assign(headers, user.headers);
  else headers.authorization = `Bearer ${key}`;
  return fetch(base + route.path, { method: "POST", headers, body, signal });
}

describe("one client's pathological input does not hold up the others", () => {
  test("every relay route × every payload answers 200, 400 or 413 while GET /api/status and small chats keep answering", async () => {
    const jobs: { route: Route; payload: (typeof PAYLOADS)[number] }[] = [];
    for (const payload of PAYLOADS) for (const route of ROUTES) jobs.push({ route, payload });
    const outcomes: string[] = [];
    let attacking = true;

    // Two attackers share the list.
    const attacker = async () => {
      for (let job = jobs.shift(); job; job = jobs.shift()) {
        const { route, payload } = job;
        const body = route.body(payload.json);
        const expected = Buffer.byteLength(body) > route.limit ? 413 : payload.refused ? 400 : 200;
        const res = await send(route, body);
        await res.arrayBuffer();
        if (res.status !== expected)
          outcomes.push(`${route.path} with ${payload.name}: ${res.status}, expected ${expected}`);
        fx.mock.seen.length = 0;
      }
    };

    const latencies: number[] = [];
    const failures: string[] = [];
    const victim = async () => {
      const chat = JSON.stringify({ model: VICTIM, messages: [{ role: "user", content: "Hello there" }] });
      while (attacking) {
        let t = performance.now();
        const status = await fetch(base + "/api/status");
        await status.arrayBuffer();
        latencies.push(performance.now() - t);
        if (status.status !== 200) failures.push(`status ${status.status}`);
        t = performance.now();
        const res = await fetch(base + "/v1/chat/completions", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: chat,
        });
        const answer: any = await res.json();
        latencies.push(performance.now() - t);
        if (res.status !== 200 || answer.choices?.[0]?.message?.content !== "Hello world!")
          failures.push(`chat ${res.status}`);
        await Bun.sleep(5);
      }
    };

    const victimDone = victim();
    await Promise.all([attacker(), attacker()]);
    attacking = false;
    await victimDone;

    expect(outcomes).toEqual([]);
    expect(failures).toEqual([]);
    latencies.sort((a, b) => a - b);
    const median = latencies[Math.floor(latencies.length / 2)]!;
    const worst = latencies[latencies.length - 1]!;
    console.log(`victim: ${latencies.length} calls, median ${median.toFixed(1)} ms, worst ${worst.toFixed(1)} ms`);
    // The victim kept calling all through the attack, and every call answered (failures is empty above).
    expect(latencies.length).toBeGreaterThan(20);

    // The calls that went through were billed from the gateway's own counts (the upstream reports none).
    await fx.flush();
    const logs = await logsOf(fx, user.id);
    const big = logs.filter((l) => l.model_name === MODEL && l.prompt_tokens > 100_000);
    expect(big.length).toBeGreaterThan(0);
    // 80 large-body calls in one process: a loaded machine running other test files beside it needs the time. A
    // frozen loop would need far more.
  }, 180_000);
});

describe("body caps per route", () => {
  test("a body over its route's cap is refused with 413 in the API's own format before it is read", async () => {
    const big = JSON.stringify({ model: MODEL, prompt: "a".repeat(2 * MiB) });
    const images = await send(ROUTES.find((r) => r.path === "/v1/images/generations")!, big);
    expect(images.status).toBe(413);
    expect(((await images.json()) as any).error.message).toContain("request body too large");
    const embeddings = await send(
      ROUTES.find((r) => r.path === "/v1/embeddings")!,
      JSON.stringify({ model: MODEL, input: "a".repeat(9 * MiB) }),
    );
    expect(embeddings.status).toBe(413);
  });

  test("a chunked body without Content-Length is cut off once it passes the cap", async () => {
    let sent = 0;
    const chunk = new TextEncoder().encode("a".repeat(64 * 1024));
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(`{"model":"${MODEL}","input":"`));
      },
      pull(c) {
        // 4 MiB at most: far past the 1 MiB cap of /v1/audio/speech.
        if (sent >= 4 * MiB) return c.close();
        sent += chunk.length;
        c.enqueue(chunk);
      },
    });
    const res = await fx.ctx.app.handle(
      new Request("http://localhost/v1/audio/speech", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: stream,
        duplex: "half",
      } as RequestInit),
    );
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(4 * MiB);
  });

  test("deep nesting and huge arrays are 400 in OpenAI, Claude and Gemini formats, and reach no upstream", async () => {
    fx.mock.seen.length = 0;
    const deep = "[".repeat(MAX_JSON_DEPTH + 1) + "]".repeat(MAX_JSON_DEPTH + 1);
    const openai = await send(ROUTES[0]!, ROUTES[0]!.body(deep));
    expect(openai.status).toBe(400);
    expect(((await openai.json()) as any).error.message).toContain(`deeper than ${MAX_JSON_DEPTH}`);
    const claude = await send(ROUTES.find((r) => r.path === "/v1/messages")!, ROUTES[0]!.body(deep));
    expect(claude.status).toBe(400);
    expect((await claude.json()) as any).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    const gemini = await send(
      ROUTES.find((r) => r.path.endsWith(":generateContent"))!,
      JSON.stringify({
        contents: [{ role: "user", parts: [{ text: "x" }] }],
        extra: JSON.parse("[" + "1,".repeat(MAX_JSON_VALUES) + "1]"),
      }),
    );
    expect(gemini.status).toBe(400);
    expect(((await gemini.json()) as any).error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(fx.mock.seen).toEqual([]);
    // A hundred levels (the envelope takes four more) is within the limit.
    const ok = await send(ROUTES[0]!, ROUTES[0]!.body("[".repeat(100) + '"x"' + "]".repeat(100)));
    expect(ok.status).toBe(200);
  });
});

describe("the JSON shape check", () => {
  test("counts depth and values outside strings only, and leaves malformed text to JSON.parse", () => {
    expect(jsonShapeError('{"a":"[[[[[[[[,,,,,]]]]"}', 3, 3)).toBeNull();
    expect(jsonShapeError('{"a":"\\"[[[[", "b":[[[]]]}', 3, 10)).toBe("the request body nests deeper than 3 levels");
    expect(jsonShapeError('{"a":"x\\\\"}', 1, 10)).toBeNull();
    expect(jsonShapeError("[1,2,3,4]", 5, 3)).toBe("the request body holds more than 3 JSON values");
    expect(jsonShapeError('{"a":"never closed', 5, 5)).toBeNull();
  });

  test("a text with no more brackets than the depth cap and no longer than the value cap passes without the full pass; one more of either is checked", () => {
    expect(jsonShapeError("[[[1]]]", 3, 100)).toBeNull();
    expect(jsonShapeError("[[[[1]]]]", 3, 100)).toBe("the request body nests deeper than 3 levels");
    // Brackets inside strings count towards the quick test only: the full pass then finds the text fine.
    expect(jsonShapeError('{"a":"[[[[[["}', 3, 100)).toBeNull();
    expect(jsonShapeError("[1,2]", 5, 5)).toBeNull();
    expect(jsonShapeError("[1,2,3]", 5, 5)).toBeNull();
    expect(jsonShapeError("[1,2,3,4,5,6]", 5, 5)).toBe("the request body holds more than 5 JSON values");
  });
});

describe("linear conversions of huge arrays", () => {
  test("Gemini function responses pair with the oldest open call of their name, in one pass over 20,000 of each", () => {
    const { geminiRequestToOpenAI } = require("../../server/relay/formats/gemini/client.ts");
    const n = 20_000;
    const calls = Array.from({ length: n }, (_, i) => ({ functionCall: { name: `f${i % 3}`, args: { i } } }));
    const responses = Array.from({ length: n }, (_, i) => ({
      functionResponse: { name: `f${(n - 1 - i) % 3}`, response: { i } },
    }));
    const out = geminiRequestToOpenAI(
      {
        contents: [
          { role: "model", parts: calls },
          { role: "user", parts: responses },
        ],
      },
      "m",
      false,
    );
    const ids = out.messages[0].tool_calls.map((c: any) => c.id);
    const byName = new Map<string, string[]>();
    out.messages[0].tool_calls.forEach((c: any) =>
      byName.set(c.function.name, [...(byName.get(c.function.name) ?? []), c.id]),
    );
    const tools = out.messages.slice(1);
    expect(tools.length).toBe(n);
    // Each name's responses take that name's calls in order.
    const taken = new Map<string, number>();
    for (const t of tools) {
      const k = taken.get(t.name) ?? 0;
      expect(t.tool_call_id).toBe(byName.get(t.name)![k]);
      taken.set(t.name, k + 1);
    }
    expect(new Set(tools.map((t: any) => t.tool_call_id)).size).toBe(ids.length);
  });
});
