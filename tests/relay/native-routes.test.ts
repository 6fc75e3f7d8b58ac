// The relay's JSON routes (OpenAI's, Claude's /v1/messages and Gemini's) are served from the server's own route table, past Elysia (relay/index.ts
// relayJsonRoutes), and through Elysia under app.handle(): a client must not be able to tell the two apart.
// Each case is sent both ways and the answers compared: status, content type, the headers a client reads, body.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { relayFixture, logsOf, userRow, type RelayFixture } from "./fixtures.ts";
import { createApp } from "../../server/app.ts";

let fx: RelayFixture;
let server: any;
let key = "";
let userId = 0;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  await fx.option("ModelRatio", JSON.stringify({ "nr-model": 1 }));
  await fx.channel({ base_url: fx.mock.url, models: ["nr-model"] });
  const user = await fx.user(10_000_000);
  userId = user.id;
  key = (await fx.token(user.id)).key;
  server = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
});

afterAll(async () => {
  await server?.stop(true);
  await fx?.close();
});

interface Case {
  name: string;
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | null;
  chunked?: boolean;
}

const chat = (o: Record<string, unknown>) =>
  JSON.stringify({ model: "nr-model", messages: [{ role: "user", content: "hello" }], ...o });

const claude = (o: Record<string, unknown>) =>
  JSON.stringify({ model: "nr-model", max_tokens: 50, messages: [{ role: "user", content: "hello" }], ...o });

const gemini = JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hello" }] }] });
const goog = { authorization: "", "x-goog-api-key": "@key" };

const cases = (): Case[] => [
  { name: "a served call", body: chat({}) },
  { name: "a served stream", body: chat({ stream: true }) },
  { name: "an embeddings call", path: "/v1/embeddings", body: JSON.stringify({ model: "nr-model", input: "hello" }) },
  { name: "no key", headers: { authorization: "" }, body: chat({}) },
  {
    name: "an unknown key",
    headers: { authorization: "Bearer sk-nosuchkeyatall000000000000000000000000000000" },
    body: chat({}),
  },
  { name: "malformed JSON", body: '{"model": ' },
  { name: "a body that is not an object", body: "[1,2,3]" },
  { name: "no model", body: JSON.stringify({ messages: [] }) },
  { name: "an unknown model", body: chat({ model: "nr-no-such-model" }) },
  {
    name: "a body over the route's cap",
    path: "/v1/images/generations",
    body: JSON.stringify({ model: "nr-model", prompt: "x".repeat(1024 * 1024 + 10) }),
  },
  { name: "a body nested too deep", body: "[".repeat(200) + "]".repeat(200) },
  { name: "GET on a POST route", method: "GET", body: null },
  { name: "a trailing slash", path: "/v1/chat/completions/", body: chat({}) },
  { name: "a query string", path: "/v1/chat/completions?trace=1", body: chat({}) },
  { name: "a chunked body (no Content-Length)", chunked: true, body: chat({}) },
  { name: "Claude: a served message", path: "/v1/messages", body: claude({}) },
  { name: "Claude: a served stream", path: "/v1/messages", body: claude({ stream: true }) },
  {
    name: "Claude: the key in x-api-key",
    path: "/v1/messages",
    headers: { authorization: "", "x-api-key": "@key" },
    body: claude({}),
  },
  { name: "Claude: no key", path: "/v1/messages", headers: { authorization: "" }, body: claude({}) },
  { name: "Claude: no messages", path: "/v1/messages", body: JSON.stringify({ model: "nr-model", max_tokens: 10 }) },
  { name: "Claude: malformed JSON", path: "/v1/messages", body: "{" },
  {
    name: "Claude: the beta SDK's ?beta=true",
    path: "/v1/messages?beta=true",
    headers: { "anthropic-beta": "prompt-caching-2024-07-31" },
    body: claude({}),
  },
  { name: "Gemini: generateContent", path: "/v1beta/models/nr-model:generateContent", headers: goog, body: gemini },
  {
    name: "Gemini: a stream",
    path: "/v1beta/models/nr-model:streamGenerateContent?alt=sse",
    headers: goog,
    body: gemini,
  },
  { name: "Gemini: under /v1/models", path: "/v1/models/nr-model:generateContent", headers: goog, body: gemini },
  {
    name: "Gemini: the key in ?key=",
    path: "/v1beta/models/nr-model:generateContent?key=@key",
    headers: { authorization: "" },
    body: gemini,
  },
  {
    name: "Gemini: an encoded model path",
    path: "/v1beta/models/models%2Fnr-model:generateContent",
    headers: goog,
    body: gemini,
  },
  { name: "Gemini: countTokens", path: "/v1beta/models/nr-model:countTokens", headers: goog, body: gemini },
  {
    name: "Gemini: embedContent",
    path: "/v1beta/models/nr-model:embedContent",
    headers: goog,
    body: JSON.stringify({ content: { parts: [{ text: "hi" }] } }),
  },
  { name: "Gemini: an unsupported method", path: "/v1beta/models/nr-model:tuneModel", headers: goog, body: gemini },
  { name: "Gemini: no method", path: "/v1beta/models/nr-model", headers: goog, body: gemini },
  {
    name: "Gemini: a bad escape in the path",
    path: "/v1beta/models/nr%ZZmodel:generateContent",
    headers: goog,
    body: gemini,
  },
  {
    name: "Gemini: no contents",
    path: "/v1beta/models/nr-model:generateContent",
    headers: goog,
    body: JSON.stringify({ contents: [] }),
  },
  {
    name: "Gemini: no key",
    path: "/v1beta/models/nr-model:generateContent",
    headers: { authorization: "" },
    body: gemini,
  },
  { name: "Gemini: GET of a model", method: "GET", path: "/v1beta/models/nr-model", headers: goog, body: null },
  { name: "Gemini: GET of a model under /v1", method: "GET", path: "/v1/models/nr-model", body: null },
];

