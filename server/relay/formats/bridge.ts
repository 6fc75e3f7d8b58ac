// Lets every client format reach every adaptor. When the channel's adaptor speaks the client's format for
// the call, the adaptor is used as is (bodies pass through). Otherwise the call goes through OpenAI chat:
//  - a Claude- or Gemini-format chat: the native body becomes an OpenAI chat request, the adaptor runs in
//    OpenAI mode, and its OpenAI answer (JSON or SSE) is converted back to the client's format;
//  - a Gemini-format embedding (embedContent, batchEmbedContents) on a channel without it: an OpenAI
//    embeddings request and back;
//  - an OpenAI Responses API call on a channel without /v1/responses: a chat request, and the chat answer
//    as a response object or the Responses API's typed stream events (formats/responses/);
//  - a compaction (/v1/responses/compact) on a channel without it: a chat request for a summary, answered
//    as a compacted response (formats/responses/compact.ts). Responses input from the gateway's conversions
//    (its sealed reasoning and compaction items) is made plain before it reaches a channel that has the API.
import type {
  ClientFormat,
  ParsedResponse,
  ProviderAdaptor,
  ProviderCall,
  SseEvent,
  StreamMapper,
  Usage,
} from "../providers/types.ts";
import { SseReader, sseFrame } from "./sse.ts";
import { withoutSampling } from "./reasoning.ts";
import { claudeRequestToOpenAI, claudeSse, openAIResponseToClaude, OpenAIStreamToClaude } from "./claude/client.ts";
import {
  geminiEmbedToOpenAI,
  geminiRequestToOpenAI,
  openAIEmbedToGemini,
  openAIResponseToGemini,
  OpenAIStreamToGemini,
} from "./gemini/client.ts";
import { answerShape, ChatStreamToResponses, chatToResponse, type AnswerShape } from "./responses/answer.ts";
import { convertResponsesRequest, plainForUpstream, type ResponsesRequest } from "./responses/request.ts";
import { chatToCompacted, compactToChat } from "./responses/compact.ts";
import type { OpenAIChunk, OpenAIUsage } from "./claude/wire.ts";

/**
 * Set on a Responses request body by the endpoint that keeps converted responses for previous_response_id:
 * called with each finished response object the bridge builds. A symbol key, so it never goes upstream.
 */
export const ON_RESPONSE = Symbol.for("switchyard.responses.done");
type OnResponse = (response: Record<string, any>) => void;

export function speaksNatively(adaptor: ProviderAdaptor, call: ProviderCall): boolean {
  return call.format === "openai" || (adaptor.nativeFormat?.(call) ?? "openai") === call.format;
}

/** Whether the channel serves this Responses API call (or compaction) itself (the adaptor says, per call: the
 * channel's setting, its type's catalogue row, Azure's API version; by default any adaptor with the mode). */
export function servesResponses(adaptor: ProviderAdaptor, call: ProviderCall): boolean {
  return adaptor.supports(call.mode) && (adaptor.nativeResponses?.(call) ?? true);
}

type Plan = "native" | "chat" | "embed" | "responses" | "compact";

function planOf(adaptor: ProviderAdaptor, call: ProviderCall): Plan {
  if (call.mode === "responses") return servesResponses(adaptor, call) ? "native" : "responses";
  if (call.mode === "responses_compact") return servesResponses(adaptor, call) ? "native" : "compact";
  if (speaksNatively(adaptor, call)) return "native";
  return call.mode === "embeddings" ? "embed" : "chat";
}

/** What the answer's conversion needs from the request; kept per call from buildRequest on. */
interface Facts {
  /** the OpenAI-side twin of the call, the same object for every adaptor function of the attempt */
  inner: ProviderCall;
  /** Gemini clients get thought parts only when they asked (includeThoughts) */
  thoughts: boolean;
  responses?: ResponsesRequest;
  /** the Responses answer's tool names and reasoning form, from the request's conversion */
  shape?: AnswerShape;
  onResponse?: OnResponse;
}
const facts = new WeakMap<ProviderCall, Facts>();

