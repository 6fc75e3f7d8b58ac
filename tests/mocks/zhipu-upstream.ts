// A stand-in for Zhipu's BigModel API as a legacy channel (type 16) uses it: every request carries a JWT
// (HS256, header sign_type SIGN, claims api_key / exp / timestamp in milliseconds) signed with the key's
// secret; an expired or badly signed token is refused. v4 (/api/paas/v4/…) speaks OpenAI's format with
// "Bearer <jwt>"; v3 (/api/paas/v3/model-api/{model}/invoke and /sse-invoke) takes the bare token and
// answers {code, msg, success, data} or "add"/"finish" events whose finish carries a meta: line.
import { createHmac } from "node:crypto";
import { serve, type MockUpstream } from "./recorder.ts";
import { compatHandler } from "./openai-compatible-upstream.ts";

export const ZHIPU_V3_TEXT = "Hello from ChatGLM.";
const V3_MODELS = new Set(["chatglm_turbo", "chatglm_pro", "chatglm_std", "chatglm_lite"]);
export const ZHIPU_USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

export interface ZhipuMock extends MockUpstream {
  /** the decoded claims of every token seen */
  claims: { api_key: string; exp: number; timestamp: number }[];
  /** what "now" is for the token check (ms) */
  now: () => number;
}

/** The claims of a token if its signature is right for `secret`, else null. */
export function verifyZhipuJwt(token: string, secret: string): any | null {
  const [h, p, s] = token.split(".");
  if (!h || !p || !s) return null;
  const header = JSON.parse(Buffer.from(h, "base64url").toString());
  if (header.alg !== "HS256" || header.sign_type !== "SIGN") return null;
  const expected = createHmac("sha256", secret).update(`${h}.${p}`).digest("base64url");
  return expected === s ? JSON.parse(Buffer.from(p, "base64url").toString()) : null;
}

export function startZhipuUpstream(creds = { id: "zp-id", secret: "zp-secret" }): ZhipuMock {
  const compat = compatHandler({ auth: () => true, text: "Hello from GLM-4." });
  const mock = serve((req, rec) => {
    const legacy = rec.path.startsWith("/api/paas/v3/");
    const raw = String(rec.headers.authorization ?? "");
    const token = legacy ? raw : raw.replace(/^Bearer /, "");
    const claims = verifyZhipuJwt(token, creds.secret);
    if (claims) mock.claims.push(claims);
    const refused =
      !claims || claims.api_key !== creds.id
        ? "身份验证失败。"
        : claims.exp < mock.now()
          ? "令牌已过期或验证不正确！"
          : null;
    if (refused) {
      if (legacy) return Response.json({ code: 1001, msg: refused, success: false });
      return Response.json({ error: { code: "1001", message: refused } }, { status: 401 });
    }
    if (!legacy) {
      if (!rec.path.startsWith("/api/paas/v4/"))
        return Response.json({ error: { code: "404", message: "Not Found" } }, { status: 404 });
      return compat(req, rec);
    }
    const m = /^\/api\/paas\/v3\/model-api\/([^/]+)\/(invoke|sse-invoke)$/.exec(rec.path);
    if (!m || !V3_MODELS.has(m[1]!)) return Response.json({ code: 1211, msg: "模型不存在", success: false });
    if (!Array.isArray(rec.body?.prompt)) return Response.json({ code: 1214, msg: "prompt 参数非法", success: false });
    if (m[2] === "invoke") {
      return Response.json({
        code: 200,
        msg: "操作成功",
        success: true,
        data: {
          request_id: "req-1",
          task_id: "task-1",
          task_status: "SUCCESS",
          choices: [{ role: "assistant", content: JSON.stringify(ZHIPU_V3_TEXT) }],
          usage: ZHIPU_USAGE,
        },
      });
    }
    const frames = ["Hello", " from", " ChatGLM."].map((t, i) => `id: ${i}\nevent: add\ndata: ${t}\n\n`);
    frames.push(
      `id: 3\nevent: finish\ndata: \nmeta: ${JSON.stringify({ task_status: "SUCCESS", usage: ZHIPU_USAGE, task_id: "task-1", request_id: "req-1" })}\n\n`,
    );
    return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
  }) as ZhipuMock;
  mock.claims = [];
  mock.now = () => Date.now();
  return mock;
}