async function send(
  c: Case,
  native: boolean,
): Promise<{ status: number; type: string | null; retryAfter: string | null; body: any }> {
  let path = c.path ?? "/v1/chat/completions";
  const headers: Record<string, string> = {
    authorization: `Bearer ${key}`,
    "content-type": "application/json",
    ...c.headers,
  };
  if (headers.authorization === "") delete headers.authorization;
  for (const h of ["x-api-key", "x-goog-api-key"]) if (headers[h] === "@key") headers[h] = key;
  path = path.replace("@key", key);
  // A stream body goes out chunked, without a Content-Length.
  const sent = c.chunked && c.body ? new Blob([c.body]).stream() : (c.body ?? undefined);
  const init: RequestInit = { method: c.method ?? "POST", headers, body: sent, duplex: "half" } as RequestInit;
  const res = native
    ? await fetch(`http://127.0.0.1:${server.server.port}${path}`, init)
    : await fx.ctx.app.handle(new Request(`http://localhost${path}`, init));
  // Ids the gateway makes up per answer (Claude's msg_..., Gemini's responseId) differ between any two calls.
  const text = (await res.text())
    .replace(/msg_[0-9a-f]{24}/g, "msg_ID")
    .replace(/"responseId":"[0-9a-f]{32}"/g, '"responseId":"ID"');
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    retryAfter: res.headers.get("retry-after"),
    body,
  };
}

test("the relay's JSON routes are on the server's native route table", () => {
  const routes = (fx.ctx.app as any).config.serve.routes;
  for (const path of [
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/embeddings",
    "/v1/moderations",
    "/v1/images/generations",
    "/v1/audio/speech",
    "/v1/rerank",
  ]) {
    expect(typeof routes[path]?.POST).toBe("function");
  }
  expect(typeof routes["/v1/messages"]?.POST).toBe("function");
  expect(typeof routes["/v1beta/models/*"]?.POST).toBe("function");
  expect(typeof routes["/v1/models/*"]?.POST).toBe("function");
  // Multipart uploads stay with Elysia, which parses their form.
  expect(routes["/v1/audio/transcriptions"]).toBeUndefined();
});

test("with metrics on, every request goes through Elysia (its wrapper records them): no native relay routes", () => {
  const app = createApp({ ...fx.ctx.deps, config: { ...fx.ctx.deps.config, metricsEnabled: true } });
  expect((app as any).config.serve.routes).toBeUndefined();
});

for (const c of cases()) {
  test(`${c.name}: the same answer from the native route and through Elysia`, async () => {
    const viaElysia = await send(c, false);
    const native = await send(c, true);
    expect(native).toEqual(viaElysia);
  });
}

test("a call on the native route is billed and logged like one through Elysia", async () => {
  await fx.flush();
  const before = (await userRow(fx, userId)).quota;
  const logs = (await logsOf(fx, userId)).length;
  const a = await send({ name: "native", body: chat({}) }, true);
  const b = await send({ name: "elysia", body: chat({}) }, false);
  expect(a.status).toBe(200);
  expect(b.status).toBe(200);
  await fx.flush();
  const rows = await logsOf(fx, userId);
  expect(rows.length).toBe(logs + 2);
  const [x, y] = rows.slice(-2);
  expect(x.quota).toBe(y.quota);
  expect(x.quota).toBeGreaterThan(0);
  expect((await userRow(fx, userId)).quota).toBe(before - x.quota - y.quota);
});
