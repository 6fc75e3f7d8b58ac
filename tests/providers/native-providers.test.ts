// What each provider with its own wire format needs beyond a plain chat: Spark's signed websocket and its
// versions, Baidu's access token (cached, renewed near expiry, fetched anew when refused), Zhipu's JWT
// expiry, Dify's events and conversations, custom full URLs with {model}, host-only base URLs, Cohere's
// and DashScope's native endpoints, the providers' own error bodies, channel tests and balances, and the
// retired PaLM2 type.
import { afterEach, describe, expect, test } from "bun:test";
import { NEW_USER_QUOTA, logsOf, ratios, sharedRelayFixture } from "../relay/fixtures.ts";
import { startNativeUpstreams } from "../mocks/native-upstreams.ts";
import { BAIDU_TEXT } from "../mocks/baidu-upstream.ts";
import { verifyZhipuJwt } from "../mocks/zhipu-upstream.ts";
import { SPARK_TEXT } from "../mocks/spark-upstream.ts";
import { DIFY_TEXT } from "../mocks/dify-upstream.ts";
import { WAV_BYTES } from "../mocks/dashscope-upstream.ts";
import { baiduClock, clearBaiduTokens } from "../../server/relay/providers/baidu/index.ts";
import { ZHIPU_TOKEN_TTL_MS, clearZhipuTokens, zhipuClock } from "../../server/relay/providers/zhipu/index.ts";
import { sparkEndpoint, sparkSignedUrl, sparkVersion } from "../../server/relay/providers/spark/index.ts";
import { aliPolling } from "../../server/relay/providers/ali/index.ts";
import { apiRoot, customUrl, quirkBase } from "../../server/relay/providers/openai/quirks.ts";
import { probeChannel, readBalance, upstreamModels } from "../../server/relay/probe.ts";
import type { Channel } from "../../db/schema.ts";

