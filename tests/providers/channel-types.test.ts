// Every relay channel type of the catalogue, end to end: an OpenAI chat call and stream, a Claude
// /v1/messages call and stream and a Gemini generateContent call and stream go through the gateway to a
// mock of that provider's wire format, reach it at the provider's URL with its auth, and the answer comes
// back in the client's format, billed (ratio 1, completion ratio 2: quota = prompt + 2 × completion).
import { describe, expect, test } from "bun:test";
import { NEW_USER_QUOTA, logsOf, ratios, sharedRelayFixture } from "../relay/fixtures.ts";
import type { Recorded } from "../mocks/recorder.ts";
import { COMPAT_TEXT, startCompatUpstream } from "../mocks/openai-compatible-upstream.ts";
import { startNativeUpstreams } from "../mocks/native-upstreams.ts";
import { BAIDU_TEXT } from "../mocks/baidu-upstream.ts";
import { ZHIPU_V3_TEXT } from "../mocks/zhipu-upstream.ts";
import { SPARK_TEXT } from "../mocks/spark-upstream.ts";
import { AIPROXY_TEXT } from "../mocks/aiproxy-upstream.ts";
import { HUNYUAN_TEXT } from "../mocks/tencent-upstream.ts";
import { COHERE_TEXT } from "../mocks/cohere-upstream.ts";
import { DIFY_TEXT } from "../mocks/dify-upstream.ts";
import { QWEN_TEXT } from "../mocks/dashscope-upstream.ts";
import { CLAUDE_TEXT, startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { GEMINI_TEXT, startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { AZURE_TEXT, startAzureUpstream } from "../mocks/azure-upstream.ts";
import { startBedrockUpstream } from "../mocks/bedrock-upstream.ts";
import { makeServiceAccount, startVertexUpstream } from "../mocks/vertex-upstream.ts";
import { CHANNEL_TYPES } from "../../server/catalogue/index.ts";
import { clearBaiduTokens } from "../../server/relay/providers/baidu/index.ts";

const creds = { accessKeyId: "AKIDTYPES", secretAccessKey: "types-secret", region: "us-east-1" };
const QIANFAN_KEY = "bce-v3/ALTAK-abc/def";

const up = sharedRelayFixture(async () => {
  clearBaiduTokens();
  const vertex = startVertexUpstream();
  const sa = await makeServiceAccount(vertex.url + "/token");
  vertex.trust(sa);
  return {
    ...startNativeUpstreams(),
    qianfan: startCompatUpstream({
      auth: (r) => r.headers.authorization === `Bearer ${QIANFAN_KEY}` && r.headers.appid === "app-7",
    }),
    claude: startClaudeUpstream(),
    gemini: startGeminiUpstream(),
    azure: startAzureUpstream(),
    bedrock: startBedrockUpstream(creds),
    vertex: Object.assign(vertex, { sa }),
  };
});

type Upstreams = Omit<typeof up, "fx">;
interface Case {
  type: number;
  label?: string;
  /** the model the upstream is asked for (clients ask for a unique alias mapped to it) */
  model: string;
  key: (u: Upstreams) => string;
  base: (u: Upstreams) => string;
  other?: string;
  mock: (u: Upstreams) => { requests: Recorded[] } | null;
  /** the upstream path of a chat call (non-stream, stream) */
  path?: (stream: boolean) => string | RegExp;
  auth?: (rec: Recorded) => boolean;
  text: string;
  /** the upstream's usage (prompt, completion); null: the gateway counts */
  usage?: [number, number] | null;
  /** what the upstream saw, for upstreams that are not plain HTTP (Spark's websocket) */
  check?: (u: Upstreams) => void;
}

const bearer = (key: string) => (r: Recorded) => r.headers.authorization === `Bearer ${key}`;
const compat = (
  type: number,
  path = "/v1/chat/completions",
  base = (u: Upstreams) => u.compat.url,
  other?: string,
): Case => ({
  type,
  model: `upstream-${type}`,
  key: () => "sk-compat",
  base,
  other,
  mock: (u) => u.compat,
  path: () => path,
  auth: bearer("sk-compat"),
  text: COMPAT_TEXT,
  usage: [11, 7],
});

const CASES: Case[] = [
  compat(1),
  {
    type: 3,
    model: "gpt-4o",
    key: () => "azure-key",
    base: (u) => u.azure.url,
    mock: (u) => u.azure,
    path: () => "/openai/deployments/gpt-4o/chat/completions",
    auth: (r) => r.headers["api-key"] === "azure-key",
    text: AZURE_TEXT,
  },
  compat(4),
  compat(8, "/gateway/upstream-8/v1/chat/completions", (u) => `${u.compat.url}/gateway/{model}/v1/chat/completions`),
  {
    type: 14,
    model: "claude-sonnet-4-20250514",
    key: () => "claude-key",
    base: (u) => u.claude.url,
    mock: (u) => u.claude,
    path: () => "/v1/messages",
    auth: (r) => r.headers["x-api-key"] === "claude-key",
    text: CLAUDE_TEXT,
  },
  {
    type: 15,
    model: "ERNIE-3.5-8K",
    key: () => "baidu-id|baidu-secret",
    base: (u) => u.baidu.url,
    mock: (u) => u.baidu,
    path: () => "/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/completions",
    auth: (r) => /access_token=24\.tok/.test(r.search),
    text: BAIDU_TEXT,
    usage: [11, 7],
  },
  {
    type: 16,
    label: "legacy chatglm (v3)",
    model: "chatglm_turbo",
    key: () => "zp-id.zp-secret",
    base: (u) => u.zhipu.url,
    mock: (u) => u.zhipu,
    path: (s) => `/api/paas/v3/model-api/chatglm_turbo/${s ? "sse-invoke" : "invoke"}`,
    auth: (r) => /^ey[\w-]+\.[\w-]+\.[\w-]+$/.test(r.headers.authorization ?? ""),
    text: ZHIPU_V3_TEXT,
    usage: [11, 7],
  },
  {
    type: 16,
    label: "glm-4 (v4)",
    model: "glm-4",
    key: () => "zp-id.zp-secret",
    base: (u) => u.zhipu.url,
    mock: (u) => u.zhipu,
    path: () => "/api/paas/v4/chat/completions",
    auth: (r) => /^Bearer ey/.test(r.headers.authorization ?? ""),
    text: "Hello from GLM-4.",
    usage: [11, 7],
  },
  {
    type: 17,
    model: "qwen-plus",
    key: () => "sk-dashscope",
    base: (u) => u.dashscope.url,
    mock: (u) => u.dashscope,
    path: () => "/compatible-mode/v1/chat/completions",
    auth: bearer("sk-dashscope"),
    text: QWEN_TEXT,
    usage: [11, 7],
  },
  {
    type: 18,
    model: "SparkDesk-v3.5",
    key: () => "spark-app|spark-secret|spark-key",
    base: (u) => u.spark.url,
    mock: () => null,
    text: SPARK_TEXT,
    usage: [11, 7],
    check(u) {
      // six signed handshakes on the version's path, six request frames with the app id, domain and question
      expect(u.spark.handshakes.slice(-6)).toEqual(Array(6).fill({ path: "/v3.5/chat", ok: true }));
      for (const f of u.spark.frames.slice(-6)) {
        expect(f).toMatchObject({ header: { app_id: "spark-app" }, parameter: { chat: { domain: "generalv3.5" } } });
        expect(JSON.stringify(f.payload.message.text)).toContain(question);
      }
    },
  },
  compat(19),
  compat(20, "/api/v1/chat/completions", (u) => `${u.compat.url}/api`),
  {
    type: 21,
    model: "gpt-4o-mini",
    key: () => "ap-key",
    other: "lib-1",
    base: (u) => u.aiproxy.url,
    mock: (u) => u.aiproxy,
    path: () => "/api/library/ask",
    auth: bearer("ap-key"),
    text: `${AIPROXY_TEXT}\n\nReferences:\n1. [Guide](https://docs.invalid/guide)\n`,
    usage: null,
  },
  compat(22, "/api/v1/chat/completions", (u) => `${u.compat.url}/api`),
  { ...compat(23), label: "API key (OpenAI-compatible)" },
  {
    type: 23,
    label: "AppId|SecretId|SecretKey (signed API)",
    model: "hunyuan-lite",
    key: () => "1300000000|AKIDtencent|tc-secret",
    base: (u) => u.tencent.url,
    mock: (u) => u.tencent,
    path: () => "/",
    auth: (r) => r.headers.authorization?.startsWith("TC3-HMAC-SHA256 Credential=AKIDtencent/") === true,
    text: HUNYUAN_TEXT,
    usage: [11, 7],
  },
  {
    type: 24,
    model: "gemini-2.5-flash",
    key: () => "gemini-key",
    base: (u) => u.gemini.url,
    mock: (u) => u.gemini,
    path: (s) => `/v1beta/models/gemini-2.5-flash:${s ? "streamGenerateContent" : "generateContent"}`,
    text: GEMINI_TEXT,
  },
  compat(25),
  compat(26, "/api/paas/v4/chat/completions"),
  compat(31),
  {
    type: 33,
    model: "claude-3-5-sonnet-20240620",
    key: () => `${creds.accessKeyId}|${creds.secretAccessKey}|${creds.region}`,
    base: (u) => u.bedrock.url,
    mock: (u) => u.bedrock,
    path: (s) => new RegExp(`^/model/[^/]+/${s ? "invoke-with-response-stream" : "invoke"}$`),
    text: CLAUDE_TEXT,
  },
  {
    type: 34,
    model: "command-r",
    key: () => "co-key",
    base: (u) => u.cohere.url,
    mock: (u) => u.cohere,
    path: () => "/v2/chat",
    auth: bearer("co-key"),
    text: COHERE_TEXT,
    usage: [11, 7],
  },
  compat(35),
  {
    type: 37,
    model: "dify",
    key: () => "app-dify",
    base: (u) => u.dify.url,
    mock: (u) => u.dify,
    path: () => "/v1/chat-messages",
    auth: bearer("app-dify"),
    text: DIFY_TEXT,
    usage: [11, 7],
  },
  compat(38),
  compat(39, "/client/v4/accounts/acct-1/ai/v1/chat/completions", undefined, "acct-1"),
  compat(40),
  {
    type: 41,
    model: "gemini-2.5-flash",
    key: (u) => JSON.stringify(u.vertex.sa.json),
    base: (u) => u.vertex.url,
    mock: (u) => u.vertex,
    path: (s) =>
      new RegExp(`/publishers/google/models/gemini-2\\.5-flash:${s ? "streamGenerateContent" : "generateContent"}$`),
    text: GEMINI_TEXT,
  },
  compat(42),
  compat(43),
  compat(44),
  compat(45, "/api/v3/chat/completions"),
  {
    type: 46,
    model: "ernie-4.0-8k-latest",
    key: () => `${QIANFAN_KEY}|app-7`,
    base: (u) => u.qianfan.url,
    mock: (u) => u.qianfan,
    path: () => "/v2/chat/completions",
    auth: (r) => r.headers.appid === "app-7",
    text: COMPAT_TEXT,
    usage: [11, 7],
  },
  compat(47),
  compat(48),
];

const question = "Say hello to the test.";
const openai = (model: string, stream: boolean) => ({ model, stream, messages: [{ role: "user", content: question }] });
const claude = (model: string, stream: boolean) => ({
  model,
  stream,
  max_tokens: 256,
  messages: [{ role: "user", content: question }],
});
const gemini = { contents: [{ role: "user", parts: [{ text: question }] }] };

function sseData(text: string): any[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(5).trim())
    .filter((d) => d && d !== "[DONE]")
    .map((d) => JSON.parse(d));
}
const geminiText = (obj: any) =>
  (obj?.candidates?.[0]?.content?.parts ?? []).map((p: any) => (p.thought ? "" : (p.text ?? ""))).join("");

/** The six client calls of a case: the answer text each got, in order. */
async function sixCalls(key: string, model: string): Promise<{ name: string; status: number; text: string }[]> {
  const out: { name: string; status: number; text: string }[] = [];
  const call = (path: string, body: unknown) => up.fx.call(path, key, body);
  for (const stream of [false, true]) {
    const r = await call("/v1/chat/completions", openai(model, stream));
    const t = await r.text();
    out.push({
      name: `openai${stream ? " stream" : ""}`,
      status: r.status,
      text:
        r.status !== 200
          ? t
          : stream
            ? sseData(t)
                .map((c) => c.choices?.[0]?.delta?.content ?? "")
                .join("")
            : JSON.parse(t).choices[0].message.content,
    });
  }
  for (const stream of [false, true]) {
    const r = await call("/v1/messages", claude(model, stream));
    const t = await r.text();
    out.push({
      name: `claude${stream ? " stream" : ""}`,
      status: r.status,
      text:
        r.status !== 200
          ? t
          : stream
            ? sseData(t)
                .filter((e) => e.type === "content_block_delta" && e.delta?.type === "text_delta")
                .map((e) => e.delta.text)
                .join("")
            : JSON.parse(t)
                .content.filter((b: any) => b.type === "text")
                .map((b: any) => b.text)
                .join(""),
    });
  }
  for (const stream of [false, true]) {
    const r = await call(
      `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
      gemini,
    );
    const t = await r.text();
    out.push({
      name: `gemini${stream ? " stream" : ""}`,
      status: r.status,
      text: r.status !== 200 ? t : stream ? sseData(t).map(geminiText).join("") : geminiText(JSON.parse(t)),
    });
  }
  return out;
}

describe("every relay channel type of the catalogue has a case here", () => {
  test("all types but the task-only ones (2, 5, 36) and the retired PaLM2 (11)", () => {
    const covered = new Set(CASES.map((c) => c.type));
    const missing = CHANNEL_TYPES.filter(
      (t) => !covered.has(t.id) && t.kind !== "midjourney" && t.kind !== "suno" && t.kind !== "retired",
    ).map((t) => t.id);
    expect(missing).toEqual([]);
  });
});

describe("chat and stream through each channel type, for OpenAI, Claude and Gemini clients", () => {
  for (const c of CASES) {
    test(`type ${c.type} ${CHANNEL_TYPES.find((t) => t.id === c.type)!.name}${c.label ? ` — ${c.label}` : ""}`, async () => {
      const fx = up.fx;
      const alias = `ct-${c.type}-${c.model}-${c.label ? CASES.indexOf(c) : 0}`;
      await fx.channel({
        type: c.type,
        key: c.key(up),
        base_url: c.base(up),
        other: c.other,
        models: [alias],
        model_mapping: { [alias]: c.model },
      });
      await ratios(fx, [alias], 1, 2);
      const user = await fx.user(NEW_USER_QUOTA);
      const token = await fx.token(user.id, { remain_quota: NEW_USER_QUOTA });
      const mock = c.mock(up);
      const seenBefore = mock?.requests.length ?? 0;
      const answers = await sixCalls(token.key, alias);
      for (const a of answers) {
        expect({ call: a.name, status: a.status }).toEqual({ call: a.name, status: 200 });
        expect({ call: a.name, text: a.text }).toEqual({ call: a.name, text: c.text });
      }
      if (mock) {
        const sent = mock.requests
          .slice(seenBefore)
          .filter((r) => !r.path.startsWith("/oauth/") && r.path !== "/token");
        expect(sent.length).toBeGreaterThanOrEqual(6);
        for (const [i, r] of sent.entries()) {
          const stream = i % 2 === 1;
          const path = c.path?.(stream);
          if (typeof path === "string") expect(r.path).toBe(path);
          else if (path) expect(r.path).toMatch(path);
          if (c.auth) expect(c.auth(r)).toBe(true);
          expect(r.raw).toContain(question);
        }
      }
      c.check?.(up);
      await fx.flush();
      const logs = (await logsOf(fx, user.id)).filter((l) => l.type === 2);
      expect(logs).toHaveLength(6);
      for (const log of logs) {
        expect(log.quota).toBeGreaterThan(0);
        if (c.usage === undefined) continue;
        expect(log.quota).toBe(log.prompt_tokens + 2 * log.completion_tokens);
        if (c.usage) expect([log.prompt_tokens, log.completion_tokens]).toEqual(c.usage);
      }
    });
  }
});
