// The Gemini-format entry point's conversions for channels that do not speak Gemini: a
// generateContent request becomes an OpenAI chat request, and the OpenAI reply (whole or streamed)
// becomes a GenerateContentResponse again.
import type {
  OpenAIChatRequest,
  OpenAIChatResponse,
  OpenAIChunk,
  OpenAIContentPart,
  OpenAIMessage,
  OpenAIUsage,
} from "../claude/wire.ts";
import type { GeminiPart, GeminiRequest, GeminiResponse, GeminiUsageMetadata } from "./upstream.ts";
import { AppError } from "../../../http/errors.ts";
import { geminiSchemaToJson } from "../schema.ts";
import { THINKING, effortFromBudget, effortFromLevel } from "../reasoning.ts";
import { TextBuffer } from "../text-buffer.ts";

/** Gemini inline data as an OpenAI content part: images, PDFs (file) and audio (input_audio); nothing else converts. */
function inlinePart(mimeType: string, data: string): OpenAIContentPart {
  const mime = (mimeType || "").toLowerCase();
  if (mime.startsWith("image/")) return { type: "image_url", image_url: { url: `data:${mime};base64,${data}` } };
  if (mime === "application/pdf" || mime.startsWith("text/"))
    return {
      type: "file",
      file: {
        file_data: `data:${mime};base64,${data}`,
        filename: mime === "application/pdf" ? "document.pdf" : "document.txt",
      },
    };
  const audio = /^audio\/(?:x-)?(wav|wave|mp3|mpeg)$/.exec(mime);
  if (audio)
    return {
      type: "input_audio",
      input_audio: { data, format: audio[1] === "mp3" || audio[1] === "mpeg" ? "mp3" : "wav" },
    };
  throw new AppError(
    400,
    `inline data of type '${mimeType}' is not supported on this channel (it is not a Gemini channel): images, PDFs, text and wav/mp3 audio are`,
  );
}

/** Gemini tools other than function declarations run on Google's side: no other channel has them. */
const GEMINI_TOOL_KEYS = new Set(["functionDeclarations"]);

function partsText(parts: GeminiPart[] | undefined): string {
  return (parts ?? [])
    .filter((p) => typeof p.text === "string" && !p.thought)
    .map((p) => p.text)
    .join("");
}