const up = sharedRelayFixture(async (fx) => {
  const u = startNativeUpstreams();
  const ch = async (type: number, key: string, base: string, models: string[], extra: Record<string, unknown> = {}) =>
    fx.channel({ type, key, base_url: base, models, ...extra });
  ids.spark = await ch(
    18,
    "spark-app|spark-secret|spark-key",
    u.spark.url,
    ["SparkDesk", "SparkDesk-v3.5", "spark-128k"],
    { model_mapping: { "spark-128k": "SparkDesk" } },
  );
  ids.sparkPro = await ch(18, "spark-app|spark-secret|spark-key", u.spark.url, ["spark-pro"], {
    other: "pro-128k",
    model_mapping: { "spark-pro": "SparkDesk" },
  });
  ids.sparkBadApp = await ch(18, "other-app|spark-secret|spark-key", u.spark.url, ["spark-badapp"], {
    model_mapping: { "spark-badapp": "SparkDesk" },
  });
  ids.sparkBadSecret = await ch(18, "spark-app|wrong|spark-key", u.spark.url, ["spark-badsecret"], {
    model_mapping: { "spark-badsecret": "SparkDesk" },
  });
  ids.baidu = await ch(15, "baidu-id|baidu-secret", u.baidu.url, [
    "ERNIE-3.5-8K",
    "ERNIE-4.0-8K",
    "Embedding-V1",
    "ERNIE-Unknown",
  ]);
  ids.baiduBad = await ch(15, "baidu-id|nope", u.baidu.url, ["baidu-bad"], {
    model_mapping: { "baidu-bad": "ERNIE-3.5-8K" },
  });
  ids.zhipu = await ch(16, "zp-id.zp-secret", u.zhipu.url, ["chatglm_turbo", "chatglm_missing", "glm-4"]);
  ids.dify = await ch(37, "app-dify", u.dify.url, ["dify"]);
  ids.custom = await ch(
    8,
    "sk-compat",
    `${u.compat.url}/deploy/{model}/chat/completions?api-version=1`,
    ["custom-a", "custom-emb"],
    { model_mapping: { "custom-a": "real-a", "custom-emb": "real-emb" } },
  );
  ids.customHost = await ch(8, "sk-compat", u.compat.url, ["custom-host"]);
  ids.zhipu4Full = await ch(26, "sk-compat", `${u.compat.url}/api/paas/v4`, ["glm-4-full"]);
  ids.cloudflareNoAccount = await ch(39, "sk-compat", u.compat.url, ["cf-noaccount"]);
  ids.cloudflareFull = await ch(39, "sk-compat", `${u.compat.url}/client/v4/accounts/acct-9/ai/v1`, ["cf-full"]);
  ids.cohere = await ch(34, "co-key", u.cohere.url, ["command-r", "rerank-v3.5", "embed-english-v3.0"]);
  ids.cohereBad = await ch(34, "bad-key", u.cohere.url, ["cohere-bad"], {
    model_mapping: { "cohere-bad": "command-r" },
  });
  ids.ali = await ch(17, "sk-dashscope", u.dashscope.url, ["gte-rerank", "wanx-v1", "qwen-tts", "text-embedding-v3"]);
  ids.aliOldBase = await ch(17, "sk-dashscope", `${u.dashscope.url}/compatible-mode`, ["qwen-old-base"]);
  ids.tencentBad = await ch(23, "1300|AKIDtencent|wrong-secret", u.tencent.url, ["hunyuan-bad"], {
    model_mapping: { "hunyuan-bad": "hunyuan-lite" },
  });
  ids.tencentEmb = await ch(23, "1300|AKIDtencent|tc-secret", u.tencent.url, ["hunyuan-embedding"]);
  ids.aiproxy = await ch(21, "ap-key", u.aiproxy.url, ["aiproxy-ok"], {
    other: "lib-1",
    model_mapping: { "aiproxy-ok": "gpt-4o-mini" },
  });
  ids.aiproxyNoLib = await ch(21, "ap-key", u.aiproxy.url, ["aiproxy-nolib"], {
    other: "lib-x",
    model_mapping: { "aiproxy-nolib": "gpt-4o-mini" },
  });
  ids.palm = await ch(11, "palm-key", "", ["chat-bison-001"]);
  const all = [
    "SparkDesk",
    "SparkDesk-v3.5",
    "spark-128k",
    "spark-pro",
    "spark-badapp",
    "spark-badsecret",
    "ERNIE-3.5-8K",
    "ERNIE-4.0-8K",
    "Embedding-V1",
    "ERNIE-Unknown",
    "baidu-bad",
    "chatglm_turbo",
    "chatglm_missing",
    "glm-4",
    "dify",
    "custom-a",
    "custom-emb",
    "custom-host",
    "glm-4-full",
    "cf-noaccount",
    "cf-full",
    "command-r",
    "embed-english-v3.0",
    "cohere-bad",
    "gte-rerank",
    "qwen-tts",
    "text-embedding-v3",
    "qwen-old-base",
    "hunyuan-bad",
    "hunyuan-embedding",
    "aiproxy-ok",
    "aiproxy-nolib",
    "chat-bison-001",
  ];
  await ratios(fx, all, 1, 2);
  await fx.option("ModelPrice", JSON.stringify({ "rerank-v3.5": 0.002, "wanx-v1": 0.02 }));
  const user = await fx.user(NEW_USER_QUOTA);
  session.userId = user.id;
  session.key = (await fx.token(user.id, { remain_quota: NEW_USER_QUOTA })).key;
  const other = await fx.user(NEW_USER_QUOTA);
  session.otherKey = (await fx.token(other.id, { remain_quota: NEW_USER_QUOTA })).key;
  return u;
});
const ids: Record<string, number> = {};
const session = { userId: 0, key: "", otherKey: "" };

const chat = (model: string, extra: Record<string, unknown> = {}, key = session.key) =>
  up.fx.call("/v1/chat/completions", key, { model, messages: [{ role: "user", content: "Hi" }], ...extra });
const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as any });
const streamText = async (r: Response) =>
  (await r.text())
    .split("\n")
    .filter((l) => l.startsWith("data: {"))
    .map((l) => JSON.parse(l.slice(6)));
const channelRow = (id: number) =>
  up.fx.ctx.deps.db
    .selectFrom("channels")
    .selectAll()
    .where("id", "=", id)
    .executeTakeFirstOrThrow() as Promise<Channel>;

afterEach(() => {
  baiduClock.now = () => Math.floor(Date.now() / 1000);
  zhipuClock.now = () => Date.now();
});

