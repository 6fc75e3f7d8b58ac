// Baidu Wenxin (ERNIE) v1 API (channel type 15): the key is "API Key|Secret Key", exchanged for an OAuth
// access token (valid ~30 days) that goes on every request's query string. Each model has its own
// endpoint name. Errors come back as a 200 with {error_code, error_msg}; an invalid or expired token
// (110, 111) is fetched anew and the request sent once more.
import type { ProviderAdaptor, ProviderCall, SseEvent } from "../types.ts";
import { AppError } from "../../../http/errors.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import {
  ConvertedStream,
  chatCompletion,
  contentText,
  providerErrorMessage,
  rejectErrorBody,
  usageOf,
  type ToolCall,
} from "../openai/chunks.ts";
import { channelFetch, sendUpstream } from "../settings.ts";
import { usageFrom } from "../openai/usage.ts";

/** Model name → endpoint of the chat API (names one-api users have in their channels; others lower-cased). */
const CHAT_ENDPOINTS: Record<string, string> = {
  "ERNIE-4.0": "completions_pro",
  "ERNIE-Bot-4": "completions_pro",
  "ERNIE-4.0-8K": "completions_pro",
  "ERNIE-Bot": "completions",
  "ERNIE-3.5-8K": "completions",
  "ERNIE-Bot-turbo": "eb-instant",
  "ERNIE-Speed": "ernie_speed",
  "ERNIE-Speed-8K": "ernie_speed",
  "ERNIE-Speed-128K": "ernie-speed-128k",
  "ERNIE-3.5-8K-0205": "ernie-3.5-8k-0205",
  "ERNIE-3.5-8K-1222": "ernie-3.5-8k-1222",
  "ERNIE-Bot-8K": "ernie_bot_8k",
  "ERNIE-3.5-4K-0205": "ernie-3.5-4k-0205",
  "ERNIE-Lite-8K": "ernie-lite-8k",
  "ERNIE-Lite-8K-0922": "eb-instant",
  "ERNIE-Lite-8K-0308": "ernie-lite-8k",
  "ERNIE-Tiny-8K": "ernie-tiny-8k",
  "BLOOMZ-7B": "bloomz_7b1",
  "ERNIE-4.0-Turbo-8K": "ernie-4.0-turbo-8k",
};
const EMBEDDING_ENDPOINTS: Record<string, string> = {
  "Embedding-V1": "embedding-v1",
  "bge-large-zh": "bge_large_zh",
  "bge-large-en": "bge_large_en",
  "tao-8k": "tao_8k",
};

export function baiduUrl(base: string, mode: string, model: string, token: string): string {
  const kind = mode === "embeddings" ? "embeddings" : "chat";
  const table = kind === "embeddings" ? EMBEDDING_ENDPOINTS : CHAT_ENDPOINTS;
  const endpoint = table[model] ?? model.toLowerCase();
  return `${base}/rpc/2.0/ai_custom/v1/wenxinworkshop/${kind}/${encodeURIComponent(endpoint)}?access_token=${encodeURIComponent(token)}`;
}

// ---- access tokens ----------------------------------------------------------------------------------

/** A token with less than this left is renewed before use. */
const RENEW_BEFORE_SECONDS = 3600;
interface Token {
  token: string;
  expiresAt: number;
}
const tokens = new Map<string, Token>();
const inflight = new Map<string, Promise<string>>();
/** The clock tokens are judged by (seconds); replaceable by tests. */
export const baiduClock = { now: () => Math.floor(Date.now() / 1000) };

function credentials(key: string): [string, string] {
  const [id, secret] = key.split("|").map((s) => s.trim());
  if (!id || !secret)
    throw new AppError(500, 'the Baidu Wenxin channel key must be "API Key|Secret Key"', "channel_misconfigured");
  return [id, secret];
}

