// Fallbacks across models (ModelFallbacks, GroupModelFallbacks): when every channel of the requested model
// fails, its channels are all disabled, or the prompt exceeds its context window, the call is served by the
// next model of the rule — billed exactly at that model's price, logged as that model with other.fallback
// naming the requested one — in the client's own format, streamed or not.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { logsOf, relayFixture, tokenRow, userRow, type RelayFixture } from "./fixtures.ts";
import { startMockUpstream, type MockUpstream } from "../mocks/openai-upstream.ts";
import { contextExceeded, fallbackModels } from "../../server/relay/core/fallback.ts";
import type { OptionStore } from "../../server/modules/option/store.ts";

// The mock answers usage 10 prompt + 20 completion tokens. Completion ratio 1 for every model here, group 1:
// quota = ratio × 30.
const RATIO: Record<string, number> = {};
const price = (model: string) => RATIO[model] * 30;
const QUOTA = 10_000_000;

/** An upstream that answers every call with the given status and body. */
function answering(status: number, body: unknown): { url: string; stop(): void; calls: () => number } {
  let calls = 0;
  const server = Bun.serve({ port: 0, fetch: () => (calls++, Response.json(body, { status })) });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true), calls: () => calls };
}

const OPENAI_OVERFLOW = {
  error: {
    message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    type: "invalid_request_error",
    param: "messages",
    code: "context_length_exceeded",
  },
};
const CLAUDE_OVERFLOW = {
  type: "error",
  error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" },
};

async function consumeLogs(fx: RelayFixture, userId: number) {
  await fx.flush();
  return (await logsOf(fx, userId)).filter((l) => l.type === 2);
}

async function setRatios(fx: RelayFixture, ratios: Record<string, number>) {
  Object.assign(RATIO, ratios);
  await fx.option("ModelRatio", JSON.stringify(RATIO));
  await fx.option("CompletionRatio", JSON.stringify(Object.fromEntries(Object.keys(RATIO).map((m) => [m, 1]))));
}

/** A user and a token, each holding QUOTA. */
async function funded(fx: RelayFixture, token: Parameters<RelayFixture["token"]>[1] = {}) {
  const user = await fx.user(QUOTA);
  return { user, token: await fx.token(user.id, { remain_quota: QUOTA, ...token }) };
}

/** `from` served only by a failing upstream, `to` by the working mock, the rule from → to, and a funded caller. */
async function failingOver(
  fx: RelayFixture,
  down: MockUpstream,
  from: string,
  to: string,
  ratios: Record<string, number>,
) {
  await setRatios(fx, ratios);
  await fx.option("ModelFallbacks", JSON.stringify({ [from]: [to] }));
  await fx.channel({ base_url: down.url, models: [from] });
  await fx.channel({ base_url: fx.mock.url, models: [to] });
  return funded(fx);
}

const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "hi" }],
  max_tokens: 5,
  ...extra,
});

