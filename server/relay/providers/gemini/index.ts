// Google Gemini (channel type 24): generateContent / streamGenerateContent / batchEmbedContents with
// an x-goog-api-key. Also the Gemini half of Vertex AI (providers/vertex), which reuses these pieces.
import type { ParsedResponse, ProviderAdaptor, ProviderCall, SseEvent, StreamMapper, Usage } from "../types.ts";
import { AppError } from "../../../http/errors.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import { sseFrame, SSE_DONE } from "../../formats/sse.ts";
import { perModel, siteOf } from "../site.ts";
import {
  GeminiStreamToOpenAI,
  embeddingInput,
  fromEmbedResponse,
  fromGeminiResponse,
  geminiGeneratedText,
  remoteImageUrls,
  toBatchEmbedRequest,
  toGeminiRequest,
  usageFromGemini,
  type GeminiSettings,
} from "../../formats/gemini/upstream.ts";
import { fetchImages } from "./images.ts";
import { EMBED_BATCH_MAX, sendEmbedBatches } from "./embed-batches.ts";
import type { OpenAIUsage } from "../../formats/claude/wire.ts";
import { geminiEmbedTexts } from "../../formats/gemini/client.ts";
import { countTexts, countTextsNow, decodeEmbeddingTokens } from "../../tokenizer.ts";
import { plainName, scrub, scrubFrame } from "../../formats/scrub.ts";
import { shownUsage } from "../../formats/shown-usage.ts";
import { TextCount, withCountedCompletion } from "../../formats/usage.ts";
import { jsonText } from "../../formats/client-json.ts";

export function geminiSettings(call: Pick<ProviderCall, "site">): GeminiSettings {
  const site = siteOf(call);
  const safety = site.json<unknown>("gemini.safety_settings", { default: "OFF" });
  return {
    safety: safety && typeof safety === "object" ? (safety as Record<string, string>) : { default: "OFF" },
    thinkingAdapter: site.bool("gemini.thinking_adapter_enabled"),
    thinkingPercentage: site.number("gemini.thinking_adapter_budget_tokens_percentage", 0.6),
    imageModels: (() => {
      const v = site.json<unknown>("gemini.supported_imagine_models", []);
      return Array.isArray(v) ? v.map(String) : [];
    })(),
  };
}

/** API version for a model (gemini.version_settings: {"default": "v1beta", "<model>": "v1"}). */
export function geminiVersion(call: Pick<ProviderCall, "site">, model: string): string {
  return String(perModel(siteOf(call).json("gemini.version_settings", { default: "v1beta" }), model, "v1beta"));
}

export function geminiMethodSuffix(mode: string, stream: boolean, path = ""): string {
  // A Gemini client's embedContent goes up as it came; OpenAI embeddings always use the batch method.
  if (mode === "embeddings") return path.endsWith(":embedContent") ? ":embedContent" : ":batchEmbedContents";
  return stream ? ":streamGenerateContent?alt=sse" : ":generateContent";
}