describe("iFlytek Spark (websocket)", () => {
  test("the version comes from the model name, else the channel's other, else v2.1; each has its path and domain", async () => {
    expect(sparkVersion("SparkDesk-v3.5", "v2.1")).toBe("v3.5");
    expect(sparkVersion("Spark-Max", "")).toBe("v3.5");
    expect(sparkVersion("SparkDesk", "v4.0")).toBe("v4.0");
    expect(sparkVersion("SparkDesk", "")).toBe("v2.1");
    expect(sparkEndpoint("v2.1")).toEqual({ path: "/v2.1/chat", domain: "generalv2" });
    expect(sparkEndpoint("v3.1-128K")).toEqual({ path: "/chat/pro-128k", domain: "pro-128k" });

    const spark = up.spark;
    for (const [model, path, domain] of [
      ["SparkDesk", "/v2.1/chat", "generalv2"],
      ["SparkDesk-v3.5", "/v3.5/chat", "generalv3.5"],
      ["spark-pro", "/chat/pro-128k", "pro-128k"],
    ]) {
      const r = await json(await chat(model!));
      expect(r.status).toBe(200);
      expect(r.body.choices[0].message.content).toBe(SPARK_TEXT);
      expect(r.body.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7 });
      expect(spark.handshakes.at(-1)).toEqual({ path: path!, ok: true });
      expect(spark.frames.at(-1)).toMatchObject({
        header: { app_id: "spark-app", uid: `user-${session.userId}` },
        parameter: { chat: { domain } },
        payload: { message: { text: [{ role: "user", content: "Hi" }] } },
      });
    }
  });

  test("the URL is signed as iFlytek documents: authorization names the API key, algorithm and signed headers", async () => {
    const url = new URL(
      await sparkSignedUrl(
        "wss://spark-api.xf-yun.com",
        "/v3.5/chat",
        "key-1",
        "secret-1",
        "Mon, 01 Jan 2024 00:00:00 GMT",
      ),
    );
    expect(url.host).toBe("spark-api.xf-yun.com");
    expect(url.searchParams.get("host")).toBe("spark-api.xf-yun.com");
    expect(url.searchParams.get("date")).toBe("Mon, 01 Jan 2024 00:00:00 GMT");
    const auth = Buffer.from(url.searchParams.get("authorization")!, "base64").toString();
    expect(auth).toMatch(
      /^api_key="key-1", algorithm="hmac-sha256", headers="host date request-line", signature="[A-Za-z0-9+/=]+"$/,
    );
  });

  test("a stream arrives piece by piece and carries the final frame's usage", async () => {
    const chunks = await streamText(
      await chat("SparkDesk-v3.5", { stream: true, stream_options: { include_usage: true } }),
    );
    expect(chunks.map((c) => c.choices?.[0]?.delta?.content ?? "").join("")).toBe(SPARK_TEXT);
    expect(chunks.filter((c) => c.choices?.[0]?.delta?.content).length).toBe(3);
    expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7 });
  });

  test("an error frame (wrong app id) and a refused handshake (wrong secret) come back with their status and message", async () => {
    const badApp = await json(await chat("spark-badapp"));
    expect(badApp.status).toBe(401);
    expect(badApp.body.error.message).toContain("appid cannot match apikey");
    const badSecret = await json(await chat("spark-badsecret", { stream: true }));
    expect(badSecret.status).toBe(401);
    expect(badSecret.body.error.message).toContain("HMAC signature cannot be verified");
    expect(up.spark.handshakes.at(-1)?.ok).toBe(false);
  });
});

