// Zhipu (channel type 16, one-api's "Zhipu" with an "id.secret" key): every request carries a JWT signed
// (HS256, header sign_type SIGN) with the key's secret, valid for an hour and cached until shortly before
// it expires. glm-* models use the v4 API, which speaks OpenAI's format; the legacy chatglm_* models use
// the v3 model API (…/model-api/{model}/invoke, or sse-invoke with "add"/"finish" events whose finish
// carries the usage in a `meta:` line).
import type { ProviderAdaptor, ProviderCall, SseEvent } from "../types.ts";
import { sendUpstream } from "../settings.ts";
import { AppError } from "../../../http/errors.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import { openaiAdaptor } from "../openai/index.ts";
import { upstreamUrl } from "../openai/quirks.ts";
import { generatedTextOf } from "../openai/usage.ts";
import {
  ConvertedStream,
  chatCompletion,
  contentText,
  providerErrorMessage,
  rejectErrorBody,
  usageOf,
} from "../openai/chunks.ts";

/** Tokens live this long; a new one is signed when less than RENEW_BEFORE_MS is left. */
export const ZHIPU_TOKEN_TTL_MS = 3600_000;
const RENEW_BEFORE_MS = 300_000;
/** The clock tokens are signed and judged by (milliseconds); replaceable by tests. */
export const zhipuClock = { now: () => Date.now() };

interface Token {
  token: string;
  expiresAt: number;
}
const tokens = new Map<string, Token>();

const b64url = (s: string | Uint8Array) => Buffer.from(s).toString("base64url");

async function sign(id: string, secret: string, now: number): Promise<Token> {
  const expiresAt = now + ZHIPU_TOKEN_TTL_MS;
  const input = `${b64url(JSON.stringify({ alg: "HS256", sign_type: "SIGN" }))}.${b64url(JSON.stringify({ api_key: id, exp: expiresAt, timestamp: now }))}`;
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const sig = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(input)));
  return { token: `${input}.${b64url(sig)}`, expiresAt };
}

/** The JWT for an "id.secret" key: the cached one while it has time left, else a newly signed one. */
export async function zhipuToken(key: string): Promise<string> {
  const dot = key.indexOf(".");
  const id = key.slice(0, dot).trim();
  const secret = key.slice(dot + 1).trim();
  if (dot <= 0 || !secret)
    throw new AppError(500, 'the Zhipu channel key must be "id.secret"', "channel_misconfigured");
  const now = zhipuClock.now();
  const hit = tokens.get(key);
  if (hit && hit.expiresAt - RENEW_BEFORE_MS > now) return hit.token;
  const t = await sign(id, secret, now);
  tokens.set(key, t);
  return t.token;
}

export function clearZhipuTokens(): void {
  tokens.clear();
}

const isLegacy = (call: ProviderCall) => call.mode === "chat" && /^chatglm_/i.test(call.upstreamModel);
/** The host the APIs sit under (a base URL given with the v4 path is tolerated). */
const hostOf = (base: string) => base.replace(/\/api\/paas\/v\d+$/, "");

/** v3 error codes → HTTP status (auth 1000s, balance 1113, parameters 1200s, limits 1300s). */
function zhipuStatus(code: number): number {
  if (code >= 1000 && code < 1100) return 401;
  if (code === 1113) return 402;
  if ([1302, 1303, 1305].includes(code)) return 429;
  if (code >= 1200 && code < 1400) return 400;
  return 500;
}

/** v3 answers quote the content as a JSON string. */
function unquote(s: string): string {
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) {
    try {
      return JSON.parse(s);
    } catch {
      return s.slice(1, -1);
    }
  }
  return s;
}

class ZhipuV3Stream extends ConvertedStream {
  event(ev: SseEvent): string {
    if (ev.event === "error" || ev.event === "interrupted")
      return this.error(ev.data || `the upstream stream ended with ${ev.event}`);
    let out = this.text(ev.data);
    if (ev.event === "finish") {
      const meta = /(?:^|\n)meta:\s?(.*)/.exec(ev.raw)?.[1];
      if (meta) {
        try {
          const m = JSON.parse(meta);
          this.found =
            usageOf(m?.usage?.prompt_tokens, m?.usage?.completion_tokens, m?.usage?.total_tokens) ?? this.found;
        } catch {}
      }
      out += this.finish("stop");
    }
    return out;
  }
}

export const zhipuAdaptor: ProviderAdaptor = {
  kind: "zhipu",
  supports: (mode) => mode === "chat" || mode === "embeddings" || mode === "images",
  async buildRequest(call, body) {
    const jwt = await zhipuToken(call.key);
    const host = hostOf(call.baseUrl);
    if (!isLegacy(call)) {
      return {
        url: upstreamUrl(`${host}/api/paas/v4`, call.mode),
        headers: { "content-type": "application/json", authorization: `Bearer ${jwt}` },
        body: JSON.stringify(body),
      };
    }
    const prompt = (Array.isArray(body?.messages) ? body.messages : []).map((m: any) => ({
      role: m?.role === "assistant" ? "assistant" : "user",
      content: contentText(m?.content),
    }));
    const out: Record<string, unknown> = { prompt, incremental: true };
    if (typeof body?.temperature === "number") out.temperature = Math.min(1, Math.max(0.01, body.temperature));
    if (typeof body?.top_p === "number") out.top_p = body.top_p;
    const method = call.stream ? "sse-invoke" : "invoke";
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: call.stream ? "text/event-stream" : "application/json",
      authorization: jwt,
    };
    return {
      url: `${host}/api/paas/v3/model-api/${encodeURIComponent(call.upstreamModel)}/${method}`,
      headers,
      body: JSON.stringify(out),
    };
  },
  async send(call, url, init) {
    const res = await sendUpstream(call, url, init);
    if (!isLegacy(call)) return res;
    return rejectErrorBody(res, (j) =>
      j && j.success === false
        ? { status: zhipuStatus(Number(j.code)), message: String(j.msg ?? "upstream error"), code: j.code }
        : null,
    );
  },
  parseResponse(call, json) {
    if (!isLegacy(call)) return openaiAdaptor.parseResponse(call, json);
    const d = json?.data ?? {};
    const content = (Array.isArray(d.choices) ? d.choices : [])
      .map((c: any) => unquote(String(c?.content ?? "")))
      .join("");
    const usage = usageOf(d.usage?.prompt_tokens, d.usage?.completion_tokens, d.usage?.total_tokens);
    return { body: chatCompletion(call.requestModel, { content }, "stop", usage, d.task_id || undefined), usage };
  },
  generatedText: (call, json) =>
    isLegacy(call)
      ? (json?.data?.choices ?? []).map((c: any) => unquote(String(c?.content ?? ""))).join("")
      : generatedTextOf(json),
  passThroughJson: (call) => !isLegacy(call) && openaiAdaptor.passThroughJson!(call),
  streamMapper: (call) => (isLegacy(call) ? new ZhipuV3Stream(call) : openaiAdaptor.streamMapper(call)),
  errorMessage: providerErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[16],
  async fetchModels(baseUrl, key) {
    const res = await fetch(`${hostOf(baseUrl)}/api/paas/v4/models`, {
      headers: { authorization: `Bearer ${await zhipuToken(key)}` },
    });
    if (!res.ok) throw new Error(`the upstream model list answered ${res.status}`);
    const j: any = await res.json();
    return (Array.isArray(j?.data) ? j.data : []).map((m: any) => String(m.id)).filter(Boolean);
  },
};
