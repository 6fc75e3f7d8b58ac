// Lets a Claude- or Gemini-format client use any channel. When the channel's adaptor speaks the
// client's format for the call, the adaptor is used as is (bodies pass through). Otherwise the native
// body is converted to an OpenAI chat request, the adaptor runs in OpenAI mode, and its OpenAI answer
// (JSON or SSE) is converted back to the client's format.
import type { ClientFormat, ParsedResponse, ProviderAdaptor, ProviderCall, SseEvent, StreamMapper, Usage } from "../providers/types.ts";
import { SseReader, sseFrame } from "./sse.ts";
import { claudeRequestToOpenAI, claudeSse, openAIResponseToClaude, OpenAIStreamToClaude } from "./claude/client.ts";
import { geminiRequestToOpenAI, openAIResponseToGemini, OpenAIStreamToGemini } from "./gemini/client.ts";
import type { OpenAIChunk, OpenAIUsage } from "./claude/wire.ts";

export function speaksNatively(adaptor: ProviderAdaptor, call: ProviderCall): boolean {
  return call.format === "openai" || (adaptor.nativeFormat?.(call) ?? "openai") === call.format;
}

/** The OpenAI-mode twin of a native call: usage is always requested so it can be reported back. */
function openaiCall(call: ProviderCall): ProviderCall {
  return { ...call, format: "openai", clientWantsUsage: true };
}

/** The client's native body as an OpenAI chat request (model already the upstream name). */
export function toOpenAIBody(format: ClientFormat, call: ProviderCall, body: any): any {
  if (format === "claude") return { ...claudeRequestToOpenAI({ ...body, model: call.upstreamModel }), model: call.upstreamModel };
  if (format === "gemini") return geminiRequestToOpenAI(body, call.upstreamModel, call.stream);
  return body;
}

function openAIUsage(u: Usage | null): OpenAIUsage | null {
  if (!u) return null;
  return {
    prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens,
    prompt_tokens_details: { cached_tokens: u.cached_tokens ?? 0, cached_creation_tokens: u.cache_creation_tokens ?? 0 },
  };
}

/** Re-reads the inner mapper's OpenAI SSE text and answers it in the client's format. */
class NativeStreamMapper implements StreamMapper {
  private reader = new SseReader();
  private enc = new TextEncoder();
  private claude?: OpenAIStreamToClaude;
  private gemini?: OpenAIStreamToGemini;

  constructor(private inner: StreamMapper, private format: ClientFormat, model: string) {
    if (format === "claude") this.claude = new OpenAIStreamToClaude(model);
    else this.gemini = new OpenAIStreamToGemini(model);
  }

  private convert(openaiSse: string): string {
    if (!openaiSse) return "";
    let out = "";
    for (const ev of this.reader.push(this.enc.encode(openaiSse))) {
      if (!ev.data || ev.data === "[DONE]") continue;
      let obj: any;
      try {
        obj = JSON.parse(ev.data);
      } catch {
        continue;
      }
      if (obj?.error) {
        out += this.format === "claude"
          ? claudeSse({ type: "error", error: { type: "api_error", message: String(obj.error.message ?? "upstream stream error") } })
          : sseFrame(JSON.stringify({ error: { code: 500, message: String(obj.error.message ?? "upstream stream error"), status: "INTERNAL" } }));
        continue;
      }
      const chunk = obj as OpenAIChunk;
      if (this.claude) out += this.claude.push(chunk).map(claudeSse).join("");
      else out += this.gemini!.push(chunk).map((g) => sseFrame(JSON.stringify(g))).join("");
    }
    return out;
  }

  event(ev: SseEvent): string {
    return this.convert(this.inner.event(ev));
  }

  end(counted?: () => Usage): string {
    let out = this.convert(this.inner.end(counted));
    const usage = openAIUsage(this.inner.usage() ?? counted?.() ?? null);
    if (this.claude) out += this.claude.end(usage).map(claudeSse).join("");
    else out += this.gemini!.end(usage).map((g) => sseFrame(JSON.stringify(g))).join("");
    return out;
  }

  usage(): Usage | null {
    return this.inner.usage();
  }

  generatedText(): string {
    return this.inner.generatedText();
  }

  complete(): boolean {
    return this.inner.complete();
  }
}

const wrapped = new WeakMap<ProviderAdaptor, ProviderAdaptor>();

/**
 * The adaptor as the relay should use it for any client format: identical for OpenAI clients and for
 * native clients the channel speaks, converting otherwise. Memoised per adaptor.
 */
export function nativeAware(adaptor: ProviderAdaptor): ProviderAdaptor {
  const hit = wrapped.get(adaptor);
  if (hit) return hit;
  const out: ProviderAdaptor = {
    ...adaptor,
    buildRequest(call, body) {
      if (speaksNatively(adaptor, call)) return adaptor.buildRequest(call, body);
      return adaptor.buildRequest(openaiCall(call), toOpenAIBody(call.format, call, body));
    },
    parseResponse(call, json): ParsedResponse {
      if (speaksNatively(adaptor, call)) return adaptor.parseResponse(call, json);
      const inner = adaptor.parseResponse(openaiCall(call), json);
      const body = inner.body as any;
      const converted = call.format === "claude" ? openAIResponseToClaude(body, call.requestModel) : openAIResponseToGemini(body, call.requestModel);
      return { body: converted, usage: inner.usage };
    },
    streamMapper(call) {
      if (speaksNatively(adaptor, call)) return adaptor.streamMapper(call);
      return new NativeStreamMapper(adaptor.streamMapper(openaiCall(call)), call.format, call.requestModel);
    },
  };
  if (adaptor.passThroughJson) out.passThroughJson = (call) => speaksNatively(adaptor, call) && adaptor.passThroughJson!(call);
  if (adaptor.decodeStream) out.decodeStream = (call, body) => adaptor.decodeStream!(speaksNatively(adaptor, call) ? call : openaiCall(call), body);
  wrapped.set(adaptor, out);
  return out;
}
