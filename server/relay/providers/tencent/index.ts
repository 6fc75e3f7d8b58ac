// Tencent Hunyuan (channel type 23). Hunyuan serves an OpenAI-compatible API
// (https://api.hunyuan.cloud.tencent.com/v1, a bearer API key): keys without "|" go there. Channels imported
// from one-api / new-api hold "AppId|SecretId|SecretKey" (or "SecretId|SecretKey") for Tencent Cloud's
// signed API (hunyuan.tencentcloudapi.com, actions ChatCompletions / GetEmbedding, TC3-HMAC-SHA256); those
// keep working through it. A signed body cannot change afterwards, so this adaptor applies the channel's
// param_override itself.
import type { ProviderAdaptor, ProviderCall, SseEvent } from "../types.ts";
import { sendUpstream } from "../settings.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import { openaiAdaptor } from "../openai/index.ts";
import { upstreamUrl } from "../openai/quirks.ts";
import {
  ConvertedStream,
  chatCompletion,
  contentText,
  providerErrorMessage,
  rejectErrorBody,
  usageOf,
} from "../openai/chunks.ts";
import { withParamOverride } from "../../override.ts";
import { generatedTextOf } from "../openai/usage.ts";

export const HUNYUAN_OPENAI_BASE = "https://api.hunyuan.cloud.tencent.com";
export const HUNYUAN_SIGNED_BASE = "https://hunyuan.tencentcloudapi.com";
const VERSION = "2023-09-01";

/** SecretId and SecretKey of a signed-API key ("AppId|SecretId|SecretKey" or "SecretId|SecretKey"), or null for an API key. */
export function tencentSecrets(key: string): { secretId: string; secretKey: string } | null {
  const parts = key.split("|").map((s) => s.trim());
  if (parts.length === 3) return { secretId: parts[1]!, secretKey: parts[2]! };
  if (parts.length === 2) return { secretId: parts[0]!, secretKey: parts[1]! };
  return null;
}

const signed = (call: ProviderCall) => tencentSecrets(call.key) !== null;

/** The base URL for the call's API: an address stored for the other API is swapped for this one's default. */
function baseFor(call: ProviderCall): string {
  const base = call.baseUrl;
  if (signed(call)) return base === HUNYUAN_OPENAI_BASE || !base ? HUNYUAN_SIGNED_BASE : base;
  return base === HUNYUAN_SIGNED_BASE ? HUNYUAN_OPENAI_BASE : base;
}

const hex = (b: ArrayBuffer) => Buffer.from(b).toString("hex");
const sha256 = async (s: string) => hex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
async function hmac(key: string | Uint8Array, msg: string): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey(
    "raw",
    typeof key === "string" ? new TextEncoder().encode(key) : (key as Uint8Array<ArrayBuffer>),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, new TextEncoder().encode(msg)));
}

/** TC3-HMAC-SHA256 headers for a POST of `payload` to `host` (Tencent Cloud API v3 signature, service hunyuan). */
export async function tc3Headers(
  host: string,
  action: string,
  payload: string,
  secretId: string,
  secretKey: string,
  timestamp = Math.floor(Date.now() / 1000),
) {
  const service = "hunyuan";
  const date = new Date(timestamp * 1000).toISOString().slice(0, 10);
  const canonical = `POST\n/\n\ncontent-type:application/json\nhost:${host}\n\ncontent-type;host\n${await sha256(payload)}`;
  const scope = `${date}/${service}/tc3_request`;
  const toSign = `TC3-HMAC-SHA256\n${timestamp}\n${scope}\n${await sha256(canonical)}`;
  const kDate = await hmac("TC3" + secretKey, date);
  const kService = await hmac(kDate, service);
  const kSigning = await hmac(kService, "tc3_request");
  const signature = Buffer.from(await hmac(kSigning, toSign)).toString("hex");
  return {
    "content-type": "application/json",
    authorization: `TC3-HMAC-SHA256 Credential=${secretId}/${scope}, SignedHeaders=content-type;host, Signature=${signature}`,
    "x-tc-action": action,
    "x-tc-version": VERSION,
    "x-tc-timestamp": String(timestamp),
  };
}

/** Tencent Cloud error codes → HTTP status. */
export function tencentStatus(code: string): number {
  if (code.startsWith("AuthFailure")) return 401;
  if (code.includes("LimitExceeded")) return 429;
  if (code.startsWith("InvalidParameter") || code.startsWith("MissingParameter") || code.startsWith("UnknownParameter"))
    return 400;
  if (code.startsWith("ResourceInsufficient") || code.includes("Arrear")) return 402;
  if (code.startsWith("UnauthorizedOperation") || code.includes("ServiceNotActivated")) return 403;
  return 500;
}

const errorOf = (j: any) => {
  const e = j?.Response?.Error ?? j?.Error;
  return e?.Code
    ? { status: tencentStatus(String(e.Code)), message: String(e.Message ?? e.Code), code: String(e.Code) }
    : null;
};