export function geminiRequestToOpenAI(req: GeminiRequest, model: string, stream: boolean): OpenAIChatRequest {
  const messages: OpenAIMessage[] = [];
  const system = partsText(req.systemInstruction?.parts);
  if (system) messages.push({ role: "system", content: system });
  // Gemini has no call ids; pair each functionResponse with the oldest open call of the same name
  // (a queue per name: a linear search of one list made thousands of calls quadratic).
  const open = new Map<string, { ids: string[]; next: number }>();
  let seq = 0;

  for (const c of req.contents ?? []) {
    const parts = c.parts ?? [];
    if (c.role === "model") {
      const text = partsText(parts);
      const calls = parts
        .filter((p) => p.functionCall)
        .map((p) => {
          const id = p.functionCall!.id ?? `call_${++seq}`;
          const q = open.get(p.functionCall!.name) ?? { ids: [], next: 0 };
          q.ids.push(id);
          open.set(p.functionCall!.name, q);
          return {
            id,
            type: "function" as const,
            function: { name: p.functionCall!.name, arguments: JSON.stringify(p.functionCall!.args ?? {}) },
          };
        });
      const msg: OpenAIMessage = { role: "assistant", content: text || (calls.length ? null : "") };
      if (calls.length) msg.tool_calls = calls;
      messages.push(msg);
      continue;
    }
    const content: OpenAIContentPart[] = [];
    for (const p of parts) {
      if (p.functionResponse) {
        const q = open.get(p.functionResponse.name);
        const id = p.functionResponse.id ?? (q && q.next < q.ids.length ? q.ids[q.next++]! : `call_${++seq}`);
        messages.push({
          role: "tool",
          tool_call_id: id,
          name: p.functionResponse.name,
          content: JSON.stringify(p.functionResponse.response ?? {}),
        });
      } else if (typeof p.text === "string") content.push({ type: "text", text: p.text });
      else if (p.inlineData) content.push(inlinePart(p.inlineData.mimeType, p.inlineData.data));
      else if (p.fileData) content.push({ type: "image_url", image_url: { url: p.fileData.fileUri } });
    }
    if (content.length) {
      const onlyText = content.every((p) => p.type === "text");
      messages.push({
        role: "user",
        content: onlyText ? content.map((p) => (p as { text: string }).text).join("") : content,
      });
    }
  }

  const out: OpenAIChatRequest = { model, messages };
  if (stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  if (req.cachedContent)
    throw new AppError(400, "cachedContent is a Gemini API feature this channel (not a Gemini channel) does not have");
  const g = req.generationConfig ?? {};
  if (g.temperature != null) out.temperature = g.temperature;
  if (g.topP != null) out.top_p = g.topP;
  if (g.maxOutputTokens != null) out.max_tokens = g.maxOutputTokens;
  if (g.candidateCount != null && g.candidateCount !== 1) out.n = g.candidateCount;
  if (g.presencePenalty != null) out.presence_penalty = g.presencePenalty;
  if (g.frequencyPenalty != null) out.frequency_penalty = g.frequencyPenalty;
  if (g.seed != null) out.seed = g.seed;
  if (Array.isArray(g.stopSequences) && g.stopSequences.length) out.stop = g.stopSequences;
  const modalities: unknown[] = Array.isArray(g.responseModalities) ? g.responseModalities : [];
  const other = modalities.find((m) => String(m).toUpperCase() !== "TEXT");
  if (other !== undefined || g.speechConfig) {
    throw new AppError(
      400,
      `response modality ${String(other ?? "AUDIO")} is not supported on this channel (it is not a Gemini channel): text only`,
    );
  }
  responseFormat(g, out);
  thinking(g.thinkingConfig, out);
  for (const t of req.tools ?? []) {
    const key = Object.keys(t).find((k) => !GEMINI_TOOL_KEYS.has(k));
    if (key)
      throw new AppError(
        400,
        `tool '${key}' runs on Google's side: this channel (not a Gemini channel) only takes functionDeclarations`,
      );
  }
  const decls = (req.tools ?? []).flatMap((t) => t.functionDeclarations ?? []);
  if (decls.length) {
    out.tools = decls.map((d) => ({
      type: "function" as const,
      function: {
        name: d.name,
        description: d.description,
        // parameters are Gemini's schema (upper-case types); parametersJsonSchema is meant to be JSON Schema, but
        // Gemini takes its upper-case type names there too and clients (Gemini CLI) send them: both are normalised.
        parameters: geminiSchemaToJson(
          d.parameters ?? (d as any).parametersJsonSchema ?? { type: "object", properties: {} },
        ) as Record<string, unknown>,
      },
    }));
    const mode = req.toolConfig?.functionCallingConfig?.mode;
    const allowed = req.toolConfig?.functionCallingConfig?.allowedFunctionNames;
    if (mode === "NONE") out.tool_choice = "none";
    else if (mode === "ANY")
      out.tool_choice = allowed?.length === 1 ? { type: "function", function: { name: allowed[0]! } } : "required";
    else if (mode === "AUTO") out.tool_choice = "auto";
  }
  return out;
}

/** responseMimeType + responseSchema (Gemini's schema) or responseJsonSchema (JSON Schema) → response_format. */
function responseFormat(g: Record<string, any>, out: OpenAIChatRequest): void {
  const mime = typeof g.responseMimeType === "string" ? g.responseMimeType : "";
  // responseJsonSchema too may carry Gemini's upper-case type names (Gemini CLI's routing call does).
  const given = g.responseJsonSchema ?? g.responseSchema;
  const schema = given ? geminiSchemaToJson(given) : undefined;
  if (mime === "text/x.enum") {
    throw new AppError(
      400,
      "responseMimeType text/x.enum is not supported on this channel (it is not a Gemini channel): use application/json with a schema",
    );
  }
  if (mime !== "application/json") {
    if (schema) throw new AppError(400, "a response schema needs responseMimeType application/json");
    return;
  }
  out.response_format =
    schema && typeof schema === "object"
      ? { type: "json_schema", json_schema: { name: "response", schema } }
      : { type: "json_object" };
}

/**
 * thinkingConfig → reasoning_effort for OpenAI upstreams (a budget of 0 or -1 leaves the model's default:
 * no such level exists everywhere), and the exact budget beside it for Claude and Gemini upstreams.
 */
function thinking(cfg: Record<string, unknown> | undefined, out: OpenAIChatRequest): void {
  if (!cfg || typeof cfg !== "object") return;
  const include = cfg.includeThoughts === true;
  const level = effortFromLevel(cfg.thinkingLevel);
  if (level) {
    out.reasoning_effort = level;
    return;
  }
  if (typeof cfg.thinkingBudget !== "number") return;
  out[THINKING as any] = { budget: cfg.thinkingBudget, include };
  const effort = effortFromBudget(cfg.thinkingBudget);
  if (effort) out.reasoning_effort = effort;
}

const FINISH: Record<string, string> = {
  stop: "STOP",
  length: "MAX_TOKENS",
  content_filter: "SAFETY",
  tool_calls: "STOP",
  function_call: "STOP",
};

export function geminiFinishOf(finish: string | null | undefined): string {
  return (finish && FINISH[finish]) || "STOP";
}

export function geminiUsageOf(u: OpenAIUsage | null | undefined): GeminiUsageMetadata {
  const reasoning = u?.completion_tokens_details?.reasoning_tokens ?? 0;
  const out: GeminiUsageMetadata = {
    promptTokenCount: u?.prompt_tokens ?? 0,
    candidatesTokenCount: Math.max(0, (u?.completion_tokens ?? 0) - reasoning),
    totalTokenCount: u?.total_tokens ?? (u?.prompt_tokens ?? 0) + (u?.completion_tokens ?? 0),
  };
  if (reasoning) out.thoughtsTokenCount = reasoning;
  const cached = u?.prompt_tokens_details?.cached_tokens;
  if (cached) out.cachedContentTokenCount = cached;
  return out;
}

function argsOf(s: string | undefined): Record<string, unknown> {
  try {
    const v = JSON.parse(s || "{}");
    return v && typeof v === "object" && !Array.isArray(v) ? v : { value: v };
  } catch {
    return {};
  }
}

/** Reasoning of OpenAI-style answers: reasoning_content (DeepSeek, the gateway's own conversions) or reasoning (OpenRouter, vLLM). */
export function reasoningText(m: { reasoning_content?: unknown; reasoning?: unknown } | undefined): string {
  const r = m?.reasoning_content ?? m?.reasoning;
  return typeof r === "string" ? r : "";
}

/** `thoughts`: the client asked for thought parts (thinkingConfig.includeThoughts); without it none are sent, as Gemini does. */
export function openAIResponseToGemini(res: OpenAIChatResponse, model: string, thoughts = true): GeminiResponse {
  return {
    candidates: (res.choices ?? []).map((c, i) => {
      const parts: GeminiPart[] = [];
      const reasoning = reasoningText(c.message as any);
      if (reasoning && thoughts) parts.push({ text: reasoning, thought: true });
      if (c.message?.content) parts.push({ text: c.message.content });
      for (const call of c.message?.tool_calls ?? [])
        parts.push({ functionCall: { name: call.function.name, args: argsOf(call.function.arguments) } });
      return { content: { role: "model", parts }, finishReason: geminiFinishOf(c.finish_reason), index: c.index ?? i };
    }),
    usageMetadata: geminiUsageOf(res.usage),
    modelVersion: model,
    responseId: res.id,
  };
}

/**
 * OpenAI chunks → Gemini stream chunks, one candidate per choice index (n > 1). Text goes out as it
 * arrives; a tool call's arguments arrive in pieces but Gemini sends each functionCall whole, so calls are
 * held until the end.
 */
export class OpenAIStreamToGemini {
  /** choice index → tool-call index → the call so far */
  private calls = new Map<number, Map<number, { name: string; args: string }>>();
  private finish = new Map<number, string>();
  private usage: OpenAIUsage | null = null;
  private ended = false;
  private text = new TextBuffer();

  constructor(
    private model: string,
    private id = crypto.randomUUID().replace(/-/g, ""),
    private thoughts = true,
  ) {}

  get receivedText(): string {
    return this.text.toString();
  }

  private frame(candidates: NonNullable<GeminiResponse["candidates"]>, usage?: OpenAIUsage | null): GeminiResponse {
    const out: GeminiResponse = { candidates, modelVersion: this.model, responseId: this.id };
    if (usage) out.usageMetadata = geminiUsageOf(usage);
    return out;
  }

  push(chunk: OpenAIChunk): GeminiResponse[] {
    if (chunk.usage) this.usage = chunk.usage;
    const out: GeminiResponse[] = [];
    for (const choice of chunk.choices ?? []) {
      const index = choice.index ?? 0;
      const d = choice.delta ?? {};
      const parts: GeminiPart[] = [];
      const reasoning = reasoningText(d as any);
      if (reasoning && this.thoughts) parts.push({ text: reasoning, thought: true });
      if (typeof d.content === "string" && d.content) {
        this.text.add(d.content);
        parts.push({ text: d.content });
      }
      if (d.tool_calls?.length && !this.calls.has(index)) this.calls.set(index, new Map());
      for (const t of d.tool_calls ?? []) {
        const held = this.calls.get(index)!;
        const idx = t.index ?? 0;
        const cur = held.get(idx) ?? { name: "", args: "" };
        if (t.function?.name) cur.name = t.function.name;
        if (t.function?.arguments) {
          cur.args += t.function.arguments;
          this.text.add(t.function.arguments);
        }
        held.set(idx, cur);
      }
      if (parts.length) out.push(this.frame([{ content: { role: "model", parts }, index }]));
      if (choice.finish_reason) this.finish.set(index, choice.finish_reason);
      else if (!this.finish.has(index)) this.finish.set(index, "");
    }
    return out;
  }

  /** The closing chunk: each candidate's held function calls and finish reason, and the usage. */
  end(usage?: OpenAIUsage | null): GeminiResponse[] {
    if (this.ended) return [];
    this.ended = true;
    const indices = [...new Set([0, ...this.finish.keys(), ...this.calls.keys()])].sort((a, b) => a - b);
    const candidates = indices.map((index) => {
      const parts: GeminiPart[] = [...(this.calls.get(index)?.values() ?? [])].map((c) => ({
        functionCall: { name: c.name, args: argsOf(c.args) },
      }));
      if (parts.length === 0) parts.push({ text: "" });
      return { content: { role: "model", parts }, finishReason: geminiFinishOf(this.finish.get(index) || null), index };
    });
    return [this.frame(candidates, usage ?? this.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 })];
  }
}

