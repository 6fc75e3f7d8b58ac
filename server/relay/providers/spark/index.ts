// iFlytek Spark (channel type 18): a websocket API. The key is "APPID|APISecret|APIKey"; the connection URL
// is signed with HMAC-SHA256 of host, date and request line (the secret signs, the API key names it). The
// API version comes from the model name (SparkDesk-v3.5) or else the channel's `other` (default v2.1,
// spec 001 §5); each version has its own path and `domain`. One request frame goes up; answer frames come
// down until status 2, the last carrying the usage.
//
// The relay speaks HTTP to adaptors, so send() opens the socket and answers as an HTTP upstream would: an
// SSE stream of the Spark frames (stream calls), or one JSON object of the joined answer; a refused
// handshake or an error frame first becomes an error answer with a fitting status.
import type { ProviderAdaptor, ProviderCall, SseEvent } from "../types.ts";
import { AppError } from "../../../http/errors.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import {
  ConvertedStream,
  chatCompletion,
  contentText,
  errorResponse,
  providerErrorMessage,
  usageOf,
  type ToolCall,
} from "../openai/chunks.ts";

export const SPARK_DEFAULT_VERSION = "v2.1";

const MODEL_VERSIONS: Record<string, string> = {
  "Spark-Lite": "v1.1",
  "Spark-Pro": "v3.1",
  "Spark-Pro-128K": "pro-128k",
  "Spark-Max": "v3.5",
  "Spark-Max-32K": "max-32k",
  "Spark-4.0-Ultra": "v4.0",
};

/** The API version of a call: named by the model (SparkDesk-v3.5, Spark-Max), else the channel's `other`, else v2.1. */
export function sparkVersion(model: string, other: string | null | undefined): string {
  if (MODEL_VERSIONS[model]) return MODEL_VERSIONS[model]!;
  const m = /^SparkDesk-(.+)$/i.exec(model);
  if (m) return m[1]!;
  return (other ?? "").trim() || SPARK_DEFAULT_VERSION;
}

const ALIASES: Record<string, string> = { "v3.1-128k": "pro-128k", "v3.5-32k": "max-32k" };

/** The path and `domain` of an API version. */
export function sparkEndpoint(version: string): { path: string; domain: string } {
  const v = ALIASES[version.toLowerCase()] ?? version;
  switch (v) {
    case "v1.1":
      return { path: "/v1.1/chat", domain: "lite" };
    case "v2.1":
      return { path: "/v2.1/chat", domain: "generalv2" };
    case "v3.1":
      return { path: "/v3.1/chat", domain: "generalv3" };
    case "v3.5":
      return { path: "/v3.5/chat", domain: "generalv3.5" };
    case "v4.0":
      return { path: "/v4.0/chat", domain: "4.0Ultra" };
    case "pro-128k":
      return { path: "/chat/pro-128k", domain: "pro-128k" };
    case "max-32k":
      return { path: "/chat/max-32k", domain: "max-32k" };
    default:
      return { path: `/${v}/chat`, domain: `general${v}` };
  }
}

export function sparkCredentials(key: string): { appId: string; apiSecret: string; apiKey: string } {
  const [appId, apiSecret, apiKey] = key.split("|").map((s) => s.trim());
  if (!appId || !apiSecret || !apiKey)
    throw new AppError(500, 'the iFlytek Spark channel key must be "APPID|APISecret|APIKey"', "channel_misconfigured");
  return { appId, apiSecret, apiKey };
}

async function hmacBase64(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return Buffer.from(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text))).toString("base64");
}