/** The OpenAI-mode twin of a converted call: usage is always requested so it can be reported back. */
function factsOf(plan: Plan, call: ProviderCall): Facts {
  let f = facts.get(call);
  if (!f) {
    const inner: ProviderCall =
      plan === "responses" || plan === "compact"
        ? { ...call, mode: "chat", format: "openai", clientWantsUsage: true, path: "/v1/chat/completions" }
        : { ...call, format: "openai", clientWantsUsage: true };
    f = { inner, thoughts: true };
    facts.set(call, f);
  }
  return f;
}

/** The client's native body as an OpenAI chat request (model already the upstream name). */
export function toOpenAIBody(format: ClientFormat, call: ProviderCall, body: any): any {
  if (format === "claude")
    return withoutSampling(
      { ...claudeRequestToOpenAI({ ...body, model: call.upstreamModel }), model: call.upstreamModel },
      call.upstreamModel,
    );
  if (format === "gemini")
    return withoutSampling(geminiRequestToOpenAI(body, call.upstreamModel, call.stream), call.upstreamModel);
  return body;
}

function openAIUsage(u: Usage | null): OpenAIUsage | null {
  if (!u) return null;
  const out: OpenAIUsage = {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.total_tokens,
    prompt_tokens_details: {
      cached_tokens: u.cached_tokens ?? 0,
      cached_creation_tokens: u.cache_creation_tokens ?? 0,
    },
  };
  if (u.cache_creation_1h_tokens !== undefined) {
    out.claude_cache_creation_1_h_tokens = u.cache_creation_1h_tokens;
    out.claude_cache_creation_5_m_tokens = Math.max(0, (u.cache_creation_tokens ?? 0) - u.cache_creation_1h_tokens);
  }
  return out;
}

/** The target format of a converted stream: one chunk (or error) in, the client's SSE text out. */
interface StreamTarget {
  chunk(c: OpenAIChunk): string;
  error(message: string): string;
  end(usage: OpenAIUsage | null): string;
}

function claudeTarget(model: string): StreamTarget {
  const conv = new OpenAIStreamToClaude(model);
  return {
    chunk: (c) => conv.push(c).map(claudeSse).join(""),
    error: (message) => claudeSse({ type: "error", error: { type: "api_error", message } }),
    end: (usage) => conv.end(usage).map(claudeSse).join(""),
  };
}

function geminiTarget(model: string, thoughts: boolean): StreamTarget {
  const conv = new OpenAIStreamToGemini(model, undefined, thoughts);
  return {
    chunk: (c) =>
      conv
        .push(c)
        .map((g) => sseFrame(JSON.stringify(g)))
        .join(""),
    error: (message) => sseFrame(JSON.stringify({ error: { code: 500, message, status: "INTERNAL" } })),
    end: (usage) =>
      conv
        .end(usage)
        .map((g) => sseFrame(JSON.stringify(g)))
        .join(""),
  };
}

function responsesTarget(
  req: ResponsesRequest,
  model: string,
  shape: AnswerShape | undefined,
  onResponse?: OnResponse,
): StreamTarget {
  const conv = new ChatStreamToResponses(req, model, shape);
  return {
    chunk: (c) => conv.push(c),
    error: (message) => conv.error(message),
    end: (usage) => {
      const out = conv.end(usage);
      if (conv.completed) onResponse?.(conv.completed);
      return out;
    },
  };
}

/** Re-reads the inner mapper's OpenAI SSE text and answers it in the client's format. */
class ConvertingStreamMapper implements StreamMapper {
  private reader = new SseReader();
  private enc = new TextEncoder();