async function fetchToken(call: ProviderCall): Promise<Token> {
  const [id, secret] = credentials(call.key);
  const url = `${call.baseUrl}/oauth/2.0/token?grant_type=client_credentials&client_id=${encodeURIComponent(id)}&client_secret=${encodeURIComponent(secret)}`;
  const res = await channelFetch(call, url, {
    method: "POST",
    headers: { accept: "application/json" },
    signal: AbortSignal.timeout(20_000),
  });
  let j: any = {};
  try {
    j = await res.json();
  } catch {}
  if (!res.ok || typeof j.access_token !== "string" || !j.access_token) {
    throw new AppError(
      401,
      `Baidu access token request failed: ${j.error_description ?? j.error ?? `status ${res.status}`}`,
      "invalid_api_key",
    );
  }
  const ttl = Number(j.expires_in) > 0 ? Number(j.expires_in) : 30 * 86400;
  return { token: j.access_token, expiresAt: baiduClock.now() + ttl };
}

/** The cached access token of the call's key, fetched (once for concurrent callers) when missing or nearly expired. */
export async function accessToken(call: ProviderCall, fresh = false): Promise<string> {
  const id = `${call.baseUrl}|${call.key}`;
  const hit = tokens.get(id);
  if (!fresh && hit && hit.expiresAt - RENEW_BEFORE_SECONDS > baiduClock.now()) return hit.token;
  let p = inflight.get(id);
  if (!p) {
    if (fresh) tokens.delete(id);
    p = fetchToken(call)
      .then((t) => (tokens.set(id, t), t.token))
      .finally(() => inflight.delete(id));
    inflight.set(id, p);
  }
  return p;
}

export function clearBaiduTokens(): void {
  tokens.clear();
}

// ---- requests and answers ---------------------------------------------------------------------------

/** OpenAI chat → Wenxin: system messages go to `system`, tools to `functions`, tool results to function messages. */
export function baiduChatBody(body: any, stream: boolean): Record<string, unknown> {
  const messages: any[] = [];
  const system: string[] = [];
  for (const m of Array.isArray(body?.messages) ? body.messages : []) {
    if (m?.role === "system" || m?.role === "developer") system.push(contentText(m.content));
    else if (m?.role === "tool")
      messages.push({ role: "function", name: m.name ?? "tool", content: contentText(m.content) });
    else if (m?.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length) {
      const f = m.tool_calls[0].function ?? {};
      messages.push({
        role: "assistant",
        content: contentText(m.content),
        function_call: { name: f.name, arguments: f.arguments ?? "{}" },
      });
    } else messages.push({ role: m?.role === "assistant" ? "assistant" : "user", content: contentText(m?.content) });
  }
  const out: Record<string, unknown> = { messages, stream };
  if (system.length) out.system = system.join("\n");
  if (typeof body?.temperature === "number") out.temperature = Math.min(1, Math.max(0.01, body.temperature));
  if (typeof body?.top_p === "number") out.top_p = body.top_p;
  const max = body?.max_completion_tokens ?? body?.max_tokens;
  if (typeof max === "number" && max > 0) out.max_output_tokens = Math.max(2, max);
  if (typeof body?.user === "string") out.user_id = body.user;
  if (body?.stop) out.stop = Array.isArray(body.stop) ? body.stop : [body.stop];
  if (Array.isArray(body?.tools) && body.tools.length) {
    out.functions = body.tools
      .filter((t: any) => t?.type === "function")
      .map((t: any) => ({
        name: t.function.name,
        description: t.function.description ?? "",
        parameters: t.function.parameters ?? {},
      }));
  }
  return out;
}

function toolCallsOf(fc: any): ToolCall[] | undefined {
  if (!fc?.name) return undefined;
  return [
    {
      id: `call_${crypto.randomUUID().replace(/-/g, "").slice(0, 24)}`,
      type: "function",
      function: {
        name: fc.name,
        arguments: typeof fc.arguments === "string" ? fc.arguments : JSON.stringify(fc.arguments ?? {}),
      },
    },
  ];
}

function finishOf(j: any): string {
  if (j?.function_call?.name) return "tool_calls";
  if (j?.finish_reason === "length" || j?.is_truncated) return "length";
  if (j?.finish_reason === "content_filter") return "content_filter";
  return "stop";
}