/** The texts of a Gemini embedContent ({content}) or batchEmbedContents ({requests: [{content}]}) body. */
export function geminiEmbedTexts(body: any): string[] {
  const contents: any[] = Array.isArray(body?.requests) ? body.requests.map((r: any) => r?.content) : [body?.content];
  return contents.map((c, i) => {
    const parts: any[] = Array.isArray(c?.parts) ? c.parts : [];
    if (parts.length === 0 || parts.some((p) => typeof p?.text !== "string")) {
      throw new AppError(
        400,
        `* content${Array.isArray(body?.requests) ? ` of requests[${i}]` : ""}: only text parts can be embedded here`,
      );
    }
    return parts.map((p) => p.text).join("");
  });
}

/** A Gemini embedding request as an OpenAI embeddings request (outputDimensionality → dimensions). */
export function geminiEmbedToOpenAI(body: any, model: string): Record<string, unknown> {
  const first = Array.isArray(body?.requests) ? body.requests[0] : body;
  const out: Record<string, unknown> = { model, input: geminiEmbedTexts(body) };
  const dims = Number(first?.outputDimensionality);
  if (Number.isInteger(dims) && dims > 0) out.dimensions = dims;
  return out;
}

/** An OpenAI embeddings answer in the shape of the Gemini method the client called. */
export function openAIEmbedToGemini(res: any, batch: boolean): Record<string, unknown> {
  const values = (Array.isArray(res?.data) ? res.data : [])
    .slice()
    .sort((a: any, b: any) => (a?.index ?? 0) - (b?.index ?? 0))
    .map((d: any) => ({ values: Array.isArray(d?.embedding) ? d.embedding : [] }));
  return batch ? { embeddings: values } : { embedding: values[0] ?? { values: [] } };
}
