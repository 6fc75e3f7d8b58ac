// A stand-in for Baidu's Wenxin (ERNIE) v1 API: the OAuth token endpoint (client credentials) and the
// wenxinworkshop chat and embedding endpoints, which take the token on the query string and answer errors
// as a 200 with {error_code, error_msg}, as Baidu does. revoke() invalidates every token issued so far
// (a token the server no longer accepts: error 110).
import { serve, type MockUpstream } from "./recorder.ts";

export const BAIDU_TEXT = "Hello from Wenxin.";
export const BAIDU_USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
const ENDPOINTS = new Set(["completions_pro", "completions", "ernie-speed-128k", "ernie-lite-8k", "eb-instant"]);

export interface BaiduMock extends MockUpstream {
  /** access tokens issued, in order */
  issued: string[];
  revoke(): void;
  /** the expires_in of the next tokens (seconds) */
  expiresIn: number;
}

export function startBaiduUpstream(creds = { id: "baidu-id", secret: "baidu-secret" }): BaiduMock {
  const valid = new Set<string>();
  const mock = serve((_req, rec) => {
    const q = new URLSearchParams(rec.search);
    if (rec.path === "/oauth/2.0/token") {
      if (
        q.get("grant_type") !== "client_credentials"
        || q.get("client_id") !== creds.id
        || q.get("client_secret") !== creds.secret
      ) {
        return Response.json({ error: "invalid_client", error_description: "unknown client id" }, { status: 401 });
      }
      const token = `24.tok${mock.issued.length + 1}.2592000.1700000000.282335-1`;
      mock.issued.push(token);
      valid.add(token);
      return Response.json({
        refresh_token: "25.x",
        expires_in: mock.expiresIn,
        session_key: "s",
        access_token: token,
        scope: "public",
        session_secret: "ss",
      });
    }
    const token = q.get("access_token") ?? "";
    if (!valid.has(token))
      return Response.json({ error_code: 110, error_msg: "Access token invalid or no longer valid" });
    const m = /^\/rpc\/2\.0\/ai_custom\/v1\/wenxinworkshop\/(chat|embeddings)\/([^/]+)$/.exec(rec.path);
    if (!m) return Response.json({ error_code: 3, error_msg: "Unsupported openapi method" });
    const body = rec.body ?? {};
    if (m[1] === "embeddings") {
      if (m[2] !== "embedding-v1") return Response.json({ error_code: 336005, error_msg: "invalid model" });
      const input: string[] = Array.isArray(body.input) ? body.input : [];
      return Response.json({
        id: "as-emb",
        object: "embedding_list",
        created: 1700000000,
        data: input.map((_, index) => ({ object: "embedding", embedding: [0.5, 0.25], index })),
        usage: { prompt_tokens: 4, total_tokens: 4 },
      });
    }
    if (!ENDPOINTS.has(m[2]!))
      return Response.json({ error_code: 336005, error_msg: `the model endpoint ${m[2]} does not exist` });
    if (!Array.isArray(body.messages) || body.messages.length % 2 === 0)
      return Response.json({ error_code: 336006, error_msg: "the length of messages must be an odd number" });
    const fn = Array.isArray(body.functions) && body.functions.length ? body.functions[0].name : null;
    const base = {
      id: "as-mock",
      object: "chat.completion",
      created: 1700000000,
      need_clear_history: false,
      is_truncated: false,
    };
    if (!body.stream) {
      if (fn)
        return Response.json({
          ...base,
          result: "",
          function_call: { name: fn, arguments: '{"city":"Paris"}', thoughts: "look it up" },
          finish_reason: "function_call",
          usage: BAIDU_USAGE,
        });
      return Response.json({ ...base, result: BAIDU_TEXT, finish_reason: "normal", usage: BAIDU_USAGE });
    }
    const parts = ["Hello", " from", " Wenxin."];
    const frames = parts.map(
      (p, i) =>
        `data: ${JSON.stringify({ ...base, sentence_id: i, is_end: i === parts.length - 1, result: p, finish_reason: "normal", usage: { prompt_tokens: 11, completion_tokens: i === parts.length - 1 ? 7 : i + 1, total_tokens: i === parts.length - 1 ? 18 : 12 + i } })}\n\n`,
    );
    return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
  }) as BaiduMock;
  mock.issued = [];
  mock.expiresIn = 2592000;
  mock.revoke = () => valid.clear();
  return mock;
}