describe("rules", () => {
  const store = (values: Record<string, string>) =>
    ({
      get: (k: string) => values[k] ?? "",
      json: (k: string, d: unknown) => (values[k] ? JSON.parse(values[k]) : d),
    }) as unknown as OptionStore;
  test("the group's rule wins over the site's, even an empty one; repeats and the model itself are dropped", () => {
    const o = store({
      ModelFallbacks: JSON.stringify({ a: ["b", "a", "b", " c "], x: ["y"] }),
      GroupModelFallbacks: JSON.stringify({ vip: { a: ["z"] }, none: { a: [] } }),
    });
    expect(fallbackModels(o, "default", "a")).toEqual(["b", "c"]);
    expect(fallbackModels(o, "vip", "a")).toEqual(["z"]);
    expect(fallbackModels(o, "vip", "x")).toEqual(["y"]);
    expect(fallbackModels(o, "none", "a")).toEqual([]);
    expect(fallbackModels(o, "default", "constructor")).toEqual([]);
    expect(fallbackModels(store({}), "default", "a")).toEqual([]);
  });
  test("context-window errors of OpenAI, Claude, Gemini and compatibles are recognised; others are not", () => {
    expect(contextExceeded(400, "anything", "context_length_exceeded")).toBe(true);
    expect(contextExceeded(400, OPENAI_OVERFLOW.error.message)).toBe(true);
    expect(contextExceeded(400, CLAUDE_OVERFLOW.error.message)).toBe(true);
    expect(
      contextExceeded(400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."),
    ).toBe(true);
    expect(contextExceeded(400, "Input is too long for requested model.")).toBe(true);
    expect(contextExceeded(400, "messages: field required")).toBe(false);
    expect(contextExceeded(500, OPENAI_OVERFLOW.error.message)).toBe(false);
  });
});

describe("fallback on SQLite", () => {
  let fx: RelayFixture;
  let down: MockUpstream;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    down = startMockUpstream({ failStatus: 503 });
  });
  afterAll(async () => {
    await down.stop();
    await fx.close();
  });

  test("every channel of the model fails: served by the next model, billed exactly at its price, logged with other.fallback", async () => {
    await setRatios(fx, { "fb-big": 7.5, "fb-mid": 3, "fb-small": 2 });
    await fx.option("ModelFallbacks", JSON.stringify({ "fb-big": ["fb-mid", "fb-small"] }));
    await fx.channel({ name: "big-1", base_url: down.url, models: ["fb-big"] });
    await fx.channel({ name: "big-2", base_url: down.url, models: ["fb-big"] });
    const midId = await fx.channel({ name: "mid", base_url: fx.mock.url, models: ["fb-mid"] });
    const { user, token } = await funded(fx);
    const res = await fx.call("/v1/chat/completions", token.key, chat("fb-big"));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.choices[0].message.content).toBeString();
    const logs = await consumeLogs(fx, user.id);
    expect(logs.length).toBe(1);
    const log = logs[0];
    expect(log.model_name).toBe("fb-mid");
    expect(log.channel_id).toBe(midId);
    expect(log.quota).toBe(price("fb-mid"));
    const other = JSON.parse(log.other);
    expect(other.fallback).toEqual({
      requested: "fb-big",
      served: "fb-mid",
      reason: "upstream_error",
      tried: [{ model: "fb-big", reason: "upstream_error" }, { model: "fb-mid" }],
    });
    expect(other.model_ratio).toBe(3);
    expect(other.admin_info.use_channel.length).toBe(3);
    // The books: exactly the served model's price left the user and the token; no hold is left over.
    expect((await userRow(fx, user.id)).quota).toBe(QUOTA - price("fb-mid"));
    expect((await tokenRow(fx, token.id)).remain_quota).toBe(QUOTA - price("fb-mid"));
    expect((await userRow(fx, user.id)).used_quota).toBe(price("fb-mid"));
    expect(fx.ctx.deps.options.get("ModelFallbacks")).toContain("fb-big");
  });

  test("a pricier fallback: held and billed at its own price; one the token's balance cannot hold is skipped", async () => {
    const { user, token } = await failingOver(fx, down, "hold-a", "hold-b", { "hold-a": 1, "hold-b": 1000 });
    // hold-b's hold (prompt estimate + max_tokens 5, at ratio 1000) is thousands, and even capped to one output
    // token (the prompt estimate + 1) it is 2,000 or more; hold-a's a few units.
    const poor = await fx.token(user.id, { remain_quota: 1000 });
    const refused = await fx.call("/v1/chat/completions", poor.key, chat("hold-a"));
    expect(refused.status).toBe(503);
    expect((await tokenRow(fx, poor.id)).remain_quota).toBe(1000);
    const res = await fx.call("/v1/chat/completions", token.key, chat("hold-a"));
    expect(res.status).toBe(200);
    const [log] = await consumeLogs(fx, user.id);
    expect(log.quota).toBe(price("hold-b"));
    expect(log.token_id).toBe(token.id);
    expect((await tokenRow(fx, token.id)).remain_quota).toBe(QUOTA - price("hold-b"));
    expect((await tokenRow(fx, poor.id)).remain_quota).toBe(1000);
    expect((await userRow(fx, user.id)).quota).toBe(QUOTA - price("hold-b"));
  });

  test("the request counts once against the user's rate limit, however many models it tries", async () => {
    const { user, token } = await failingOver(fx, down, "rl-a", "rl-b", { "rl-a": 1, "rl-b": 1 });
    await fx.option("ModelRequestRateLimitCount", "1");
    await fx.option("ModelRequestRateLimitEnabled", "true");
    try {
      expect((await fx.call("/v1/chat/completions", token.key, chat("rl-a"))).status).toBe(200);
      expect((await fx.call("/v1/chat/completions", token.key, chat("rl-a"))).status).toBe(429);
      expect((await consumeLogs(fx, user.id)).map((l) => l.model_name)).toEqual(["rl-b"]);
    } finally {
      await fx.option("ModelRequestRateLimitEnabled", "false");
    }
  });

  test("no rule, no fallback: the failure is the answer and nothing is billed", async () => {
    await setRatios(fx, { "nf-big": 1, "nf-small": 1 });
    await fx.channel({ base_url: down.url, models: ["nf-big"] });
    await fx.channel({ base_url: fx.mock.url, models: ["nf-small"] });
    const { user, token } = await funded(fx);
    const res = await fx.call("/v1/chat/completions", token.key, chat("nf-big"));
    expect(res.status).toBe(503);
    expect(await consumeLogs(fx, user.id)).toEqual([]);
    expect((await userRow(fx, user.id)).quota).toBe(QUOTA);
    expect((await tokenRow(fx, token.id)).remain_quota).toBe(QUOTA);
  });

  test("the upstream's context-length 400: the next model serves it (and a bad request of the client's own is not retried)", async () => {
    const small = answering(400, OPENAI_OVERFLOW);
    const bad = answering(400, { error: { message: "messages: field required", type: "invalid_request_error" } });
    try {
      await setRatios(fx, { "ctx-small": 1, "ctx-long": 4, "ctx-bad": 1 });
      await fx.option("ModelFallbacks", JSON.stringify({ "ctx-small": ["ctx-long"], "ctx-bad": ["ctx-long"] }));
      await fx.channel({ base_url: small.url, models: ["ctx-small"] });
      await fx.channel({ base_url: bad.url, models: ["ctx-bad"] });
      await fx.channel({ base_url: fx.mock.url, models: ["ctx-long"] });
      const { user, token } = await funded(fx);
      const res = await fx.call("/v1/chat/completions", token.key, chat("ctx-small"));
      expect(res.status).toBe(200);
      expect(small.calls()).toBe(1);
      const [log] = await consumeLogs(fx, user.id);
      expect(JSON.parse(log.other).fallback.reason).toBe("context_length_exceeded");
      expect(log.quota).toBe(price("ctx-long"));
      expect((await fx.call("/v1/chat/completions", token.key, chat("ctx-bad"))).status).toBe(400);
      expect((await consumeLogs(fx, user.id)).length).toBe(1);
    } finally {
      small.stop();
      bad.stop();
    }
  });

  test("a context-length 400 no fallback serves reaches the client as context_length_exceeded (clients trim the prompt on that code)", async () => {
    const small = answering(400, OPENAI_OVERFLOW);
    try {
      await setRatios(fx, { "ctxo-a": 1, "ctxo-b": 1, "ctxo-none": 1 });
      await fx.option("ModelFallbacks", JSON.stringify({ "ctxo-a": ["ctxo-b"] }));
      await fx.channel({ base_url: small.url, models: ["ctxo-a", "ctxo-b", "ctxo-none"] });
      const { token } = await funded(fx);
      for (const model of ["ctxo-none", "ctxo-a"]) {
        // no rule; a rule whose every model overflows
        const res = await fx.call("/v1/chat/completions", token.key, chat(model));
        expect(res.status).toBe(400);
        const body: any = await res.json();
        expect(body.error.code).toBe("context_length_exceeded");
        expect(body.error.message).toContain("maximum context length");
      }
    } finally {
      small.stop();
    }
  });

  test("a prompt larger than every channel's max_input_tokens goes to the fallback without calling the model", async () => {
    const tiny = answering(200, {});
    try {
      await setRatios(fx, { "win-tiny": 1, "win-big": 2 });
      await fx.option("ModelFallbacks", JSON.stringify({ "win-tiny": ["win-big"] }));
      const id = await fx.channel({ base_url: tiny.url, models: ["win-tiny"] });
      await fx.ctx.deps.db.updateTable("channels").set({ max_input_tokens: 50 }).where("id", "=", id).execute();
      const { invalidateRelayCaches } = await import("../../server/relay/state.ts");
      invalidateRelayCaches(fx.ctx.deps);
      await fx.channel({ base_url: fx.mock.url, models: ["win-big"] });
      const { user, token } = await funded(fx);
      // A short prompt fits: served by the model itself (the tiny upstream answers an empty JSON).
      const short = await fx.call("/v1/chat/completions", token.key, chat("win-tiny"));
      await short.text();
      expect(tiny.calls()).toBe(1);
      const long = await fx.call(
        "/v1/chat/completions",
        token.key,
        chat("win-tiny", { messages: [{ role: "user", content: "lorem ipsum dolor sit amet ".repeat(40) }] }),
      );
      expect(long.status).toBe(200);
      expect(tiny.calls()).toBe(1);
      const logs = await consumeLogs(fx, user.id);
      const fb = JSON.parse(logs.at(-1)!.other).fallback;
      expect(fb).toMatchObject({ requested: "win-tiny", served: "win-big", reason: "context_length_exceeded" });
    } finally {
      tiny.stop();
    }
  });

  test("all channels of the model disabled (503 model_not_available): the fallback serves", async () => {
    await setRatios(fx, { "off-a": 1, "off-b": 5 });
    await fx.option("ModelFallbacks", JSON.stringify({ "off-a": ["off-b"] }));
    await fx.channel({ base_url: fx.mock.url, models: ["off-a"], status: 2 });
    await fx.channel({ base_url: fx.mock.url, models: ["off-b"] });
    const { user, token } = await funded(fx);
    const res = await fx.call("/v1/chat/completions", token.key, chat("off-a"));
    expect(res.status).toBe(200);
    const [log] = await consumeLogs(fx, user.id);
    expect(log.model_name).toBe("off-b");
    expect(log.quota).toBe(price("off-b"));
    expect(JSON.parse(log.other).fallback.reason).toBe("model_not_available");
    expect((await userRow(fx, user.id)).quota).toBe(QUOTA - price("off-b"));
  });

  test("the token's model limits are respected: a fallback the token may not use is skipped", async () => {
    await setRatios(fx, { "lim-a": 1, "lim-b": 1, "lim-c": 1 });
    await fx.option("ModelFallbacks", JSON.stringify({ "lim-a": ["lim-b", "lim-c"] }));
    await fx.channel({ base_url: down.url, models: ["lim-a"] });
    const seenBefore = fx.mock.seen.length;
    await fx.channel({ base_url: fx.mock.url, models: ["lim-b", "lim-c"] });
    const user = await fx.user(QUOTA);
    const onlyAB = await fx.token(user.id, { remain_quota: QUOTA, model_limits: ["lim-a", "lim-b"] });
    const onlyA = await fx.token(user.id, { remain_quota: QUOTA, model_limits: ["lim-a"] });
    const onlyAC = await fx.token(user.id, { remain_quota: QUOTA, model_limits: ["lim-a", "lim-c"] });
    expect((await fx.call("/v1/chat/completions", onlyA.key, chat("lim-a"))).status).toBe(503);
    expect(fx.mock.seen.length).toBe(seenBefore);
    expect((await fx.call("/v1/chat/completions", onlyAB.key, chat("lim-a"))).status).toBe(200);
    expect((await fx.call("/v1/chat/completions", onlyAC.key, chat("lim-a"))).status).toBe(200);
    const logs = await consumeLogs(fx, user.id);
    expect(logs.map((l) => l.model_name)).toEqual(["lim-b", "lim-c"]);
    expect(JSON.parse(logs[1].other).fallback.tried).toEqual([
      { model: "lim-a", reason: "upstream_error" },
      { model: "lim-b", reason: "not_allowed" },
      { model: "lim-c" },
    ]);
  });

  test("the fallback must be served in the caller's group, and the group's rule wins", async () => {
    await setRatios(fx, { "grp-a": 1, "grp-b": 1, "grp-c": 1 });
    await fx.option("ModelFallbacks", JSON.stringify({ "grp-a": ["grp-b"] }));
    await fx.option("GroupModelFallbacks", JSON.stringify({ vip: { "grp-a": ["grp-c"] } }));
    await fx.channel({ base_url: down.url, models: ["grp-a"], groups: ["default", "vip"] });
    await fx.channel({ base_url: fx.mock.url, models: ["grp-b"], groups: ["vip"] });
    await fx.channel({ base_url: fx.mock.url, models: ["grp-c"], groups: ["vip"] });
    const user = await fx.user(QUOTA);
    const plain = await fx.token(user.id, { remain_quota: QUOTA });
    const vip = await fx.token(user.id, { remain_quota: QUOTA, group: "vip" });
    await fx.option("GroupRatio", JSON.stringify({ default: 1, vip: 1 }));
    // grp-b is not served in "default": the call fails as the requested model did.
    expect((await fx.call("/v1/chat/completions", plain.key, chat("grp-a"))).status).toBe(503);
    expect((await fx.call("/v1/chat/completions", vip.key, chat("grp-a"))).status).toBe(200);
    const logs = await consumeLogs(fx, user.id);
    expect(logs.map((l) => [l.model_name, l.group])).toEqual([["grp-c", "vip"]]);
    await fx.option("GroupModelFallbacks", "{}");
  });

  test("a token of group auto: the fallback is routed in the first of its groups that serves it", async () => {
    await setRatios(fx, { "au-a": 1, "au-b": 1 });
    await fx.option("ModelFallbacks", JSON.stringify({ "au-a": ["au-b"] }));
    await fx.option("UserUsableGroups", JSON.stringify({ default: "", vip: "" }));
    await fx.option("AutoGroups", JSON.stringify(["default", "vip"]));
    await fx.channel({ base_url: down.url, models: ["au-a"], groups: ["default"] });
    await fx.channel({ base_url: fx.mock.url, models: ["au-b"], groups: ["vip"] });
    const { user, token } = await funded(fx, { group: "auto" });
    expect((await fx.call("/v1/chat/completions", token.key, chat("au-a"))).status).toBe(200);
    const [log] = await consumeLogs(fx, user.id);
    expect([log.model_name, log.group]).toEqual(["au-b", "vip"]);
  });

  test("streaming: the client gets a stream from the fallback model, billed at its price", async () => {
    const { user, token } = await failingOver(fx, down, "st-a", "st-b", { "st-a": 9, "st-b": 1.5 });
    const res = await fx.call("/v1/chat/completions", token.key, chat("st-a", { stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const text = await res.text();
    expect(text).toContain("data: [DONE]");
    expect(text).toContain("Hello");
    const [log] = await consumeLogs(fx, user.id);
    expect(log.is_stream).toBeTruthy();
    expect(log.quota).toBe(price("st-b"));
    expect((await tokenRow(fx, token.id)).remain_quota).toBe(QUOTA - price("st-b"));
  });

  test("a Claude-format client (/v1/messages): Claude's 'prompt is too long' moves it to the fallback, answered in Claude's shape", async () => {
    const claude = Bun.serve({ port: 0, fetch: () => Response.json(CLAUDE_OVERFLOW, { status: 400 }) });
    try {
      await setRatios(fx, { "cl-a": 3, "cl-b": 1 });
      await fx.option("ModelFallbacks", JSON.stringify({ "cl-a": ["cl-b"] }));
      await fx.channel({ type: 14, base_url: `http://127.0.0.1:${claude.port}`, models: ["cl-a"] });
      await fx.channel({ base_url: fx.mock.url, models: ["cl-b"] });
      const { user, token } = await funded(fx);
      const body = { model: "cl-a", max_tokens: 16, messages: [{ role: "user", content: "hi" }] };
      const res = await fx.call("/v1/messages", token.key, body, { "anthropic-version": "2023-06-01" });
      expect(res.status).toBe(200);
      const json = await res.json();
      expect(json.type).toBe("message");
      expect(json.content[0].type).toBe("text");
      const streamed = await fx.call(
        "/v1/messages",
        token.key,
        { ...body, stream: true },
        { "anthropic-version": "2023-06-01" },
      );
      const text = await streamed.text();
      expect(text).toContain("event: message_start");
      expect(text).toContain("event: message_stop");
      const logs = await consumeLogs(fx, user.id);
      expect(logs.map((l) => l.model_name)).toEqual(["cl-b", "cl-b"]);
      for (const l of logs)
        expect(JSON.parse(l.other).fallback).toMatchObject({
          requested: "cl-a",
          served: "cl-b",
          reason: "context_length_exceeded",
        });
      expect((await userRow(fx, user.id)).quota).toBe(QUOTA - logs[0].quota - logs[1].quota);
    } finally {
      claude.stop(true);
    }
  });

  test("Gemini and Responses API clients fall back too, answered in their own shapes", async () => {
    const { user, token } = await failingOver(fx, down, "gm-a", "gm-b", { "gm-a": 2, "gm-b": 1 });
    const gemini = await fx.call("/v1beta/models/gm-a:generateContent", token.key, {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
    });
    expect(gemini.status).toBe(200);
    expect((await gemini.json()).candidates[0].content.parts[0].text).toBeString();
    const streamed = await fx.call("/v1beta/models/gm-a:streamGenerateContent?alt=sse", token.key, {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
    });
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain("candidates");
    const responses = await fx.call("/v1/responses", token.key, { model: "gm-a", input: "hi" });
    expect(responses.status).toBe(200);
    expect((await responses.json()).object).toBe("response");
    const logs = await consumeLogs(fx, user.id);
    expect(logs.map((l) => l.model_name)).toEqual(["gm-b", "gm-b", "gm-b"]);
    for (const l of logs) expect(JSON.parse(l.other).fallback.requested).toBe("gm-a");
  });

  test("cycles are harmless and every fallback failing answers the last failure, with every hold given back", async () => {
    await setRatios(fx, { "cy-a": 1, "cy-b": 1 });
    await fx.option("ModelFallbacks", JSON.stringify({ "cy-a": ["cy-b", "cy-a"], "cy-b": ["cy-a"] }));
    await fx.option("LogErrorEnabled", "true");
    await fx.channel({ base_url: down.url, models: ["cy-a", "cy-b"] });
    const { user, token } = await funded(fx);
    const before = down.seen.length;
    expect((await fx.call("/v1/chat/completions", token.key, chat("cy-a"))).status).toBe(503);
    expect(down.seen.length - before).toBe(2);
    await fx.flush();
    const errors = (await logsOf(fx, user.id)).filter((l) => l.type === 5);
    expect(JSON.parse(errors[0].other).fallback.tried.map((t: any) => t.model)).toEqual(["cy-a", "cy-b"]);
    expect((await userRow(fx, user.id)).quota).toBe(QUOTA);
    expect((await tokenRow(fx, token.id)).remain_quota).toBe(QUOTA);
    await fx.option("LogErrorEnabled", "false");
  });
});

describe("options", () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
  });
  afterAll(() => fx.close());
  const put = async (key: string, value: string) => {
    const root = await fx.user(0, { role: 100 });
    const r = await fx.ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });
    expect(r.status).toBe(r.body.success ? 200 : 400);
    return r.body;
  };

  test("ModelFallbacks and GroupModelFallbacks: bad JSON or shapes are refused with a message naming the problem", async () => {
    expect(await put("ModelFallbacks", "{not json")).toMatchObject({
      success: false,
      message: expect.stringContaining("ModelFallbacks is not valid JSON"),
    });
    expect((await put("ModelFallbacks", "[]")).message).toContain("must be a JSON object of model");
    expect((await put("ModelFallbacks", JSON.stringify({ a: "b" }))).message).toContain(
      'the fallbacks of "a" must be a list',
    );
    expect((await put("ModelFallbacks", JSON.stringify({ a: ["b", 3] }))).message).toContain("non-empty model names");
    expect((await put("GroupModelFallbacks", JSON.stringify({ vip: ["a"] }))).message).toContain(
      "GroupModelFallbacks.vip must be a JSON object",
    );
    expect((await put("ChannelSelectionStrategy", "fastest")).message).toContain("weighted, latency");
    expect((await put("ChannelCooldownSeconds", "-1")).success).toBe(false);
    // A cycle is stored: calls never try a model twice.
    expect((await put("ModelFallbacks", JSON.stringify({ a: ["b"], b: ["a"] }))).success).toBe(true);
    expect(JSON.parse(fx.ctx.deps.options.get("ModelFallbacks"))).toEqual({ a: ["b"], b: ["a"] });
    expect((await put("GroupModelFallbacks", JSON.stringify({ vip: { " a ": [" c "] } }))).success).toBe(true);
    expect(JSON.parse(fx.ctx.deps.options.get("GroupModelFallbacks"))).toEqual({ vip: { a: ["c"] } });
    expect((await put("ChannelSelectionStrategy", "latency")).success).toBe(true);
    const root = await fx.user(0, { role: 100 });
    const listed = (await fx.ctx.request("GET", "/api/option/", { as: root })).body.data as {
      key: string;
      value: string;
    }[];
    expect(listed.find((o) => o.key === "ChannelCooldownSeconds")?.value).toBe("30");
  });
});