describe("Baidu Wenxin v1 (access token)", () => {
  test("the token is fetched once and reused; embeddings go to their endpoint", async () => {
    clearBaiduTokens();
    const before = up.baidu.issued.length;
    expect((await json(await chat("ERNIE-3.5-8K"))).body.choices[0].message.content).toBe(BAIDU_TEXT);
    expect((await json(await chat("ERNIE-4.0-8K"))).status).toBe(200);
    expect(up.baidu.issued.length - before).toBe(1);
    expect(up.baidu.last().path).toBe("/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/completions_pro");
    const emb = await json(
      await up.fx.call("/v1/embeddings", session.key, { model: "Embedding-V1", input: ["a", "b"] }),
    );
    expect(emb.status).toBe(200);
    expect(emb.body.data.map((d: any) => d.embedding)).toEqual([
      [0.5, 0.25],
      [0.5, 0.25],
    ]);
    expect(up.baidu.last().path).toBe("/rpc/2.0/ai_custom/v1/wenxinworkshop/embeddings/embedding-v1");
    expect(up.baidu.last().body).toEqual({ input: ["a", "b"] });
  });

  test("a token Baidu refuses (error 110) is fetched anew and the request sent once more", async () => {
    await chat("ERNIE-3.5-8K");
    const before = up.baidu.issued.length;
    up.baidu.revoke();
    const r = await json(await chat("ERNIE-3.5-8K"));
    expect(r.status).toBe(200);
    expect(r.body.choices[0].message.content).toBe(BAIDU_TEXT);
    expect(up.baidu.issued.length - before).toBe(1);
    expect(new URLSearchParams(up.baidu.last().search).get("access_token")).toBe(up.baidu.issued.at(-1)!);
  });

  test("a token within an hour of its expiry is renewed before use", async () => {
    await chat("ERNIE-3.5-8K");
    const before = up.baidu.issued.length;
    const now = Math.floor(Date.now() / 1000);
    baiduClock.now = () => now + 30 * 86400 - 1800;
    expect((await chat("ERNIE-3.5-8K")).status).toBe(200);
    expect(up.baidu.issued.length - before).toBe(1);
    expect((await chat("ERNIE-3.5-8K")).status).toBe(200);
    expect(up.baidu.issued.length - before).toBe(1);
  });

  test("wrong credentials and Baidu's error codes come back with a fitting status and Baidu's message", async () => {
    const bad = await json(await chat("baidu-bad"));
    expect(bad.status).toBe(401);
    expect(bad.body.error.message).toContain("unknown client id");
    const unknown = await json(await chat("ERNIE-Unknown"));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toContain("ernie-unknown does not exist");
  });

  test("tools go as functions and a function_call comes back as a tool call", async () => {
    const tools = [
      { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } },
    ];
    const r = await json(await chat("ERNIE-3.5-8K", { tools }));
    expect(up.baidu.last().body.functions).toEqual([
      { name: "get_weather", description: "", parameters: { type: "object", properties: {} } },
    ]);
    expect(r.body.choices[0]).toMatchObject({
      finish_reason: "tool_calls",
      message: { tool_calls: [{ type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
    });
  });
});

describe("Zhipu (JWT from id.secret)", () => {
  test("the token is signed with the secret, reused while valid, and signed anew before it expires", async () => {
    clearZhipuTokens();
    const t0 = Date.now();
    zhipuClock.now = () => t0;
    await chat("chatglm_turbo");
    await chat("glm-4");
    const [a, b] = up.zhipu.claims.slice(-2);
    expect(a).toEqual(b!);
    expect(a!.api_key).toBe("zp-id");
    expect(a!.exp - a!.timestamp).toBe(ZHIPU_TOKEN_TTL_MS);
    // The upstream's clock passes the token's expiry: the old token is refused ...
    up.zhipu.now = () => a!.exp + 1000;
    const stale = await fetch(`${up.zhipu.url}/api/paas/v4/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${up.zhipu.requests.at(-1)!.headers.authorization!.slice(7)}`,
        "content-type": "application/json",
      },
      body: "{}",
    });
    expect(stale.status).toBe(401);
    // ... and the gateway, whose clock has passed it too, signs a new one.
    zhipuClock.now = () => a!.exp + 1000;
    const r = await json(await chat("chatglm_turbo"));
    expect(r.status).toBe(200);
    const c = up.zhipu.claims.at(-1)!;
    expect(c.timestamp).toBe(a!.exp + 1000);
    expect(verifyZhipuJwt(up.zhipu.requests.at(-1)!.headers.authorization!, "zp-secret")).toEqual(c);
    up.zhipu.now = () => Date.now();
  });

  test("a v3 error answer (success: false) comes back with a fitting status and Zhipu's message", async () => {
    const r = await json(await chat("chatglm_missing"));
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe("模型不存在");
  });
});