/** Error codes of the Wenxin API and the HTTP status they mean. */
export function baiduErrorStatus(code: number): number {
  if ([6, 13, 14, 15, 100, 110, 111].includes(code)) return 401;
  if ([4, 17, 18, 19, 336501, 336502].includes(code)) return 429;
  if (code >= 336000 && code < 337000 && code !== 336100) return 400;
  return 500;
}

const TOKEN_ERRORS = new Set([110, 111]);
const errorOf = (j: any) =>
  typeof j?.error_code === "number" && j.error_code !== 0
    ? {
        status: baiduErrorStatus(j.error_code),
        message: String(j.error_msg ?? `error ${j.error_code}`),
        code: j.error_code,
      }
    : null;

class BaiduStream extends ConvertedStream {
  protected onJson(j: any, ev: SseEvent): string {
    if (j?.error_code) return this.error(String(j.error_msg ?? `error ${j.error_code}`));
    const u = usageOf(j?.usage?.prompt_tokens, j?.usage?.completion_tokens, j?.usage?.total_tokens);
    if (u) this.found = u;
    let out = this.text(typeof j?.result === "string" ? j.result : "");
    const calls = toolCallsOf(j?.function_call);
    if (calls)
      out += this.tool(0, { id: calls[0]!.id, name: calls[0]!.function.name, arguments: calls[0]!.function.arguments });
    if (j?.is_end) out += this.finish(finishOf(j));
    return out;
  }
}

export const baiduAdaptor: ProviderAdaptor = {
  kind: "baidu",
  supports: (mode) => mode === "chat" || mode === "embeddings",
  async buildRequest(call, body) {
    const token = await accessToken(call);
    const url = baiduUrl(call.baseUrl, call.mode, call.upstreamModel, token);
    const out =
      call.mode === "embeddings"
        ? {
            input: (Array.isArray(body?.input) ? body.input : [body?.input]).map(String),
            ...(typeof body?.user === "string" ? { user_id: body.user } : {}),
          }
        : baiduChatBody(body, call.stream);
    return { url, headers: { "content-type": "application/json" }, body: JSON.stringify(out) };
  },
  async send(call, url, init) {
    let res = await rejectErrorBody(await sendUpstream(call, url, init), errorOf);
    if (res.status === 401) {
      const code = (
        await res
          .clone()
          .json()
          .catch(() => null)
      )?.error?.code;
      if (TOKEN_ERRORS.has(Number(code))) {
        // The token was revoked or expired early: one fresh token, one more try.
        const token = await accessToken(call, true);
        const retry = url.replace(/access_token=[^&]*/, `access_token=${encodeURIComponent(token)}`);
        res = await rejectErrorBody(await sendUpstream(call, retry, init), errorOf);
      }
    }
    return res;
  },
  parseResponse(call, json) {
    if (call.mode === "embeddings") {
      const data = (Array.isArray(json?.data) ? json.data : []).map((d: any, i: number) => ({
        object: "embedding",
        index: d.index ?? i,
        embedding: d.embedding,
      }));
      return {
        body: {
          object: "list",
          data,
          model: call.requestModel,
          usage: json?.usage ?? { prompt_tokens: 0, total_tokens: 0 },
        },
        usage: usageFrom(json),
      };
    }
    const usage = usageOf(json?.usage?.prompt_tokens, json?.usage?.completion_tokens, json?.usage?.total_tokens);
    const tool_calls = toolCallsOf(json?.function_call);
    return {
      body: chatCompletion(
        call.requestModel,
        { content: typeof json?.result === "string" ? json.result : "", tool_calls },
        finishOf(json),
        usage,
        json?.id,
      ),
      usage,
    };
  },
  generatedText: (_call, json) =>
    (typeof json?.result === "string" ? json.result : "")
    + (json?.function_call ? `${json.function_call.name ?? ""}${json.function_call.arguments ?? ""}` : ""),
  streamMapper: (call) => new BaiduStream(call),
  errorMessage: providerErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[15],
};