  constructor(
    private inner: StreamMapper,
    private target: StreamTarget,
  ) {}

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
      if (obj?.error) out += this.target.error(String(obj.error.message ?? "upstream stream error"));
      else out += this.target.chunk(obj as OpenAIChunk);
    }
    return out;
  }

  event(ev: SseEvent): string {
    return this.convert(this.inner.event(ev));
  }

  end(counted?: () => Usage): string {
    const out = this.convert(this.inner.end(counted));
    return out + this.target.end(openAIUsage(this.inner.usage() ?? counted?.() ?? null));
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
 * The adaptor as the relay should use it for any client format and the Responses API: identical for calls
 * the channel speaks natively, converting otherwise. Memoised per adaptor.
 */
export function nativeAware(adaptor: ProviderAdaptor): ProviderAdaptor {
  const hit = wrapped.get(adaptor);
  if (hit) return hit;
  /** The call each adaptor function is given: the call itself, or its OpenAI twin. */
  const callFor = (call: ProviderCall) => {
    const plan = planOf(adaptor, call);
    return plan === "native" ? call : factsOf(plan, call).inner;
  };
  const out: ProviderAdaptor = {
    ...adaptor,
    // Every channel that chats can answer the Responses API (and compact its conversations) through chat.
    supports: (mode) =>
      adaptor.supports(mode) || ((mode === "responses" || mode === "responses_compact") && adaptor.supports("chat")),
    buildRequest(call, body) {
      const plan = planOf(adaptor, call);
      if (plan === "native")
        return adaptor.buildRequest(
          call,
          call.mode === "responses" || call.mode === "responses_compact" ? plainForUpstream(body) : body,
        );
      const f = factsOf(plan, call);
      if (plan === "compact") {
        f.responses = body;
        return adaptor.buildRequest(f.inner, { ...compactToChat(body), model: call.upstreamModel });
      }
      if (plan === "responses") {
        f.responses = body;
        f.onResponse = body?.[ON_RESPONSE];
        // Gemini and Claude (also on Vertex and Bedrock) take back the signed reasoning they gave.
        const { chat, names } = convertResponsesRequest(body, {
          gemini: adaptor.kind === "gemini" || adaptor.kind === "vertex",
          claude: adaptor.kind === "claude" || adaptor.kind === "aws" || adaptor.kind === "vertex",
        });
        f.shape = answerShape(body, names);
        return adaptor.buildRequest(f.inner, { ...chat, model: call.upstreamModel });
      }
      if (plan === "embed") return adaptor.buildRequest(f.inner, geminiEmbedToOpenAI(body, call.upstreamModel));
      if (call.format === "gemini") f.thoughts = body?.generationConfig?.thinkingConfig?.includeThoughts === true;
      return adaptor.buildRequest(f.inner, toOpenAIBody(call.format, call, body));
    },
    parseResponse(call, json): ParsedResponse {
      const plan = planOf(adaptor, call);
      if (plan === "native") return adaptor.parseResponse(call, json);
      const f = factsOf(plan, call);
      const inner = adaptor.parseResponse(f.inner, json);
      const body = inner.body as any;
      if (plan === "embed")
        return {
          body: openAIEmbedToGemini(body, /:batchEmbedContents$/.test(call.path)),
          usage: inner.usage,
          uncountedOutput: inner.uncountedOutput,
        };
      if (plan === "compact")
        return {
          body: chatToCompacted(body, f.responses ?? { model: call.requestModel }),
          usage: inner.usage,
          uncountedOutput: inner.uncountedOutput,
        };
      if (plan === "responses") {
        const response = chatToResponse(body, f.responses ?? { model: call.requestModel }, call.requestModel, f.shape);
        f.onResponse?.(response);
        return { body: response, usage: inner.usage, uncountedOutput: inner.uncountedOutput };
      }
      const converted =
        call.format === "claude"
          ? openAIResponseToClaude(body, call.requestModel)
          : openAIResponseToGemini(body, call.requestModel, f.thoughts);
      return { body: converted, usage: inner.usage, uncountedOutput: inner.uncountedOutput };
    },
    streamMapper(call) {
      const plan = planOf(adaptor, call);
      if (plan === "native") return adaptor.streamMapper(call);
      const f = factsOf(plan, call);
      const target =
        plan === "responses"
          ? responsesTarget(f.responses ?? { model: call.requestModel }, call.requestModel, f.shape, f.onResponse)
          : call.format === "claude"
            ? claudeTarget(call.requestModel)
            : geminiTarget(call.requestModel, f.thoughts);
      return new ConvertingStreamMapper(adaptor.streamMapper(f.inner), target);
    },
  };
  if (adaptor.send) out.send = (call, url, init) => adaptor.send!(callFor(call), url, init);
  if (adaptor.generatedText) out.generatedText = (call, json) => adaptor.generatedText!(callFor(call), json);
  if (adaptor.passThroughJson)
    out.passThroughJson = (call) => planOf(adaptor, call) === "native" && adaptor.passThroughJson!(call);
  if (adaptor.decodeStream) out.decodeStream = (call, body) => adaptor.decodeStream!(callFor(call), body);
  wrapped.set(adaptor, out);
  return out;
}