describe("Dify (chat-messages)", () => {
  test("a stream: workflow, node and ping events carry nothing, agent thoughts come as reasoning, message_end's usage is billed", async () => {
    const chunks = await streamText(
      await up.fx.call("/v1/chat/completions", session.key, {
        model: "dify",
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "think first" }],
      }),
    );
    expect(chunks.map((c) => c.choices?.[0]?.delta?.reasoning_content ?? "").join("")).toBe("Checking my notes.");
    expect(chunks.map((c) => c.choices?.[0]?.delta?.content ?? "").join("")).toBe(DIFY_TEXT);
    expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7 });
    expect(up.dify.last().body).toMatchObject({
      query: "think first",
      response_mode: "streaming",
      user: `user-${session.userId}`,
      inputs: {},
    });
  });

  test("an error event ends the stream with the app's message", async () => {
    const text = await (
      await up.fx.call("/v1/chat/completions", session.key, {
        model: "dify",
        stream: true,
        messages: [{ role: "user", content: "please fail" }],
      })
    ).text();
    expect(text).toContain("Your quota for the model provider has been exhausted.");
  });

  test("a follow-up turn continues the user's Dify conversation with only its new message; another user's does not", async () => {
    const first = await json(
      await up.fx.call("/v1/chat/completions", session.key, {
        model: "dify",
        messages: [{ role: "user", content: "Hello there" }],
      }),
    );
    expect(first.body.choices[0].message.content).toBe(DIFY_TEXT);
    const conversation = [...up.dify.conversations.keys()].at(-1);
    expect(up.dify.conversations.get(conversation!)).toBe(`user-${session.userId}`);
    const history = [
      { role: "user", content: "Hello there" },
      { role: "assistant", content: DIFY_TEXT },
      { role: "user", content: "And then?" },
    ];
    expect((await up.fx.call("/v1/chat/completions", session.key, { model: "dify", messages: history })).status).toBe(
      200,
    );
    expect(up.dify.last().body).toMatchObject({
      query: "And then?",
      conversation_id: conversation,
      user: `user-${session.userId}`,
    });
    // The same history from another user starts a conversation of its own, with the whole transcript.
    await up.fx.call("/v1/chat/completions", session.otherKey, { model: "dify", messages: history });
    expect(up.dify.last().body.conversation_id).toBeUndefined();
    expect(up.dify.last().body.query).toContain(
      "USER: \nHello there\nASSISTANT: \nHello from Dify.\nUSER: \nAnd then?",
    );
  });
});

describe("OpenAI-compatible addresses", () => {
  test("custom channels: the base URL is the full request URL, {model} replaced; other endpoints swap the tail; a bare host is an API root", async () => {
    expect((await chat("custom-a")).status).toBe(200);
    expect(up.compat.last().path).toBe("/deploy/real-a/chat/completions");
    expect(up.compat.last().search).toBe("?api-version=1");
    expect((await up.fx.call("/v1/embeddings", session.key, { model: "custom-emb", input: "x" })).status).toBe(200);
    expect(up.compat.last().path).toBe("/deploy/real-emb/embeddings");
    expect((await chat("custom-host")).status).toBe(200);
    expect(up.compat.last().path).toBe("/v1/chat/completions");
    expect(customUrl({ mode: "chat", upstreamModel: "m" }, "https://h.example/v1")).toBe(
      "https://h.example/v1/chat/completions",
    );
    // The model list and the billing API sit at the URL's API root.
    expect(apiRoot(8, "https://h.example/deploy/{model}/chat/completions?api-version=1")).toBe(
      "https://h.example/deploy",
    );
    expect(apiRoot(8, "https://h.example/v1/chat/completions")).toBe("https://h.example/v1");
    expect(await upstreamModels(await channelRow(ids.custom!), "sk-compat")).toEqual(["compat-model"]);
    expect(up.compat.last().path).toBe("/deploy/v1/models");
  });

  test("a versioned base URL is used as given; host-only ones get the provider's path; retired hosts are replaced", async () => {
    expect((await chat("glm-4-full")).status).toBe(200);
    expect(up.compat.last().path).toBe("/api/paas/v4/chat/completions");
    expect(quirkBase(26, "https://open.bigmodel.cn")).toBe("https://open.bigmodel.cn/api/paas/v4");
    expect(quirkBase(45, "https://ark.cn-beijing.volces.com")).toBe("https://ark.cn-beijing.volces.com/api/v3");
    expect(quirkBase(46, "https://qianfan.baidubce.com")).toBe("https://qianfan.baidubce.com/v2");
    expect(quirkBase(46, "https://qianfan.baidubce.com/v2")).toBe("https://qianfan.baidubce.com/v2");
    expect(quirkBase(19, "https://ai.360.cn")).toBe("https://api.360.cn");
    expect(quirkBase(35, "https://api.minimax.chat")).toBe("https://api.minimaxi.com");
  });

  test("Cloudflare: the account's AI path, from the account ID or as given; without an account ID the call says so", async () => {
    expect((await chat("cf-full")).status).toBe(200);
    expect(up.compat.last().path).toBe("/client/v4/accounts/acct-9/ai/v1/chat/completions");
    const none = await json(await chat("cf-noaccount"));
    expect(none.status).toBe(500);
    expect(none.body.error.message).toContain("account ID");
  });

  test("DashScope: a base URL still holding the old /compatible-mode path works", async () => {
    expect((await chat("qwen-old-base")).status).toBe(200);
    expect(up.dashscope.last().path).toBe("/compatible-mode/v1/chat/completions");
  });
});