for (const kind of storageKinds().filter((k) => k !== "sqlite")) {
  describe(`on ${kind}`, () => {
    let fx: RelayFixture;
    let down: MockUpstream;
    beforeAll(async () => {
      fx = await relayFixture(kind);
      down = startMockUpstream({ failStatus: 502 });
    }, 60_000);
    afterAll(async () => {
      await down.stop();
      await fx.close();
    });

    test("the hold is re-taken at the fallback's price and the books are exact", async () => {
      const { user, token } = await failingOver(fx, down, "pg-a", "pg-b", { "pg-a": 20, "pg-b": 0.5 });
      const statuses = await Promise.all(
        Array.from({ length: 5 }, () =>
          fx.call("/v1/chat/completions", token.key, chat("pg-a")).then(async (r) => (await r.text(), r.status)),
        ),
      );
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      await fx.flush();
      const logs = (await logsOf(fx, user.id)).filter((l) => l.type === 2);
      expect(logs.map((l) => l.quota)).toEqual(Array(5).fill(price("pg-b")));
      expect((await userRow(fx, user.id)).quota).toBe(QUOTA - 5 * price("pg-b"));
      expect((await tokenRow(fx, token.id)).remain_quota).toBe(QUOTA - 5 * price("pg-b"));
      const holds = await fx.ctx.deps.db.selectFrom("quota_holds").selectAll().execute();
      expect(holds).toEqual([]);
    }, 30_000);
  });
}
