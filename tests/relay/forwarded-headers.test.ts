// Client headers that carry meaning to a native upstream go with the call (Anthropic's beta and version flags,
// Claude Code's and Codex's session headers, Gemini's client header, Claude's ?beta=true), behind an allow list
// per wire format that a channel's `forward_headers` setting extends. The client's own credentials and
// hop-by-hop headers never go, whatever the setting says; a converted call forwards none of them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { FORWARDED_HEADERS, NEVER_FORWARDED } from "../../server/catalogue/index.ts";
import { forwardRule, forwardedHeaders } from "../../server/relay/forward.ts";

let fx: RelayFixture;
let claude: MockUpstream;
let gemini: MockUpstream;
let key = "";
let userId = 0;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  claude = startClaudeUpstream();
  gemini = startGeminiUpstream();
  const models = ["fh-claude", "fh-openai", "fh-gemini", "fh-extended", "fh-greedy"];
  await fx.option("ModelRatio", JSON.stringify(Object.fromEntries(models.map((m) => [m, 1]))));
  await fx.channel({ type: 14, key: "claude-key", base_url: claude.url, models: ["fh-claude"] });
  await fx.channel({ type: 1, base_url: fx.mock.url, models: ["fh-openai"] });
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: ["fh-gemini"] });
  await fx.channel({
    type: 1,
    base_url: fx.mock.url,
    models: ["fh-extended"],
    setting: { forward_headers: ["X-Trace-Id", "x-team-*"] },
  });
  // An operator who lists credentials and hop-by-hop headers, or a pattern that covers them, still forwards none.
  await fx.channel({
    type: 1,
    base_url: fx.mock.url,
    models: ["fh-greedy"],
    setting: {
      forward_headers:
        "authorization, cookie, New-Api-User, x-*, connection, te, transfer-encoding, host, content-length",
    },
  });
  const user = await fx.user(500_000_000);
  userId = user.id;
  key = (await fx.token(user.id, { remain_quota: 400_000_000 })).key;
});

afterAll(async () => {
  for (const up of [claude, gemini]) up.stop();
  await fx.close();
});

/** Headers a client may send that must never reach an upstream. */
const secrets = () => ({
  cookie: "session=client-cookie",
  "new-api-user": String(userId),
  "proxy-authorization": "Basic Y2xpZW50",
  "x-goog-api-key": "client-goog-key",
});

