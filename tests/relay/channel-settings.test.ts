// A channel's `setting` JSON takes effect on every call (new-api's channel settings): its proxy (HTTP with
// and without credentials, SOCKS5 with credentials, for HTTP calls, Spark's websocket and balance reads),
// its system prompt (and whether it is prepended to the client's), pass_through_body_enabled,
// force_format and thinking_to_content; and param_override's operations (nested paths, conditions).
import { afterAll, describe, expect, test } from "bun:test";
import { NEW_USER_QUOTA, ratios, sharedRelayFixture } from "./fixtures.ts";
import { COMPAT_REASONING, COMPAT_TEXT, startCompatUpstream } from "../mocks/openai-compatible-upstream.ts";
import { startHttpProxy, startSocksProxy } from "../mocks/proxies.ts";
import { SPARK_TEXT, startSparkUpstream } from "../mocks/spark-upstream.ts";
import { startAiproxyUpstream } from "../mocks/aiproxy-upstream.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { closeProxyBridges } from "../../server/infra/proxy.ts";
import { readBalance } from "../../server/relay/probe.ts";
import type { Channel } from "../../db/schema.ts";

const ids: Record<string, number> = {};
const session = { key: "" };
const PROMPT = "You answer in French.";

const up = sharedRelayFixture(async (fx) => {
  const u = {
    compat: startCompatUpstream(),
    spark: startSparkUpstream(),
    aiproxy: startAiproxyUpstream(),
    claude: startClaudeUpstream(),
    gemini: startGeminiUpstream(),
    http: await startHttpProxy(),
    httpAuth: await startHttpProxy("pu:pp"),
    socks: await startSocksProxy("su:sp"),
  };
  const ch = (
    type: number,
    key: string,
    base: string,
    model: string,
    setting?: Record<string, unknown>,
    extra: Record<string, unknown> = {},
  ) => fx.channel({ type, key, base_url: base, models: [model], setting, ...extra });
  ids.direct = await ch(1, "sk-compat", u.compat.url, "direct");
  ids.viaHttp = await ch(1, "sk-compat", u.compat.url, "via-http", { proxy: u.http.url });
  ids.viaHttpAuth = await ch(1, "sk-compat", u.compat.url, "via-http-auth", { proxy: u.httpAuth.url });
  ids.viaSocks = await ch(1, "sk-compat", u.compat.url, "via-socks", { proxy: u.socks.url });
  ids.sparkSocks = await ch(
    18,
    "spark-app|spark-secret|spark-key",
    u.spark.url,
    "spark-socks",
    { proxy: u.socks.url },
    { model_mapping: { "spark-socks": "SparkDesk-v3.5" } },
  );
  ids.aiproxyHttp = await ch(21, "ap-key", u.aiproxy.url, "aiproxy-http", { proxy: u.http.url }, { other: "lib-1" });
  ids.deadProxy = await ch(1, "sk-compat", u.compat.url, "dead-proxy", { proxy: "http://127.0.0.1:9" });
  ids.prompt = await ch(1, "sk-compat", u.compat.url, "prompt", { system_prompt: PROMPT });
  ids.promptOverride = await ch(1, "sk-compat", u.compat.url, "prompt-override", {
    system_prompt: PROMPT,
    system_prompt_override: true,
  });
  ids.claudePrompt = await ch(
    14,
    "claude-key",
    u.claude.url,
    "claude-prompt",
    { system_prompt: PROMPT, system_prompt_override: true },
    { model_mapping: { "claude-prompt": "claude-sonnet-4-20250514" } },
  );
  ids.geminiPrompt = await ch(
    24,
    "gemini-key",
    u.gemini.url,
    "gemini-prompt",
    { system_prompt: PROMPT },
    { model_mapping: { "gemini-prompt": "gemini-2.5-flash" } },
  );
  ids.passThrough = await ch(
    1,
    "sk-compat",
    u.compat.url,
    "pass-through",
    { pass_through_body_enabled: true, system_prompt: PROMPT },
    { model_mapping: { "pass-through": "mapped" }, param_override: { temperature: 0 } },
  );
  ids.forceFormat = await ch(1, "sk-compat", u.compat.url, "force-format", { force_format: true });
  ids.thinking = await ch(1, "sk-compat", u.compat.url, "reason-think", { thinking_to_content: true });
  ids.operations = await ch(1, "sk-compat", u.compat.url, "po-ops", undefined, {
    param_override: {
      top_p: 0.5,
      operations: [
        { path: "metadata.tier", mode: "set", value: "gold" },
        { path: "messages.-1.content", mode: "prepend", value: "[channel] " },
        { path: "temperature", mode: "set", value: 0.1, conditions: [{ path: "model", mode: "prefix", value: "po-" }] },
        { path: "max_tokens", mode: "delete" },
        {
          mode: "return_error",
          value: { message: "this user is blocked on this channel", status_code: 403 },
          conditions: [{ path: "user", mode: "full", value: "blocked" }],
        },
      ],
    },
  });
  const all = [
    "direct",
    "via-http",
    "via-http-auth",
    "via-socks",
    "spark-socks",
    "aiproxy-http",
    "dead-proxy",
    "prompt",
    "prompt-override",
    "claude-prompt",
    "gemini-prompt",
    "pass-through",
    "force-format",
    "reason-think",
    "po-ops",
  ];
  await ratios(fx, all, 1, 2);
  const user = await fx.user(NEW_USER_QUOTA);
  session.key = (await fx.token(user.id, { remain_quota: NEW_USER_QUOTA })).key;
  return u;
});
afterAll(() => closeProxyBridges());

