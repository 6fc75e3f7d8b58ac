// Alibaba Cloud DashScope / Qwen (channel type 17). Chat, completions and embeddings use DashScope's
// OpenAI-compatible mode ({host}/compatible-mode/v1). What that mode lacks goes to the native API:
//   rerank   POST /api/v1/services/rerank/text-rerank/text-rerank (gte-rerank)
//   images   POST /api/v1/services/aigc/text2image/image-synthesis as an async task, then GET
//            /api/v1/tasks/{id} until it ends (wanx-*, qwen-image-*); answered as OpenAI images
//   speech   POST /api/v1/services/aigc/multimodal-generation/generation (qwen-tts); the audio file it
//            links is fetched and sent to the client (WAV)
import type { ProviderAdaptor, ProviderCall } from "../types.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import { openaiAdaptor } from "../openai/index.ts";
import { upstreamUrl } from "../openai/quirks.ts";
import { errorResponse, providerErrorMessage, usageOf } from "../openai/chunks.ts";
import { channelFetch, sendUpstream } from "../settings.ts";

/** The DashScope host of a base URL (the compatible-mode or native API path it may carry is dropped). */
export const dashscopeHost = (base: string) => base.replace(/\/(compatible-mode(\/v1)?|api\/v1)$/, "");

const NATIVE = new Set(["rerank", "images", "audio_speech"]);
const OPENAI_MODES = new Set(["chat", "completions", "embeddings"]);

/** How image tasks are polled; tests shorten the waits. */
export const aliPolling = { firstMs: 1000, everyMs: 2000, maxMs: 240_000 };

/** OpenAI voices → Qwen-TTS voices (a Qwen voice name passes through). */
const VOICES: Record<string, string> = {
  alloy: "Cherry",
  echo: "Ethan",
  fable: "Chelsie",
  onyx: "Dylan",
  nova: "Serena",
  shimmer: "Cherry",
};

function nativeRequest(
  call: ProviderCall,
  body: any,
): { path: string; payload: Record<string, unknown>; async?: boolean } {
  if (call.mode === "rerank") {
    const documents = (Array.isArray(body?.documents) ? body.documents : []).map((d: any) =>
      typeof d === "string" ? d : (d?.text ?? JSON.stringify(d)),
    );
    const parameters: Record<string, unknown> = { return_documents: body?.return_documents !== false };
    if (typeof body?.top_n === "number") parameters.top_n = body.top_n;
    return {
      path: "/api/v1/services/rerank/text-rerank/text-rerank",
      payload: { model: call.upstreamModel, input: { query: String(body?.query ?? ""), documents }, parameters },
    };
  }
  if (call.mode === "images") {
    const parameters: Record<string, unknown> = { n: Math.max(1, Math.min(4, Number(body?.n) || 1)) };
    if (typeof body?.size === "string") parameters.size = body.size.replace("x", "*");
    if (body?.seed !== undefined) parameters.seed = body.seed;
    const input: Record<string, unknown> = { prompt: String(body?.prompt ?? "") };
    if (typeof body?.negative_prompt === "string") input.negative_prompt = body.negative_prompt;
    return {
      path: "/api/v1/services/aigc/text2image/image-synthesis",
      payload: { model: call.upstreamModel, input, parameters },
      async: true,
    };
  }
  const voice = String(body?.voice ?? "alloy");
  return {
    path: "/api/v1/services/aigc/multimodal-generation/generation",
    payload: { model: call.upstreamModel, input: { text: String(body?.input ?? ""), voice: VOICES[voice] ?? voice } },
  };
}

const sleep = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