/** The signed websocket URL (iFlytek's Web API authentication), for `date` (an RFC 1123 date). */
export async function sparkSignedUrl(
  base: string,
  path: string,
  apiKey: string,
  apiSecret: string,
  date = new Date().toUTCString(),
): Promise<string> {
  const ws = base.replace(/^http(s?):\/\//, "ws$1://");
  const host = new URL(ws).host;
  const signature = await hmacBase64(apiSecret, `host: ${host}\ndate: ${date}\nGET ${path} HTTP/1.1`);
  const authorization = Buffer.from(
    `api_key="${apiKey}", algorithm="hmac-sha256", headers="host date request-line", signature="${signature}"`,
  ).toString("base64");
  return `${ws}${path}?${new URLSearchParams({ authorization, date, host })}`;
}

/** OpenAI chat → the Spark request frame. */
export function sparkRequest(body: any, appId: string, domain: string, user?: number): Record<string, unknown> {
  const text = (Array.isArray(body?.messages) ? body.messages : []).map((m: any) => ({
    role: m?.role === "assistant" ? "assistant" : m?.role === "system" || m?.role === "developer" ? "system" : "user",
    content: contentText(m?.content),
  }));
  const chat: Record<string, unknown> = { domain };
  if (typeof body?.temperature === "number") chat.temperature = Math.min(1, Math.max(0.01, body.temperature));
  const max = body?.max_completion_tokens ?? body?.max_tokens;
  if (typeof max === "number" && max > 0) chat.max_tokens = max;
  if (typeof body?.top_k === "number") chat.top_k = body.top_k;
  const frame: any = {
    header: { app_id: appId, uid: user !== undefined ? `user-${user}` : undefined },
    parameter: { chat },
    payload: { message: { text } },
  };
  const tools = Array.isArray(body?.tools) ? body.tools.filter((t: any) => t?.type === "function") : [];
  if (tools.length) frame.payload.functions = { text: tools.map((t: any) => t.function) };
  return frame;
}

/** Spark error codes → HTTP status. */
export function sparkStatus(code: number): number {
  if ([11200, 10313, 10312].includes(code)) return 401;
  if ([11201, 11202, 11203].includes(code)) return 429;
  if (code >= 10000 && code < 11000) return 400;
  return 500;
}

const errorFrame = (f: any) =>
  f?.header && Number(f.header.code) !== 0
    ? {
        status: sparkStatus(Number(f.header.code)),
        message: String(f.header.message ?? `error ${f.header.code}`),
        code: f.header.code,
      }
    : null;

/** Why the websocket handshake was refused: the same signed URL over HTTP answers with the reason. */
async function handshakeError(url: string, init: RequestInit): Promise<Response> {
  try {
    const res = await fetch(url.replace(/^ws(s?):\/\//, "http$1://"), {
      headers: { upgrade: "websocket" },
      proxy: (init as any).proxy,
      signal: init.signal,
    } as RequestInit);
    const text = await res.text();
    if (res.status >= 400) return errorResponse(res.status, providerErrorMessage(res.status, text));
  } catch {}
  return errorResponse(502, "the Spark websocket could not be opened");
}

/**
 * One exchange over the socket, answered as an HTTP upstream would: SSE of the frames for streams, the
 * frames merged into one JSON object otherwise.
 */
async function exchange(call: ProviderCall, url: string, init: RequestInit): Promise<Response> {
  const ws = new WebSocket(url, { proxy: (init as any).proxy } as any);
  const queue: any[] = [];
  let wake: (() => void) | null = null;
  let closed = false;
  let failed = false;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  ws.onmessage = (e) => {
    try {
      queue.push(JSON.parse(String(e.data)));
    } catch {}
    notify();
  };
  ws.onerror = () => {
    failed = true;
    notify();
  };
  ws.onclose = () => {
    closed = true;
    notify();
  };
  const abort = () => ws.close();
  init.signal?.addEventListener("abort", abort, { once: true });
  const next = async (): Promise<any | null> => {
    while (!queue.length) {
      if (closed || failed) return null;
      await new Promise<void>((r) => (wake = r));
    }
    return queue.shift();
  };
  const opened = await new Promise<boolean>((resolve) => {
    ws.onopen = () => resolve(true);
    const prevClose = ws.onclose;
    ws.onclose = (e) => {
      prevClose?.call(ws, e);
      resolve(false);
    };
  });
  if (!opened) {
    init.signal?.removeEventListener("abort", abort);
    if (init.signal?.aborted) throw init.signal.reason;
    return handshakeError(url, init);
  }
  ws.send(String(init.body));
  const first = await next();
  const done = () => {
    init.signal?.removeEventListener("abort", abort);
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close();
  };
  if (!first) {
    done();
    if (init.signal?.aborted) throw init.signal.reason;
    return errorResponse(502, "the Spark websocket closed before answering");
  }
  const err = errorFrame(first);
  if (err) {
    done();
    return errorResponse(err.status, err.message, err.code);
  }
  const last = (f: any) => Number(f?.header?.status) === 2 || Number(f?.payload?.choices?.status) === 2;
  if (call.stream) {
    const enc = new TextEncoder();
    let pending: any = first;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const frame = pending ?? (await next());
        pending = null;
        if (!frame) {
          done();
          // A socket that closes before the last frame: the relay sees a stream without its end.
          controller.close();
          return;
        }
        controller.enqueue(enc.encode(`data: ${JSON.stringify(frame)}\n\n`));
        if (last(frame) || errorFrame(frame)) {
          done();
          controller.close();
        }
      },
      cancel: done,
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  }
  // Non-stream: join the frames into one answer.
  let text = "";
  let usage: any = null;
  let functionCall: any = null;
  let complete = false;
  for (let f: any = first; f; f = last(f) ? null : await next()) {
    const e = errorFrame(f);
    if (e) {
      done();
      return errorResponse(e.status, e.message, e.code);
    }
    for (const t of f?.payload?.choices?.text ?? []) {
      if (typeof t?.content === "string") text += t.content;
      if (t?.function_call) functionCall = t.function_call;
    }
    if (f?.payload?.usage?.text) usage = f.payload.usage.text;
    if (last(f)) complete = true;
  }
  done();
  if (!complete) {
    // The relay gave up (timeout, client gone): its own reason, not an upstream failure.
    if (init.signal?.aborted) throw init.signal.reason;
    return errorResponse(502, "the Spark websocket closed before the answer was complete");
  }
  return Response.json({ content: text, function_call: functionCall, usage });
}