const call = (model: string, extra: Record<string, unknown> = {}, path = "/v1/chat/completions") =>
  up.fx.call(path, session.key, { model, messages: [{ role: "user", content: "Hi" }], ...extra });
const compatHost = () => new URL(up.compat.url).host;
const channelRow = (id: number) =>
  up.fx.ctx.deps.db
    .selectFrom("channels")
    .selectAll()
    .where("id", "=", id)
    .executeTakeFirstOrThrow() as Promise<Channel>;
const chunksOf = async (r: Response) =>
  (await r.text())
    .split("\n")
    .filter((l) => l.startsWith("data: {"))
    .map((l) => JSON.parse(l.slice(6)));

describe("proxy", () => {
  test("calls of a channel with an HTTP proxy go through it; other channels' calls do not", async () => {
    const before = up.http.targets.length;
    expect((await call("direct")).status).toBe(200);
    expect(up.http.targets.length).toBe(before);
    const r = await call("via-http");
    expect(r.status).toBe(200);
    expect(((await r.json()) as any).choices[0].message.content).toBe(COMPAT_TEXT);
    expect(up.http.targets.slice(before)).toEqual([compatHost()]);
    const s = await call("via-http", { stream: true });
    expect((await chunksOf(s)).map((c) => c.choices?.[0]?.delta?.content ?? "").join("")).toBe(COMPAT_TEXT);
    expect(up.http.targets.length).toBe(before + 2);
  });

  test("proxy credentials in the URL are sent to the proxy", async () => {
    expect((await call("via-http-auth")).status).toBe(200);
    expect(up.httpAuth.auth.at(-1)).toBe("Basic " + Buffer.from("pu:pp").toString("base64"));
  });

  test("a SOCKS5 proxy with credentials carries HTTP calls, streams and Spark's websocket", async () => {
    const before = up.socks.targets.length;
    expect((await call("via-socks")).status).toBe(200);
    const s = await call("via-socks", { stream: true });
    expect((await chunksOf(s)).map((c) => c.choices?.[0]?.delta?.content ?? "").join("")).toBe(COMPAT_TEXT);
    const spark = await call("spark-socks");
    expect(spark.status).toBe(200);
    expect(((await spark.json()) as any).choices[0].message.content).toBe(SPARK_TEXT);
    expect(up.socks.targets.slice(before)).toEqual([compatHost(), compatHost(), new URL(up.spark.url).host]);
    expect(up.socks.auth.at(-1)).toBe("su");
  });

  test("the channel's balance is read through its proxy", async () => {
    const before = up.http.targets.length;
    expect(await readBalance(await channelRow(ids.aiproxyHttp!), "ap-key")).toBe(42.5);
    expect(up.http.targets.slice(before)).toEqual([new URL(up.aiproxy.url).host]);
  });

  test("an unreachable proxy fails the call as a connection failure", async () => {
    const r = await call("dead-proxy");
    expect(r.status).toBe(502);
  });
});

