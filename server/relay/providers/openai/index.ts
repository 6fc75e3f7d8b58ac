// One adaptor for every upstream that speaks the OpenAI wire format (OpenAI, custom, OpenRouter,
// DeepSeek, Moonshot, Mistral, xAI, SiliconCloud, Ollama's /v1, ...). Requests and responses pass
// through; the adaptor only builds URL and auth, and watches the stream for usage.
import type { ProviderAdaptor, ProviderCall, SseEvent, StreamMapper, Usage } from "../types.ts";
import { generatedTextOf, mayCarryUsage, usageFrom } from "./usage.ts";
import { sseFrame } from "../../formats/sse.ts";
import { openaiRealtime } from "./realtime.ts";
import { PATHS, apiRoot, openaiUrl, quirksFor } from "./quirks.ts";
import { ReshapingMapper, reshapeBody, type Reshape } from "./reshape.ts";
import { channelSettings } from "../settings.ts";
import { TextBuffer } from "../../formats/text-buffer.ts";
import { jsonText } from "../../formats/client-json.ts";
import { servesNatively } from "../../../catalogue/channel-types.ts";
import { withCompletionTokens } from "../../formats/reasoning.ts";

export { PATHS, upstreamUrl } from "./quirks.ts";

export function authHeaders(call: ProviderCall): Record<string, string> {
  const auth = quirksFor(call.channel.type).auth;
  if (auth) return auth(call);
  const h: Record<string, string> = { authorization: `Bearer ${call.key}` };
  if (call.channel.type === 1 && call.channel.openai_organization)
    h["openai-organization"] = call.channel.openai_organization;
  return h;
}

/** A chunk that finishes a choice, or a Responses-API event that ends the response. */
const FINISHING = /"finish_reason"\s*:\s*"|"type"\s*:\s*"response\.(completed|incomplete|failed)"|^\s*\{\s*"error"\s*:/;

/** Chunks kept raw (parsed only if the text is ever needed) up to this many bytes; past it a long stream
 * keeps only its generated text, so memory grows with the answer's text, not with its chunk framing. */
const RAW_CHUNK_BUDGET = 256 * 1024;

class PassThroughMapper implements StreamMapper {
  private seen: string[] = [];
  private seenBytes = 0;
  /** text of the chunks already folded out of `seen` */
  private folded = new TextBuffer();
  private found: Usage | null = null;
  private finished = false;
  constructor(private wantsUsage: boolean) {}

  event(ev: SseEvent): string {
    const data = ev.data;
    if (data === "[DONE]") this.finished = true;
    if (data === "[DONE]" || data === "") return ev.raw;
    if (!this.finished && FINISHING.test(data)) this.finished = true;
    this.keep(data);
    if (!mayCarryUsage(data)) return ev.raw;
    let obj: any;
    try {
      obj = JSON.parse(data);
    } catch {
      return ev.raw;
    }
    const u = usageFrom(obj);
    if (!u) return ev.raw;
    this.found = u;
    if (this.wantsUsage || obj.object === "response" || typeof obj.type === "string") return ev.raw;
    // The gateway asked for usage on the client's behalf: keep it away from a client that did not.
    if (!Array.isArray(obj.choices) || obj.choices.length === 0) return "";
    delete obj.usage;
    return sseFrame(JSON.stringify(obj), ev.event);
  }
  end(): string {
    return "";
  }
  complete(): boolean {
    return this.finished;
  }
  usage(): Usage | null {
    return this.found;
  }
  generatedText(): string {
    this.fold();
    return this.folded.toString();
  }

  private keep(data: string) {
    this.seen.push(data);
    this.seenBytes += data.length;
    if (this.seenBytes > RAW_CHUNK_BUDGET) this.fold();
  }

  private fold() {
    for (const d of this.seen) {
      try {
        this.folded.add(generatedTextOf(JSON.parse(d)));
      } catch {}
    }
    this.seen = [];
    this.seenBytes = 0;
  }
}

/** The channel's force_format / thinking_to_content, when either is on for a chat call. */
function reshapeOf(call: ProviderCall): Reshape | null {
  if (call.mode !== "chat") return null;
  const s = channelSettings(call.options);
  return s.forceFormat || s.thinkingToContent
    ? { forceFormat: s.forceFormat, thinkingToContent: s.thinkingToContent }
    : null;
}

/** Channel types whose upstream is OpenAI's own API (official, Azure): max_completion_tokens on every chat model. */
const OPENAI_API_TYPES = new Set([1, 3]);

/** A chat body as the channel's upstream takes it (max_tokens for reasoning models: formats/reasoning.ts). */
export function chatBody(call: ProviderCall, body: any): any {
  return call.mode === "chat" && body
    ? withCompletionTokens(body, call.upstreamModel, OPENAI_API_TYPES.has(call.channel.type))
    : body;
}

export const openaiAdaptor: ProviderAdaptor = {
  kind: "openai",
  supports: (mode) => mode in PATHS,
  // Most OpenAI-compatible upstreams have chat completions only: their Responses calls go through it.
  nativeResponses: (call) =>
    servesNatively(call.channel.type, call.mode === "responses_compact" ? "/v1/responses/compact" : "/v1/responses"),
  realtime: openaiRealtime,
  buildRequest(call, body) {
    const headers = authHeaders(call);
    const url = openaiUrl(call);
    if (body instanceof FormData) return { url, headers, body };
    headers["content-type"] = "application/json";
    return { url, headers, body: jsonText(call.json, chatBody(call, body)) };
  },
  parseResponse(call, json) {
    const r = reshapeOf(call);
    return { body: r ? reshapeBody(json, r) : json, usage: usageFrom(json) };
  },
  passThroughJson: (call) => call.format === "openai" && !reshapeOf(call),
  streamMapper(call) {
    const r = reshapeOf(call);
    const mapper = new PassThroughMapper(call.clientWantsUsage);
    return r ? new ReshapingMapper(mapper, r) : mapper;
  },
  errorMessage(status, text) {
    try {
      const j = JSON.parse(text);
      const m = j?.error?.message ?? j?.message ?? j?.error;
      if (typeof m === "string" && m) return m;
    } catch {}
    return `upstream answered with status ${status}`;
  },
  async fetchModels(baseUrl, key, channel) {
    const base = channel ? apiRoot(channel.type, baseUrl) : baseUrl;
    const res = await fetch(/\/v\d+$/.test(base) ? base + "/models" : base + "/v1/models", {
      headers: { authorization: `Bearer ${key.split("|")[0]}` },
    });
    if (!res.ok) throw new Error(`the upstream model list answered ${res.status}`);
    const j: any = await res.json();
    return (Array.isArray(j?.data) ? j.data : []).map((m: any) => String(m.id)).filter(Boolean);
  },
};
