// Cohere (channel type 34): the v2 API — /v2/chat (OpenAI-like messages and tools, its own answer and
// stream events), /v2/embed and /v2/rerank. Cohere's OpenAI compatibility endpoint refuses
// stream_options, so a stream's usage would be lost there; the native stream reports it in message-end.
import type { ProviderAdaptor, ProviderCall, SseEvent } from "../types.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import {
  ConvertedStream,
  chatCompletion,
  contentText,
  providerErrorMessage,
  usageOf,
  type ToolCall,
} from "../openai/chunks.ts";

/** Where the v2 API sits (a base URL given with /v1 or /v2 is tolerated). */
const root = (base: string) => base.replace(/\/v[12]$/, "");

function userContent(content: unknown): unknown {
  if (!Array.isArray(content)) return contentText(content);
  const parts = content.map((p: any) =>
    p?.type === "image_url"
      ? { type: "image_url", image_url: { url: p.image_url?.url ?? p.image_url } }
      : { type: "text", text: p?.text ?? "" },
  );
  return parts.every((p) => p.type === "text") ? parts.map((p: any) => p.text).join("") : parts;
}

/** OpenAI chat → Cohere v2 chat. */
export function cohereChatBody(
  call: Pick<ProviderCall, "upstreamModel" | "stream">,
  body: any,
): Record<string, unknown> {
  const messages = (Array.isArray(body?.messages) ? body.messages : []).map((m: any) => {
    if (m?.role === "system" || m?.role === "developer") return { role: "system", content: contentText(m.content) };
    if (m?.role === "tool") return { role: "tool", tool_call_id: m.tool_call_id, content: contentText(m.content) };
    if (m?.role === "assistant") {
      const out: Record<string, unknown> = { role: "assistant" };
      const text = contentText(m.content);
      if (Array.isArray(m.tool_calls) && m.tool_calls.length) {
        out.tool_calls = m.tool_calls.map((t: any) => ({
          id: t.id,
          type: "function",
          function: { name: t.function?.name, arguments: t.function?.arguments ?? "{}" },
        }));
        if (text) out.tool_plan = text;
      } else out.content = text;
      return out;
    }
    return { role: "user", content: userContent(m?.content) };
  });
  const out: Record<string, unknown> = { model: call.upstreamModel, messages, stream: call.stream };
  if (Array.isArray(body?.tools) && body.tools.length)
    out.tools = body.tools.filter((t: any) => t?.type === "function");
  if (body?.tool_choice === "required") out.tool_choice = "REQUIRED";
  else if (body?.tool_choice === "none") out.tool_choice = "NONE";
  const max = body?.max_completion_tokens ?? body?.max_tokens;
  if (typeof max === "number") out.max_tokens = max;
  for (const [from, to] of [
    ["temperature", "temperature"],
    ["top_p", "p"],
    ["top_k", "k"],
    ["seed", "seed"],
    ["frequency_penalty", "frequency_penalty"],
    ["presence_penalty", "presence_penalty"],
  ] as const) {
    if (typeof body?.[from] === "number") out[to] = body[from];
  }
  if (body?.stop) out.stop_sequences = Array.isArray(body.stop) ? body.stop : [body.stop];
  const rf = body?.response_format;
  if (rf?.type === "json_object") out.response_format = { type: "json_object" };
  else if (rf?.type === "json_schema")
    out.response_format = { type: "json_object", json_schema: rf.json_schema?.schema ?? {} };
  return out;
}

export function cohereFinish(reason: unknown): string {
  switch (reason) {
    case "MAX_TOKENS":
      return "length";
    case "TOOL_CALL":
      return "tool_calls";
    default:
      return "stop";
  }
}

/** Billed units when Cohere reports them (what it charges), else the token counts. */
function cohereUsage(u: any) {
  const b = u?.billed_units ?? {};
  const t = u?.tokens ?? {};
  return usageOf(b.input_tokens ?? t.input_tokens, b.output_tokens ?? t.output_tokens);
}

function toolCallsOf(message: any): ToolCall[] | undefined {
  const calls = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
  if (!calls.length) return undefined;
  return calls.map((c: any) => ({
    id: String(c.id),
    type: "function",
    function: {
      name: String(c.function?.name ?? ""),
      arguments:
        typeof c.function?.arguments === "string" ? c.function.arguments : JSON.stringify(c.function?.arguments ?? {}),
    },
  }));
}

const textOf = (message: any) =>
  Array.isArray(message?.content)
    ? message.content
        .filter((c: any) => c?.type === "text")
        .map((c: any) => c.text ?? "")
        .join("")
    : "";