function nativeBody(call: ProviderCall, body: any): Record<string, unknown> {
  if (call.mode === "embeddings")
    return { InputList: (Array.isArray(body?.input) ? body.input : [body?.input]).map(String) };
  const out: Record<string, unknown> = {
    Model: call.upstreamModel,
    Messages: (Array.isArray(body?.messages) ? body.messages : []).map((m: any) => ({
      Role: m?.role === "developer" ? "system" : (m?.role ?? "user"),
      Content: contentText(m?.content),
    })),
    Stream: call.stream,
  };
  if (typeof body?.temperature === "number") out.Temperature = body.temperature;
  if (typeof body?.top_p === "number") out.TopP = body.top_p;
  return out;
}

class HunyuanStream extends ConvertedStream {
  protected onJson(j: any, ev: SseEvent): string {
    const e = errorOf(j);
    if (e) return this.error(e.message);
    const u = usageOf(j?.Usage?.PromptTokens, j?.Usage?.CompletionTokens, j?.Usage?.TotalTokens);
    if (u) this.found = u;
    let out = "";
    for (const c of j?.Choices ?? []) {
      out += this.text(typeof c?.Delta?.Content === "string" ? c.Delta.Content : "");
      if (c?.FinishReason)
        out += this.finish(
          c.FinishReason === "length" ? "length" : c.FinishReason === "sensitive" ? "content_filter" : "stop",
        );
    }
    return out;
  }
}

export const tencentAdaptor: ProviderAdaptor = {
  kind: "tencent",
  supports: (mode) => mode === "chat" || mode === "embeddings",
  appliesParamOverride: true,
  async buildRequest(call, body) {
    const base = baseFor(call);
    const secrets = tencentSecrets(call.key);
    if (!secrets) {
      const out = withParamOverride(body, call.paramOverride);
      return {
        url: upstreamUrl(base, call.mode),
        headers: { "content-type": "application/json", authorization: `Bearer ${call.key}` },
        body: JSON.stringify(out),
      };
    }
    const payload = JSON.stringify(withParamOverride(nativeBody(call, body), call.paramOverride));
    const host = new URL(base).host;
    const headers = await tc3Headers(
      host,
      call.mode === "embeddings" ? "GetEmbedding" : "ChatCompletions",
      payload,
      secrets.secretId,
      secrets.secretKey,
    );
    return { url: `${base}/`, headers, body: payload };
  },
  async send(call, url, init) {
    const res = await sendUpstream(call, url, init);
    return signed(call) ? rejectErrorBody(res, errorOf) : res;
  },
  parseResponse(call, json) {
    if (!signed(call)) return openaiAdaptor.parseResponse(call, json);
    const r = json?.Response ?? {};
    if (call.mode === "embeddings") {
      const data = (r.Data ?? []).map((d: any, i: number) => ({
        object: "embedding",
        index: d.Index ?? i,
        embedding: d.Embedding,
      }));
      const usage = usageOf(r.Usage?.PromptTokens ?? r.Usage?.TotalTokens, 0, r.Usage?.TotalTokens);
      return {
        body: {
          object: "list",
          data,
          model: call.requestModel,
          usage: { prompt_tokens: usage?.prompt_tokens ?? 0, total_tokens: usage?.total_tokens ?? 0 },
        },
        usage,
      };
    }
    const choice = r.Choices?.[0];
    const usage = usageOf(r.Usage?.PromptTokens, r.Usage?.CompletionTokens, r.Usage?.TotalTokens);
    const finish =
      choice?.FinishReason === "length" ? "length" : choice?.FinishReason === "sensitive" ? "content_filter" : "stop";
    return {
      body: chatCompletion(
        call.requestModel,
        { content: String(choice?.Message?.Content ?? "") },
        finish,
        usage,
        r.Id || undefined,
      ),
      usage,
    };
  },
  generatedText: (call, json) =>
    signed(call) ? String(json?.Response?.Choices?.[0]?.Message?.Content ?? "") : generatedTextOf(json),
  passThroughJson: (call) => !signed(call) && openaiAdaptor.passThroughJson!(call),
  streamMapper: (call) => (signed(call) ? new HunyuanStream(call) : openaiAdaptor.streamMapper(call)),
  errorMessage: providerErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[23],
  async fetchModels(baseUrl, key) {
    if (tencentSecrets(key))
      throw new Error("the signed Tencent Cloud API has no model list; use an API key to fetch models");
    const base = baseUrl === HUNYUAN_SIGNED_BASE ? HUNYUAN_OPENAI_BASE : baseUrl;
    const res = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    if (!res.ok) throw new Error(`the upstream model list answered ${res.status}`);
    const j: any = await res.json();
    return (Array.isArray(j?.data) ? j.data : []).map((m: any) => String(m.id)).filter(Boolean);
  },
};