function send(path: string, body: unknown, headers: Record<string, string>) {
  return fx.ctx.app.handle(
    new Request("http://localhost" + path, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );
}

const claudeBody = { model: "fh-claude", max_tokens: 50, messages: [{ role: "user", content: "hi" }] };
const claudeCode = {
  "x-api-key": "",
  "anthropic-version": "2023-06-01",
  "anthropic-beta": "claude-code-20250219,mid-conversation-system-2026-04-07",
  "x-claude-code-session-id": "5b1c7c1e-3f0a-4a57-9d55-1c1c1c1c1c1c",
  "x-stainless-lang": "js",
  "user-agent": "claude-cli/2.1.3 (external, cli)",
};

test("Claude client, Claude channel: Anthropic's and Claude Code's headers are forwarded, the client's key and cookies are not", async () => {
  const res = await send("/v1/messages", claudeBody, { ...claudeCode, "x-api-key": key, ...secrets() });
  expect(res.status).toBe(200);
  const h = claude.last().headers;
  expect(h["anthropic-beta"]).toBe("claude-code-20250219,mid-conversation-system-2026-04-07");
  expect(h["anthropic-version"]).toBe("2023-06-01");
  expect(h["x-claude-code-session-id"]).toBe("5b1c7c1e-3f0a-4a57-9d55-1c1c1c1c1c1c");
  expect(h["x-api-key"]).toBe("claude-key");
  for (const name of ["cookie", "new-api-user", "proxy-authorization", "x-goog-api-key", "x-stainless-lang"])
    expect(h[name]).toBeUndefined();
});

test("Claude client, Claude channel: ?beta=true on /v1/messages goes upstream; without it none is added", async () => {
  expect((await send("/v1/messages?beta=true", claudeBody, { ...claudeCode, "x-api-key": key })).status).toBe(200);
  expect(claude.last().search).toBe("?beta=true");
  expect((await send("/v1/messages", claudeBody, { ...claudeCode, "x-api-key": key })).status).toBe(200);
  expect(claude.last().search).toBe("");
});

test("Claude client, OpenAI channel (converted): no Anthropic or Claude Code header reaches the OpenAI upstream", async () => {
  const res = await send(
    "/v1/messages?beta=true",
    { ...claudeBody, model: "fh-openai" },
    { ...claudeCode, "x-api-key": key },
  );
  expect(res.status).toBe(200);
  const seen = fx.mock.seen.at(-1)!;
  expect(seen.authorization).toBe("Bearer sk-channel-key");
  for (const name of ["anthropic-beta", "anthropic-version", "x-claude-code-session-id"])
    expect(seen.headers![name]).toBeUndefined();
  expect(seen.search).toBe("");
});

const codex = {
  session_id: "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
  "session-id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
  "thread-id": "thread-42",
  "x-codex-turn-metadata": '{"turn":3}',
  "x-codex-beta-features": "unified_exec",
  "x-openai-internal-codex-responses-lite": "1",
  originator: "codex_cli_rs",
};

test("OpenAI client, OpenAI channel: Codex's session, thread and x-codex-* headers go with a Responses call; the client's key does not", async () => {
  const res = await send(
    "/v1/responses",
    { model: "fh-openai", input: "hi" },
    { authorization: `Bearer ${key}`, ...codex, ...secrets() },
  );
  expect(res.status).toBe(200);
  const seen = fx.mock.seen.at(-1)!;
  expect(seen.path).toBe("/v1/responses");
  expect(seen.authorization).toBe("Bearer sk-channel-key");
  for (const name of [
    "session_id",
    "session-id",
    "thread-id",
    "x-codex-turn-metadata",
    "x-codex-beta-features",
    "x-openai-internal-codex-responses-lite",
  ]) {
    expect(seen.headers![name]).toBe((codex as Record<string, string>)[name]!);
  }
  for (const name of ["cookie", "new-api-user", "proxy-authorization", "x-goog-api-key"])
    expect(seen.headers![name]).toBeUndefined();
});

test("OpenAI client, OpenAI channel: Codex's headers go with its compaction call too", async () => {
  const res = await send(
    "/v1/responses/compact",
    { model: "fh-openai", input: [{ role: "user", content: "hi" }] },
    { authorization: `Bearer ${key}`, ...codex },
  );
  expect(res.status).toBe(200);
  const seen = fx.mock.seen.at(-1)!;
  expect(seen.path).toBe("/v1/responses/compact");
  expect(seen.headers!.session_id).toBe(codex.session_id);
  expect(seen.headers!["x-codex-turn-metadata"]).toBe('{"turn":3}');
});

test("OpenAI client, OpenAI channel: the same headers go with a chat call", async () => {
  const res = await send(
    "/v1/chat/completions",
    { model: "fh-openai", messages: [{ role: "user", content: "hi" }] },
    { authorization: `Bearer ${key}`, ...codex },
  );
  expect(res.status).toBe(200);
  expect(fx.mock.seen.at(-1)!.headers!["x-codex-turn-metadata"]).toBe('{"turn":3}');
});

test("Gemini client, Gemini channel: x-goog-api-client is forwarded, the client's x-goog-api-key is not", async () => {
  const res = await send(
    "/v1beta/models/fh-gemini:generateContent",
    { contents: [{ role: "user", parts: [{ text: "hi" }] }] },
    {
      "x-goog-api-key": key,
      "x-goog-api-client": "gl-node/22.0.0 gemini-cli/0.6.1",
      cookie: "a=b",
    },
  );
  expect(res.status).toBe(200);
  const h = gemini.last().headers;
  expect(h["x-goog-api-client"]).toBe("gl-node/22.0.0 gemini-cli/0.6.1");
  expect(h["x-goog-api-key"]).toBe("gemini-key");
  expect(h.cookie).toBeUndefined();
});

test("a channel's forward_headers adds names and prefixes (any case) to its format's list", async () => {
  const res = await send(
    "/v1/chat/completions",
    { model: "fh-extended", messages: [{ role: "user", content: "hi" }] },
    {
      authorization: `Bearer ${key}`,
      "x-trace-id": "t-1",
      "x-team-name": "blue",
      "x-team-cost-center": "42",
      "x-other": "no",
      ...codex,
    },
  );
  expect(res.status).toBe(200);
  const h = fx.mock.seen.at(-1)!.headers!;
  expect([h["x-trace-id"], h["x-team-name"], h["x-team-cost-center"]]).toEqual(["t-1", "blue", "42"]);
  expect(h["x-other"]).toBeUndefined();
  expect(h.session_id).toBe(codex.session_id);
});

test("a channel's forward_headers never forwards the client's credentials or hop-by-hop headers", async () => {
  const res = await send(
    "/v1/chat/completions",
    { model: "fh-greedy", messages: [{ role: "user", content: "hi" }] },
    {
      authorization: `Bearer ${key}`,
      "x-custom": "yes",
      "x-api-key": "client-anthropic-key",
      te: "trailers",
      ...secrets(),
    },
  );
  expect(res.status).toBe(200);
  const seen = fx.mock.seen.at(-1)!;
  expect(seen.authorization).toBe("Bearer sk-channel-key");
  expect(seen.headers!["x-custom"]).toBe("yes");
  for (const name of ["x-api-key", "x-goog-api-key", "cookie", "new-api-user", "proxy-authorization", "te"])
    expect(seen.headers![name]).toBeUndefined();
});

test("the default lists hold no credential and no hop-by-hop header", () => {
  for (const list of Object.values(FORWARDED_HEADERS))
    for (const name of list) expect(NEVER_FORWARDED).not.toContain(name.toLowerCase());
});

test("with nothing allowed, no header object is made", () => {
  const rule = forwardRule("openai", { forward_headers: [] }, false);
  expect(
    forwardedHeaders(new Headers({ authorization: "Bearer x", "x-codex-turn-metadata": "1" }), rule),
  ).toBeUndefined();
  expect(forwardedHeaders(new Headers({ "x-codex-turn-metadata": "1" }), forwardRule("openai", {}, true))).toEqual({
    "x-codex-turn-metadata": "1",
  });
  expect(forwardedHeaders(new Headers({ authorization: "Bearer x" }), forwardRule("openai", {}, true))).toBeUndefined();
});