describe("Cohere v2", () => {
  test("rerank: documents as given (echoed back), billed per search; embeddings with input_type", async () => {
    const r = await json(
      await up.fx.call("/v1/rerank", session.key, {
        model: "rerank-v3.5",
        query: "q",
        documents: ["a", "b", "c"],
        top_n: 2,
      }),
    );
    expect(r.status).toBe(200);
    expect(up.cohere.last()).toMatchObject({
      path: "/v2/rerank",
      body: { model: "rerank-v3.5", query: "q", documents: ["a", "b", "c"], top_n: 2 },
    });
    expect(r.body.results).toEqual([
      { index: 0, relevance_score: 0.9, document: { text: "a" } },
      { index: 1, relevance_score: 0.8, document: { text: "b" } },
    ]);
    const e = await json(
      await up.fx.call("/v1/embeddings", session.key, { model: "embed-english-v3.0", input: ["x", "y"] }),
    );
    expect(up.cohere.last()).toMatchObject({
      path: "/v2/embed",
      body: { texts: ["x", "y"], input_type: "search_document", embedding_types: ["float"] },
    });
    expect(e.body).toMatchObject({
      object: "list",
      data: [{ index: 0, embedding: [0.1, 0.2] }, { index: 1 }],
      usage: { prompt_tokens: 3 },
    });
  });

  test("tools: the tool plan comes back as reasoning and the call as a tool call; a wrong key is Cohere's 401 message", async () => {
    const tools = [
      { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } },
    ];
    const r = await json(await chat("command-r", { tools }));
    expect(r.body.choices[0]).toMatchObject({
      finish_reason: "tool_calls",
      message: {
        reasoning_content: "I will look it up.",
        tool_calls: [{ id: "tc_1", function: { name: "get_weather" } }],
      },
    });
    const bad = await json(await chat("cohere-bad"));
    expect(bad.status).toBe(401);
    expect(bad.body.error.message).toBe("invalid api token");
  });
});