/** Waits for an image task to end; answers its final JSON (or an error answer). */
async function awaitTask(call: ProviderCall, host: string, taskId: string, init: RequestInit): Promise<Response> {
  const started = Date.now();
  await sleep(aliPolling.firstMs, init.signal);
  for (;;) {
    const res = await fetch(`${host}/api/v1/tasks/${encodeURIComponent(taskId)}`, {
      headers: { authorization: `Bearer ${call.key}` },
      signal: init.signal,
      proxy: (init as any).proxy,
    } as RequestInit);
    const text = await res.text();
    if (!res.ok) return new Response(text, { status: res.status, headers: { "content-type": "application/json" } });
    const j = JSON.parse(text);
    const status = j?.output?.task_status;
    if (status === "SUCCEEDED") return Response.json(j);
    if (status === "FAILED" || status === "CANCELED" || status === "UNKNOWN") {
      return errorResponse(
        status === "UNKNOWN" ? 404 : 400,
        String(j?.output?.message ?? `the image task ${String(status).toLowerCase()}`),
        j?.output?.code,
      );
    }
    if (Date.now() - started > aliPolling.maxMs) return errorResponse(504, "the image task did not finish in time");
    await sleep(aliPolling.everyMs, init.signal);
  }
}

/** A speech answer: the audio the upstream links (or inlines), as the response body. */
async function speech(call: ProviderCall, res: Response): Promise<Response> {
  const j: any = await res.json().catch(() => null);
  const audio = j?.output?.audio;
  if (typeof audio?.data === "string" && audio.data)
    return new Response(Buffer.from(audio.data, "base64"), { headers: { "content-type": "audio/wav" } });
  if (typeof audio?.url !== "string" || !audio.url) return errorResponse(502, "the upstream answered without audio");
  const file = await channelFetch(call, audio.url);
  if (!file.ok) return errorResponse(502, `the upstream's audio file answered ${file.status}`);
  return new Response(file.body, { headers: { "content-type": file.headers.get("content-type") ?? "audio/wav" } });
}

export const aliAdaptor: ProviderAdaptor = {
  kind: "ali",
  supports: (mode) => OPENAI_MODES.has(mode) || NATIVE.has(mode),
  buildRequest(call, body) {
    const host = dashscopeHost(call.baseUrl);
    if (!NATIVE.has(call.mode)) {
      return {
        url: upstreamUrl(`${host}/compatible-mode`, call.mode),
        headers: { "content-type": "application/json", authorization: `Bearer ${call.key}` },
        body: JSON.stringify(body),
      };
    }
    const { path, payload, async } = nativeRequest(call, body);
    const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${call.key}` };
    if (async) headers["x-dashscope-async"] = "enable";
    return { url: host + path, headers, body: JSON.stringify(payload) };
  },
  async send(call, url, init) {
    const res = await sendUpstream(call, url, init);
    if (!res.ok || !NATIVE.has(call.mode)) return res;
    if (call.mode === "audio_speech") return speech(call, res);
    if (call.mode !== "images") return res;
    const j: any = await res.json().catch(() => null);
    const taskId = j?.output?.task_id;
    if (typeof taskId !== "string" || !taskId)
      return errorResponse(502, String(j?.message ?? "the upstream did not start an image task"), j?.code);
    return awaitTask(call, dashscopeHost(call.baseUrl), taskId, init);
  },
  parseResponse(call, json) {
    if (call.mode === "rerank") {
      const results = (json?.output?.results ?? []).map((r: any) => ({
        index: r.index,
        relevance_score: r.relevance_score,
        ...(r.document ? { document: r.document } : {}),
      }));
      const usage = usageOf(json?.usage?.total_tokens, 0);
      return {
        body: {
          id: json?.request_id,
          model: call.requestModel,
          results,
          usage: { total_tokens: usage?.total_tokens ?? 0 },
        },
        usage,
      };
    }
    if (call.mode === "images") {
      const data = (json?.output?.results ?? [])
        .filter((r: any) => typeof r?.url === "string")
        .map((r: any) => ({ url: r.url, ...(r.actual_prompt ? { revised_prompt: r.actual_prompt } : {}) }));
      return { body: { created: Math.floor(Date.now() / 1000), data }, usage: null };
    }
    return openaiAdaptor.parseResponse(call, json);
  },
  passThroughJson: (call) => OPENAI_MODES.has(call.mode) && openaiAdaptor.passThroughJson!(call),
  streamMapper: (call) => openaiAdaptor.streamMapper(call),
  errorMessage: providerErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[17],
  fetchModels: (baseUrl, key, channel) =>
    openaiAdaptor.fetchModels!(`${dashscopeHost(baseUrl)}/compatible-mode`, key, channel && { ...channel, type: 17 }),
};