class CohereStream extends ConvertedStream {
  protected onJson(j: any, ev: SseEvent): string {
    const type = j?.type ?? ev.event;
    const m = j?.delta?.message;
    switch (type) {
      case "content-delta":
        return this.text(m?.content?.text ?? "");
      case "tool-plan-delta":
        return this.reasoning(m?.tool_plan ?? "");
      case "tool-call-start": {
        const t = m?.tool_calls ?? {};
        return this.tool(Number(j.index) || 0, {
          id: t.id,
          name: t.function?.name ?? "",
          arguments: t.function?.arguments ?? "",
        });
      }
      case "tool-call-delta":
        return this.tool(Number(j.index) || 0, { arguments: m?.tool_calls?.function?.arguments ?? "" });
      case "message-end": {
        this.found = cohereUsage(j?.delta?.usage) ?? this.found;
        if (j?.delta?.finish_reason === "ERROR")
          return this.error(j?.delta?.error ?? "the upstream ended the answer with an error");
        return this.finish(cohereFinish(j?.delta?.finish_reason));
      }
      default:
        return "";
    }
  }
}

function rerankBody(call: ProviderCall, body: any): Record<string, unknown> {
  const documents = (Array.isArray(body?.documents) ? body.documents : []).map((d: any) =>
    typeof d === "string" ? d : (d?.text ?? JSON.stringify(d)),
  );
  const out: Record<string, unknown> = { model: call.upstreamModel, query: String(body?.query ?? ""), documents };
  if (typeof body?.top_n === "number") out.top_n = body.top_n;
  return out;
}

const ENDPOINTS: Record<string, string> = { chat: "/v2/chat", embeddings: "/v2/embed", rerank: "/v2/rerank" };
/** The client's rerank documents, to echo them back when asked (Cohere v2 no longer returns them). */
const rerankDocs = new WeakMap<ProviderCall, { docs: unknown[]; returnDocuments: boolean }>();

export const cohereAdaptor: ProviderAdaptor = {
  kind: "cohere",
  supports: (mode) => mode in ENDPOINTS,
  buildRequest(call, body) {
    let out: Record<string, unknown>;
    if (call.mode === "embeddings") {
      out = {
        model: call.upstreamModel,
        texts: (Array.isArray(body?.input) ? body.input : [body?.input]).map(String),
        input_type: body?.input_type ?? "search_document",
        embedding_types: ["float"],
      };
    } else if (call.mode === "rerank") {
      out = rerankBody(call, body);
      rerankDocs.set(call, {
        docs: Array.isArray(body?.documents) ? body.documents : [],
        returnDocuments: body?.return_documents !== false,
      });
    } else out = cohereChatBody(call, body);
    const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${call.key}` };
    if (call.stream) headers.accept = "text/event-stream";
    return { url: root(call.baseUrl) + ENDPOINTS[call.mode], headers, body: JSON.stringify(out) };
  },
  parseResponse(call, json) {
    if (call.mode === "embeddings") {
      const vectors: number[][] = json?.embeddings?.float ?? (Array.isArray(json?.embeddings) ? json.embeddings : []);
      const usage = usageOf(json?.meta?.billed_units?.input_tokens, 0);
      return {
        body: {
          object: "list",
          data: vectors.map((embedding, index) => ({ object: "embedding", index, embedding })),
          model: call.requestModel,
          usage: { prompt_tokens: usage?.prompt_tokens ?? 0, total_tokens: usage?.total_tokens ?? 0 },
        },
        usage,
      };
    }
    if (call.mode === "rerank") {
      const asked = rerankDocs.get(call);
      const results = (Array.isArray(json?.results) ? json.results : []).map((r: any) => {
        const doc = asked?.docs[r.index];
        const out: Record<string, unknown> = { index: r.index, relevance_score: r.relevance_score };
        if (asked?.returnDocuments && doc !== undefined) out.document = typeof doc === "string" ? { text: doc } : doc;
        return out;
      });
      return {
        body: {
          id: json?.id,
          model: call.requestModel,
          results,
          usage: { search_units: json?.meta?.billed_units?.search_units ?? 1 },
        },
        usage: null,
      };
    }
    const usage = cohereUsage(json?.usage);
    const tool_calls = toolCallsOf(json?.message);
    const text = textOf(json?.message);
    const message = tool_calls
      ? { content: text || null, reasoning_content: json?.message?.tool_plan, tool_calls }
      : { content: text };
    return {
      body: chatCompletion(call.requestModel, message, cohereFinish(json?.finish_reason), usage, json?.id),
      usage,
    };
  },
  generatedText: (_call, json) =>
    textOf(json?.message)
    + (json?.message?.tool_plan ?? "")
    + (toolCallsOf(json?.message) ?? []).map((t) => t.function.name + t.function.arguments).join(""),
  streamMapper: (call) => new CohereStream(call),
  errorMessage: providerErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[34],
  async fetchModels(baseUrl, key) {
    const res = await fetch(`${root(baseUrl)}/v1/models?page_size=1000`, {
      headers: { authorization: `Bearer ${key}` },
    });
    if (!res.ok) throw new Error(`the upstream model list answered ${res.status}`);
    const j: any = await res.json();
    return (Array.isArray(j?.models) ? j.models : []).map((m: any) => String(m.name)).filter(Boolean);
  },
};