describe("DashScope native endpoints", () => {
  test("rerank, a text-to-image task polled to its end, speech as the linked audio file, embeddings by the compatible mode", async () => {
    aliPolling.firstMs = 5;
    aliPolling.everyMs = 5;
    const rr = await json(
      await up.fx.call("/v1/rerank", session.key, { model: "gte-rerank", query: "q", documents: ["a", "b"] }),
    );
    expect(rr.body).toMatchObject({
      results: [{ index: 0, relevance_score: 0.8, document: { text: "a" } }, { index: 1 }],
      usage: { total_tokens: 14 },
    });
    expect(up.dashscope.last().body).toEqual({
      model: "gte-rerank",
      input: { query: "q", documents: ["a", "b"] },
      parameters: { return_documents: true },
    });
    const img = await json(
      await up.fx.call("/v1/images/generations", session.key, { model: "wanx-v1", prompt: "a cat", size: "1024x1024" }),
    );
    expect(img.status).toBe(200);
    expect(img.body.data).toEqual([{ url: `${up.dashscope.url}/files/image-1.png` }]);
    const submit = up.dashscope.requests.find((r) => r.path.endsWith("/image-synthesis"))!;
    expect(submit.body).toEqual({
      model: "wanx-v1",
      input: { prompt: "a cat" },
      parameters: { n: 1, size: "1024*1024" },
    });
    const speech = await up.fx.call("/v1/audio/speech", session.key, {
      model: "qwen-tts",
      input: "你好",
      voice: "alloy",
    });
    expect(speech.status).toBe(200);
    expect(new Uint8Array(await speech.arrayBuffer())).toEqual(WAV_BYTES);
    expect(up.dashscope.requests.find((r) => r.path.endsWith("/multimodal-generation/generation"))!.body).toEqual({
      model: "qwen-tts",
      input: { text: "你好", voice: "Cherry" },
    });
    expect((await up.fx.call("/v1/embeddings", session.key, { model: "text-embedding-v3", input: "x" })).status).toBe(
      200,
    );
    expect(up.dashscope.last().path).toBe("/compatible-mode/v1/embeddings");
  });
});

describe("Tencent and AI Proxy errors, embeddings and balance", () => {
  test("a wrong TC3 signature is Tencent's AuthFailure as a 401; embeddings use GetEmbedding", async () => {
    const bad = await json(await chat("hunyuan-bad"));
    expect(bad.status).toBe(401);
    expect(bad.body.error.message).toContain("could not be validated");
    const e = await json(await up.fx.call("/v1/embeddings", session.key, { model: "hunyuan-embedding", input: ["a"] }));
    expect(e.body.data).toEqual([{ object: "embedding", index: 0, embedding: [0.5, 0.5] }]);
    expect(up.tencent.last().headers["x-tc-action"]).toBe("GetEmbedding");
  });

  test("an unknown knowledge base is AI Proxy's message; the balance is the account's points", async () => {
    const r = await json(await chat("aiproxy-nolib"));
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe("library not found");
    expect(await readBalance(await channelRow(ids.aiproxy!), "ap-key")).toBe(42.5);
  });
});

describe("PaLM2 (retired)", () => {
  test("calls answer 410 with what happened and the type to use instead, in the caller's format", async () => {
    const r = await json(await chat("chat-bison-001"));
    expect(r.status).toBe(410);
    expect(r.body.error.message).toContain("PaLM2 API has been shut down");
    expect(r.body.error.message).toContain("Google Gemini channel (type 24)");
    const c = await up.fx.call("/v1/messages", session.key, {
      model: "chat-bison-001",
      max_tokens: 10,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(c.status).toBe(410);
    expect(((await c.json()) as any).type).toBe("error");
  });
});

describe("channel tests through each native format", () => {
  test("Spark, Baidu, Zhipu, Dify and a Cohere rerank model answer the test; PaLM2 says why it cannot", async () => {
    const signal = new AbortController().signal;
    for (const [id, model] of [
      [ids.spark, "SparkDesk"],
      [ids.baidu, "ERNIE-3.5-8K"],
      [ids.zhipu, "chatglm_turbo"],
      [ids.dify, "dify"],
      [ids.cohere, "rerank-v3.5"],
      [ids.ali, "gte-rerank"],
    ] as const) {
      const out = await probeChannel(up.fx.ctx.deps, await channelRow(id!), model, signal);
      expect({ model, ok: out.ok, message: out.message }).toEqual({ model, ok: true, message: "" });
    }
    const palm = await probeChannel(up.fx.ctx.deps, await channelRow(ids.palm!), "chat-bison-001", signal);
    expect(palm.ok).toBe(false);
    expect(palm.message).toContain("Google Gemini");
  });
});

describe("billing of converted answers", () => {
  test("every call above was billed from the upstream's usage or the gateway's count", async () => {
    await up.fx.flush();
    const logs = (await logsOf(up.fx, session.userId)).filter((l) => l.type === 2);
    expect(logs.length).toBeGreaterThan(20);
    for (const l of logs) expect(l.quota).toBeGreaterThan(0);
  });
});