function toolCalls(fc: any): ToolCall[] | undefined {
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

class SparkStream extends ConvertedStream {
  protected onJson(f: any, ev: SseEvent): string {
    const e = errorFrame(f);
    if (e) return this.error(e.message);
    let out = "";
    for (const t of f?.payload?.choices?.text ?? []) {
      out += this.text(typeof t?.content === "string" ? t.content : "");
      const calls = toolCalls(t?.function_call);
      if (calls)
        out += this.tool(0, {
          id: calls[0]!.id,
          name: calls[0]!.function.name,
          arguments: calls[0]!.function.arguments,
        });
    }
    const u = f?.payload?.usage?.text;
    if (u) this.found = usageOf(u.prompt_tokens, u.completion_tokens, u.total_tokens);
    if (Number(f?.header?.status) === 2 || Number(f?.payload?.choices?.status) === 2) {
      out += this.finish((f?.payload?.choices?.text ?? []).some((t: any) => t?.function_call) ? "tool_calls" : "stop");
    }
    return out;
  }
}

export const sparkAdaptor: ProviderAdaptor = {
  kind: "spark",
  supports: (mode) => mode === "chat",
  async buildRequest(call, body) {
    const { appId, apiSecret, apiKey } = sparkCredentials(call.key);
    const { path, domain } = sparkEndpoint(sparkVersion(call.upstreamModel, call.channel.other));
    return {
      url: await sparkSignedUrl(call.baseUrl, path, apiKey, apiSecret),
      headers: {},
      body: JSON.stringify(sparkRequest(body, appId, domain, call.userId)),
    };
  },
  send: (call, url, init) => exchange(call, url, init),
  parseResponse(call, json) {
    const usage = json?.usage
      ? usageOf(json.usage.prompt_tokens, json.usage.completion_tokens, json.usage.total_tokens)
      : null;
    const tool_calls = toolCalls(json?.function_call);
    return {
      body: chatCompletion(
        call.requestModel,
        { content: String(json?.content ?? ""), tool_calls },
        tool_calls ? "tool_calls" : "stop",
        usage,
      ),
      usage,
    };
  },
  generatedText: (_call, json) =>
    String(json?.content ?? "")
    + (json?.function_call ? `${json.function_call.name ?? ""}${json.function_call.arguments ?? ""}` : ""),
  streamMapper: (call) => new SparkStream(call),
  errorMessage: (status, text) => providerErrorMessage(status, text),
  defaultModels: DEFAULT_CHANNEL_MODELS[18],
};