describe("system prompt", () => {
  test("added in front when the client sent none; the client's own kept as it is without override", async () => {
    await call("prompt");
    expect(up.compat.last().body.messages).toEqual([
      { role: "system", content: PROMPT },
      { role: "user", content: "Hi" },
    ]);
    await up.fx.call("/v1/chat/completions", session.key, {
      model: "prompt",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
    });
    expect(up.compat.last().body.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
    ]);
  });

  test("with override the channel's prompt is put before the client's", async () => {
    await up.fx.call("/v1/chat/completions", session.key, {
      model: "prompt-override",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
    });
    expect(up.compat.last().body.messages[0]).toEqual({ role: "system", content: `${PROMPT}\nBe brief.` });
  });

  test("Claude and Gemini clients on their own channels: system and systemInstruction", async () => {
    const c = await up.fx.call("/v1/messages", session.key, {
      model: "claude-prompt",
      max_tokens: 20,
      system: "Be brief.",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(c.status).toBe(200);
    expect(up.claude.last().body.system).toBe(`${PROMPT}\nBe brief.`);
    const g = await up.fx.ctx.app.handle(
      new Request("http://localhost/v1beta/models/gemini-prompt:generateContent", {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": session.key },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
      }),
    );
    expect(g.status).toBe(200);
    expect(up.gemini.last().body.systemInstruction ?? up.gemini.last().body.system_instruction).toEqual({
      parts: [{ text: PROMPT }],
    });
  });
});

describe("pass_through_body_enabled, force_format, thinking_to_content", () => {
  test("pass-through: the client's body goes as sent — no model mapping, system prompt, usage request or override", async () => {
    const body = { model: "pass-through", stream: true, temperature: 0.7, messages: [{ role: "user", content: "Hi" }] };
    const r = await up.fx.call("/v1/chat/completions", session.key, body);
    expect(r.status).toBe(200);
    await r.text();
    expect(up.compat.last().body).toEqual(body);
  });

  test("force_format: fields outside OpenAI's schema are dropped, in answers and streams", async () => {
    const plain = (await (await call("direct")).json()) as any;
    expect(plain.x_provider).toBe("compat");
    const forced = (await (await call("force-format")).json()) as any;
    expect(forced.x_provider).toBeUndefined();
    expect(forced.choices[0].message.content).toBe(COMPAT_TEXT);
    const chunks = await chunksOf(await call("force-format", { stream: true }));
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) expect(c.x_provider).toBeUndefined();
  });

  test("thinking_to_content: reasoning becomes content inside <think> tags", async () => {
    const r = (await (await call("reason-think")).json()) as any;
    expect(r.choices[0].message).toEqual({
      role: "assistant",
      content: `<think>\n${COMPAT_REASONING}\n</think>\n${COMPAT_TEXT}`,
    });
    const chunks = await chunksOf(await call("reason-think", { stream: true }));
    expect(chunks.some((c) => c.choices?.[0]?.delta?.reasoning_content)).toBe(false);
    expect(chunks.map((c) => c.choices?.[0]?.delta?.content ?? "").join("")).toBe(
      `<think>\n${COMPAT_REASONING}\n</think>\n${COMPAT_TEXT}`,
    );
  });
});

describe("param_override operations", () => {
  test("nested sets, negative indexes, conditions and deletes reach the upstream body; literal keys beside them are set", async () => {
    const r = await call("po-ops", { max_tokens: 50, temperature: 1 });
    expect(r.status).toBe(200);
    const sent = up.compat.last().body;
    expect(sent).toMatchObject({ top_p: 0.5, metadata: { tier: "gold" }, temperature: 0.1 });
    expect(sent.messages.at(-1).content).toBe("[channel] Hi");
    expect(sent).not.toHaveProperty("max_tokens");
  });

  test("return_error refuses the call with its message and status, before any upstream request", async () => {
    const before = up.compat.requests.length;
    const r = await call("po-ops", { user: "blocked" });
    expect(r.status).toBe(403);
    expect(((await r.json()) as any).error.message).toBe("this user is blocked on this channel");
    expect(up.compat.requests.length).toBe(before);
  });
});