export function toUsage(u: OpenAIUsage): Usage {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.total_tokens,
    cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

/** What an embeddings call sent, kept until its answer is parsed: batchEmbedContents reports no usage. */
/** `counted`: the texts' count, made in the tokenizer's worker while the upstream answered. */
interface Embedded {
  texts: string[];
  tokenIds: number;
  base64: boolean;
  counted?: number;
}
const embedded = new WeakMap<ProviderCall, Embedded>();

const BAD_EMBEDDING_INPUT =
  "input must be a non-empty string, array of strings, array of token ids or array of token-id arrays";

/** OpenAI embeddings input as the texts Gemini needs: token arrays are decoded (and billed by their length). */
function embeddingTexts(input: unknown): { texts: string[]; tokenIds: number } {
  const parsed = embeddingInput(input);
  if (!parsed) throw new AppError(400, BAD_EMBEDDING_INPUT);
  if ("texts" in parsed) return { texts: parsed.texts, tokenIds: 0 };
  const texts: string[] = [];
  for (const ids of parsed.tokens) {
    const text = decodeEmbeddingTokens(ids);
    if (text === null)
      throw new AppError(400, "input holds token ids outside cl100k_base, the vocabulary of OpenAI's embedding models");
    texts.push(text);
  }
  return { texts, tokenIds: parsed.tokens.reduce((n, ids) => n + ids.length, 0) };
}

function embeddingUsage(sent: Embedded): Usage {
  // One counting budget for all the inputs: thousands of texts are one call's work, not thousands of calls'.
  const n = sent.tokenIds || (sent.counted ?? countTextsNow(sent.texts));
  return { prompt_tokens: n, completion_tokens: 0, total_tokens: n };
}

/**
 * The model name and Gemini body for this call. Gemini clients' bodies pass through unchanged (the
 * model travels in the URL); OpenAI bodies are converted, downloading remote images first.
 */
export async function geminiBodyFor(call: ProviderCall, body: any): Promise<{ model: string; body: unknown }> {
  if (call.mode === "embeddings" && call.format === "gemini") {
    // Passed through, each batch request naming the model of the URL (the channel's mapping may rename it).
    embedded.set(call, { texts: geminiEmbedTexts(body), tokenIds: 0, base64: false });
    const out = Array.isArray(body?.requests)
      ? { ...body, requests: body.requests.map((r: any) => ({ ...r, model: `models/${call.upstreamModel}` })) }
      : body;
    return { model: call.upstreamModel, body: out };
  }
  if (call.mode === "embeddings") {
    const { texts, tokenIds } = embeddingTexts(body?.input);
    embedded.set(call, { texts, tokenIds, base64: body?.encoding_format === "base64" });
    return { model: call.upstreamModel, body: toBatchEmbedRequest(call.upstreamModel, texts, body?.dimensions) };
  }
  if (call.format === "gemini") return { model: call.upstreamModel, body };
  let images = new Map<string, { mimeType: string; data: string }>();
  const urls = remoteImageUrls(body);
  if (urls.length) {
    try {
      images = await fetchImages(urls, call.site);
    } catch (e) {
      throw new AppError(400, `image download failed: ${(e as Error).message}`);
    }
  }
  return toGeminiRequest({ ...body, model: call.upstreamModel }, geminiSettings(call), images);
}

/**
 * An answer's usageMetadata. Without a prompt count it is none at all (the relay then counts both sides,
 * where zeros would bill nothing); a missing candidates count is left for the relay to count from the text.
 */
function parsedAnswer(body: unknown, json: any): ParsedResponse {
  const meta = json?.usageMetadata;
  if (typeof meta?.promptTokenCount !== "number") return { body, usage: null };
  const usage = toUsage(usageFromGemini(meta));
  return typeof meta.candidatesTokenCount === "number"
    ? { body, usage }
    : { body, usage, uncountedOutput: geminiGeneratedText(json) };
}

export function parseGeminiResponse(call: ProviderCall, json: any): ParsedResponse {
  if (call.mode === "embeddings") {
    const sent = embedded.get(call);
    const usage = sent ? embeddingUsage(sent) : null;
    if (call.format === "gemini") return { body: json, usage };
    return { body: fromEmbedResponse(json, call.requestModel, usage?.prompt_tokens ?? 0, sent?.base64), usage };
  }
  return parsedAnswer(call.format === "gemini" ? json : fromGeminiResponse(json, call.requestModel), json);
}

export class GeminiStreamMapper implements StreamMapper {
  private conv: GeminiStreamToOpenAI;
  private finished = false;
  /** The relay's count of the text (textCounted()). */
  private counted = new TextCount();

  complete(): boolean {
    return this.finished;
  }

  constructor(private call: ProviderCall) {
    this.conv = new GeminiStreamToOpenAI(call.requestModel);
  }

  event(ev: SseEvent): string {
    let obj: any;
    try {
      obj = JSON.parse(ev.data);
    } catch {
      return this.call.format === "gemini" ? scrubFrame(ev, this.call) : "";
    }
    if (
      obj?.error
      || obj?.promptFeedback?.blockReason
      || (Array.isArray(obj?.candidates) && obj.candidates.some((c: any) => c?.finishReason))
    )
      this.finished = true;
    if (obj?.error) {
      // Rebuilt rather than passed on: the upstream's message may echo the key or an address.
      const message = scrub(
        typeof obj.error.message === "string" && obj.error.message ? obj.error.message : "upstream stream error",
        this.call,
      );
      if (this.call.format !== "gemini")
        return sseFrame(JSON.stringify({ error: { message, type: "upstream_error" } }));
      const code = Number.isInteger(obj.error.code) ? obj.error.code : 500;
      return sseFrame(JSON.stringify({ error: { code, message, status: plainName(obj.error.status, "INTERNAL") } }));
    }
    const chunks = this.conv.push(obj);
    if (this.call.format === "gemini") return ev.raw;
    return chunks.map((c) => sseFrame(JSON.stringify(c))).join("");
  }

  end(counted?: () => Usage): string {
    if (this.call.format === "gemini") return "";
    if (!this.call.clientWantsUsage) return SSE_DONE;
    const chunk = this.conv.usageChunk();
    // Anything short of a complete report is shown as billed: corrected by the count, or counted whole.
    if (!this.conv.hasPromptCount || !this.conv.hasFinalUsage) {
      const billed = this.usage() ?? counted?.();
      chunk.usage = billed ? shownUsage(billed, this.conv.usage) : null;
    }
    return (chunk.usage ? sseFrame(JSON.stringify(chunk)) : "") + SSE_DONE;
  }

  countsText(): boolean {
    return (
      !!this.conv.usage
      && this.conv.hasPromptCount
      && !this.conv.hasFinalUsage
      && this.counted.of(this.conv.receivedText) === undefined
    );
  }

  textCounted(tokens: number): void {
    this.counted.set(this.conv.receivedText, tokens);
  }

  usage(): Usage | null {
    // Without a prompt count this is no usage: the relay counts the prompt as well as the text.
    if (!this.conv.usage || !this.conv.hasPromptCount) return null;
    const u = toUsage(this.conv.usage);
    if (this.conv.hasFinalUsage) return u;
    // Cut or abandoned before the finishing chunk (or it came without a completion count): intermediate
    // usageMetadata often counts the prompt only.
    const text = this.conv.receivedText;
    return withCountedCompletion(u, text, this.counted.of(text));
  }

  generatedText(): string {
    return this.conv.receivedText;
  }
}

export function geminiErrorMessage(status: number, text: string): string {
  try {
    // Streaming endpoints without alt=sse answer errors inside a JSON array.
    const parsed = JSON.parse(text);
    const j = Array.isArray(parsed) ? parsed[0] : parsed;
    const m = j?.error?.message ?? j?.message;
    if (typeof m === "string" && m) return m;
  } catch {}
  return `upstream answered with status ${status}`;
}

export const geminiAdaptor: ProviderAdaptor = {
  kind: "gemini",
  supports: (mode) => mode === "chat" || mode === "embeddings",
  nativeFormat: () => "gemini",
  async buildRequest(call, body) {
    const { model, body: out } = await geminiBodyFor(call, body);
    const url = `${call.baseUrl}/${geminiVersion(call, model)}/models/${encodeURIComponent(model)}${geminiMethodSuffix(call.mode, call.stream, call.format === "gemini" ? call.path : "")}`;
    return {
      url,
      headers: { "content-type": "application/json", "x-goog-api-key": call.key },
      body: jsonText(call.json, out),
    };
  },
  send(call, url, init) {
    const sent = call.mode === "embeddings" ? embedded.get(call) : undefined;
    const answer = sent && sent.texts.length > EMBED_BATCH_MAX ? sendEmbedBatches(url, init) : fetch(url, init);
    if (!sent || sent.tokenIds) return answer;
    // Gemini reports no usage for embeddings: the texts are counted in the tokenizer's worker while the upstream
    // answers (on the event loop, thousands of inputs took up to ~10 ms, and a fresh process loaded the tables).
    const counting = countTexts(sent.texts).then(
      (n) => void (sent.counted = n),
      () => {},
    );
    return Promise.all([answer, counting]).then(([res]) => res);
  },
  parseResponse: parseGeminiResponse,
  generatedText: (_call, json) => geminiGeneratedText(json),
  streamMapper: (call) => new GeminiStreamMapper(call),
  errorMessage: geminiErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[24],
  async fetchModels(baseUrl, key) {
    const res = await fetch(`${baseUrl}/v1beta/models?pageSize=1000`, { headers: { "x-goog-api-key": key } });
    if (!res.ok) throw new Error(`the upstream model list answered ${res.status}`);
    const j: any = await res.json();
    return (Array.isArray(j?.models) ? j.models : [])
      .map((m: any) => String(m.name ?? "").replace(/^models\//, ""))
      .filter(Boolean);
  },
};
