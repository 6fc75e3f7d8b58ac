// OpenAI chat/embeddings → Gemini generateContent/embedContent (requests) and Gemini → OpenAI
// (responses and streams). Pure functions; the adaptor supplies option values and fetched images.
import type {
  OpenAIChatRequest,
  OpenAIChatResponse,
  OpenAIChunk,
  OpenAIContentPart,
  OpenAIMessage,
  OpenAIUsage,
} from "../claude/wire.ts";
import { parseDataUrl } from "../claude/upstream.ts";
import { GEMINI_BUDGET_CAP, effortOf, geminiBudget, thinkingOf } from "../reasoning.ts";
import { refuseOpenAIOnly } from "../chat-only.ts";
import { AppError } from "../../../http/errors.ts";
import { TextBuffer } from "../text-buffer.ts";

export type GeminiPart = {
  text?: string;
  thought?: boolean;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: { name: string; args?: Record<string, unknown>; id?: string };
  functionResponse?: { name: string; response: Record<string, unknown>; id?: string };
  /** Gemini's signature of the thinking behind a part (on function calls): sent back with it on the next turn. */
  thoughtSignature?: string;
  [k: string]: unknown;
};

/**
 * Where a Gemini thought signature travels in OpenAI chat: Google's own OpenAI-compatible API puts it on the
 * tool call as extra_content.google.thought_signature, so a client that keeps it gives it back.
 */
export const signatureOfCall = (c: unknown): string | undefined => {
  const s = (c as { extra_content?: { google?: { thought_signature?: unknown } } } | undefined)?.extra_content?.google
    ?.thought_signature;
  return typeof s === "string" && s ? s : undefined;
};
const signedCall = (signature: string | undefined) =>
  signature ? { extra_content: { google: { thought_signature: signature } } } : {};

/**
 * Gemini 3 and later refuse a model turn whose function calls carry no thought signature. A history the
 * gateway cannot sign (an OpenAI client that dropped it, another model's turns) gets the value Google documents
 * for that case on the turn's first call.
 */
export const UNSIGNED_THOUGHT = "skip_thought_signature_validator";
const signsCalls = (model: string) => Number(/gemini-(\d+)/.exec(model)?.[1] ?? 0) >= 3;
export interface GeminiContent {
  role?: "user" | "model" | string;
  parts: GeminiPart[];
}
export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: { role?: string; parts: GeminiPart[] };
  tools?: {
    functionDeclarations?: { name: string; description?: string; parameters?: unknown }[];
    [k: string]: unknown;
  }[];
  toolConfig?: { functionCallingConfig?: { mode?: string; allowedFunctionNames?: string[] } };
  safetySettings?: { category: string; threshold: string }[];
  generationConfig?: Record<string, any>;
  [k: string]: unknown;
}
export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  cachedContentTokenCount?: number;
  totalTokenCount?: number;
}
export interface GeminiResponse {
  candidates?: { content?: GeminiContent; finishReason?: string; index?: number; [k: string]: unknown }[];
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
  promptFeedback?: { blockReason?: string };
}

export interface GeminiSettings {
  /** Harm threshold per category (gemini.safety_settings: {"default": "OFF", "<CATEGORY>": "..."}). */
  safety: Record<string, string>;
  thinkingAdapter: boolean;
  thinkingPercentage: number;
  /** Models that may answer with images (gemini.supported_imagine_models). */
  imageModels: string[];
}

export const SAFETY_CATEGORIES = [
  "HARM_CATEGORY_HARASSMENT",
  "HARM_CATEGORY_HATE_SPEECH",
  "HARM_CATEGORY_SEXUALLY_EXPLICIT",
  "HARM_CATEGORY_DANGEROUS_CONTENT",
  "HARM_CATEGORY_CIVIC_INTEGRITY",
] as const;

/** Gemini ignores thinking budgets above this; the adapter never asks for more. */
export const GEMINI_THINKING_BUDGET_CAP = GEMINI_BUDGET_CAP;

/**
 * Model-name suffixes of the thinking adapter: "-thinking" (budget = percentage × max tokens),
 * "-thinking-<n>" (explicit budget), "-nothinking" (budget 0). Returns the bare model and the config.
 */
export function thinkingFromModel(
  model: string,
  maxTokens: number | undefined,
  s: GeminiSettings,
): { model: string; thinking?: { thinkingBudget: number; includeThoughts?: boolean } } {
  if (!s.thinkingAdapter) return { model };
  if (model.endsWith("-nothinking"))
    return { model: model.slice(0, -"-nothinking".length), thinking: { thinkingBudget: 0 } };
  const explicit = /^(.*)-thinking-(\d+)$/.exec(model);
  if (explicit) {
    return {
      model: explicit[1]!,
      thinking: { thinkingBudget: Math.min(GEMINI_THINKING_BUDGET_CAP, Number(explicit[2])), includeThoughts: true },
    };
  }
  if (model.endsWith("-thinking")) {
    const budget = Math.floor((maxTokens ?? GEMINI_THINKING_BUDGET_CAP) * s.thinkingPercentage);
    return {
      model: model.slice(0, -"-thinking".length),
      thinking: { thinkingBudget: Math.min(GEMINI_THINKING_BUDGET_CAP, budget), includeThoughts: true },
    };
  }
  return { model };
}

export function safetySettings(map: Record<string, string>): { category: string; threshold: string }[] {
  const fallback = map.default ?? "OFF";
  return SAFETY_CATEGORIES.map((category) => ({ category, threshold: map[category] ?? fallback }));
}

// Gemini's function schemas are an OpenAPI subset: JSON-Schema-only keywords make it reject the call.
const UNSUPPORTED_SCHEMA_KEYS = new Set([
  "$schema",
  "$id",
  "additionalProperties",
  "strict",
  "$defs",
  "definitions",
  "examples",
]);

export function cleanSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(cleanSchema);
  if (!schema || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (UNSUPPORTED_SCHEMA_KEYS.has(k)) continue;
    out[k] =
      k === "properties" && v && typeof v === "object"
        ? Object.fromEntries(Object.entries(v).map(([name, s]) => [name, cleanSchema(s)]))
        : cleanSchema(v);
  }
  return out;
}

function textOf(content: OpenAIMessage["content"]): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content
    .filter((p) => p.type === "text")
    .map((p) => (p as { text: string }).text)
    .join("");
}

/** Image URLs of a request that are not data: URLs; Gemini needs their bytes inline. */
export function remoteImageUrls(req: OpenAIChatRequest): string[] {
  const urls: string[] = [];
  for (const m of req.messages ?? []) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type !== "image_url") continue;
      const url = typeof (p as any).image_url === "string" ? (p as any).image_url : (p as any).image_url?.url;
      if (typeof url === "string" && !url.startsWith("data:")) urls.push(url);
    }
  }
  return urls;
}

function partsOf(
  content: OpenAIMessage["content"],
  images: Map<string, { mimeType: string; data: string }>,
): GeminiPart[] {
  if (content == null) return [];
  if (typeof content === "string") return content === "" ? [] : [{ text: content }];
  const out: GeminiPart[] = [];
  for (const p of content as OpenAIContentPart[]) {
    if (p.type === "text") out.push({ text: (p as { text: string }).text });
    else if (p.type === "image_url") {
      const url: string =
        typeof (p as any).image_url === "string" ? (p as any).image_url : ((p as any).image_url?.url ?? "");
      const data = parseDataUrl(url);
      if (data) out.push({ inlineData: { mimeType: data.mediaType, data: data.data } });
      else if (images.has(url)) out.push({ inlineData: images.get(url)! });
      else out.push({ fileData: { fileUri: url } });
    } else if (p.type === "file") {
      // PDFs and text as inline data; a URL as file data (Gemini fetches what it can).
      const f = (p as { file?: { file_data?: string; file_url?: string } }).file ?? {};
      const data = f.file_data ? parseDataUrl(f.file_data) : null;
      if (data) out.push({ inlineData: { mimeType: data.mediaType, data: data.data } });
      else if (f.file_url) out.push({ fileData: { fileUri: f.file_url } });
      else
        throw new AppError(
          400,
          "a file part needs file_data (a base64 data URL) on this channel (Gemini): uploaded file ids are not shared with it",
        );
    } else if (p.type === "input_audio") {
      const a = (p as { input_audio?: { data?: string; format?: string } }).input_audio ?? {};
      out.push({
        inlineData: { mimeType: a.format === "mp3" ? "audio/mp3" : "audio/wav", data: String(a.data ?? "") },
      });
    } else throw new AppError(400, `content part type '${p.type}' is not supported on this channel (Gemini)`);
  }
  return out;
}

function parseArgs(s: string | undefined): Record<string, unknown> {
  if (!s) return {};
  try {
    const v = JSON.parse(s);
    return v && typeof v === "object" && !Array.isArray(v) ? v : { value: v };
  } catch {
    return {};
  }
}

/** A tool message's content as the object Gemini wants in functionResponse.response. */
function toolResponse(content: string): Record<string, unknown> {
  try {
    const v = JSON.parse(content);
    if (v && typeof v === "object" && !Array.isArray(v)) return v;
  } catch {}
  return { content };
}

function pushContent(out: GeminiContent[], role: "user" | "model", parts: GeminiPart[]): void {
  if (parts.length === 0) return;
  const last = out[out.length - 1];
  if (last && last.role === role) last.parts.push(...parts);
  else out.push({ role, parts });
}

/**
 * Thinking a client asked for, when the model suffix did not: the exact budget of a Claude or Gemini client
 * (-1 = dynamic), else OpenAI's reasoning_effort as a budget (formats/reasoning.ts). Reasoning comes back
 * as thought parts (reasoning_content for OpenAI clients).
 */
function askedThinking(
  req: OpenAIChatRequest,
  maxTokens: number | undefined,
  s: GeminiSettings,
): { thinkingBudget: number; includeThoughts?: boolean } | undefined {
  const asked = thinkingOf(req);
  if (asked) {
    const budget = asked.budget < 0 ? -1 : Math.min(GEMINI_BUDGET_CAP, Math.floor(asked.budget));
    return budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: asked.include };
  }
  const effort = effortOf(req.reasoning_effort);
  if (!effort) return undefined;
  const budget = geminiBudget(effort, maxTokens, s.thinkingPercentage);
  return budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: true };
}

/**
 * images: bytes of remote image URLs fetched by the adaptor (url → inline data); URLs missing from
 * it are sent as fileData (Gemini accepts gs:// and uploaded-file URIs there).
 */
export function toGeminiRequest(
  req: OpenAIChatRequest,
  s: GeminiSettings,
  images = new Map<string, { mimeType: string; data: string }>(),
): { model: string; body: GeminiRequest } {
  refuseOpenAIOnly(req, "Gemini");
  const maxTokens = req.max_completion_tokens ?? req.max_tokens;
  const fromModel = thinkingFromModel(req.model, maxTokens, s);
  const model = fromModel.model;
  const thinking = fromModel.thinking ?? askedThinking(req, maxTokens, s);
  const contents: GeminiContent[] = [];
  const system: string[] = [];
  const toolNames = new Map<string, string>();

  for (const m of req.messages ?? []) {
    if (m.role === "system" || m.role === "developer") {
      const t = textOf(m.content);
      if (t) system.push(t);
    } else if (m.role === "assistant") {
      const parts = partsOf(m.content, images);
      (m.tool_calls ?? []).forEach((c, i) => {
        toolNames.set(c.id, c.function.name);
        const signature = signatureOfCall(c) ?? (i === 0 && signsCalls(model) ? UNSIGNED_THOUGHT : undefined);
        parts.push({
          functionCall: { name: c.function.name, args: parseArgs(c.function.arguments) },
          ...(signature ? { thoughtSignature: signature } : {}),
        });
      });
      pushContent(contents, "model", parts);
    } else if (m.role === "tool") {
      const name = m.name ?? toolNames.get(m.tool_call_id ?? "") ?? "function";
      pushContent(contents, "user", [{ functionResponse: { name, response: toolResponse(textOf(m.content)) } }]);
    } else {
      pushContent(contents, "user", partsOf(m.content, images));
    }
  }

  const body: GeminiRequest = { contents };
  if (system.length) body.systemInstruction = { parts: [{ text: system.join("\n") }] };
  body.safetySettings = safetySettings(s.safety);
  const gen: Record<string, any> = {};
  if (req.temperature != null) gen.temperature = req.temperature;
  if (req.top_p != null) gen.topP = req.top_p;
  if (req.top_k != null) gen.topK = req.top_k;
  if (maxTokens != null) gen.maxOutputTokens = maxTokens;
  if (req.n != null && req.n > 1) gen.candidateCount = req.n;
  if (req.presence_penalty != null) gen.presencePenalty = req.presence_penalty;
  if (req.frequency_penalty != null) gen.frequencyPenalty = req.frequency_penalty;
  if (req.seed != null) gen.seed = req.seed;
  if (req.stop != null) {
    const stops = (Array.isArray(req.stop) ? req.stop : [req.stop]).filter(Boolean);
    if (stops.length) gen.stopSequences = stops;
  }
  const fmt = req.response_format as { type?: string; json_schema?: { schema?: unknown } } | undefined;
  if (fmt?.type === "json_object" || fmt?.type === "json_schema") {
    gen.responseMimeType = "application/json";
    if (fmt.json_schema?.schema) gen.responseSchema = cleanSchema(fmt.json_schema.schema);
  }
  if (thinking) gen.thinkingConfig = thinking;
  if (s.imageModels.includes(model)) gen.responseModalities = ["TEXT", "IMAGE"];
  if (Object.keys(gen).length) body.generationConfig = gen;

  if (req.tools?.length) {
    body.tools = [
      {
        functionDeclarations: req.tools.map((t) => {
          const decl: { name: string; description?: string; parameters?: unknown } = { name: t.function.name };
          if (t.function.description) decl.description = t.function.description;
          const params = t.function.parameters as { properties?: object } | undefined;
          // An empty object schema is rejected; a function without parameters leaves the field out.
          if (params && params.properties && Object.keys(params.properties).length)
            decl.parameters = cleanSchema(params);
          return decl;
        }),
      },
    ];
    const c = req.tool_choice;
    if (c === "none") body.toolConfig = { functionCallingConfig: { mode: "NONE" } };
    else if (c === "required") body.toolConfig = { functionCallingConfig: { mode: "ANY" } };
    else if (c && typeof c === "object" && c.function?.name) {
      body.toolConfig = { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [c.function.name] } };
    }
  }
  return { model, body };
}

const FINISH: Record<string, string> = {
  STOP: "stop",
  MAX_TOKENS: "length",
  SAFETY: "content_filter",
  RECITATION: "content_filter",
  BLOCKLIST: "content_filter",
  PROHIBITED_CONTENT: "content_filter",
  SPII: "content_filter",
  IMAGE_SAFETY: "content_filter",
};

export function finishReasonOf(reason: string | undefined, hasToolCalls: boolean): string | null {
  if (!reason) return null;
  if (hasToolCalls) return "tool_calls";
  return FINISH[reason] ?? "stop";
}

/** Gemini's promptTokenCount already includes cached tokens; thoughts are billed as completion. */
export function usageFromGemini(m: GeminiUsageMetadata | undefined): OpenAIUsage {
  const prompt = m?.promptTokenCount ?? 0;
  const thoughts = m?.thoughtsTokenCount ?? 0;
  const completion = (m?.candidatesTokenCount ?? 0) + thoughts;
  const usage: OpenAIUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: m?.cachedContentTokenCount ?? 0 },
  };
  if (thoughts) usage.completion_tokens_details = { reasoning_tokens: thoughts };
  return usage;
}

export function callId(): string {
  return "call_" + crypto.randomUUID().replace(/-/g, "").slice(0, 24);
}

/**
 * Text, reasoning and tool calls of one candidate's parts; inline images become markdown data URLs in
 * `text`. `written` is the text without them, for counting: base64 image bytes are no generated text.
 */
export function splitParts(parts: GeminiPart[] | undefined): {
  text: string;
  written: string;
  thought: string;
  calls: { name: string; args: unknown; id?: string; signature?: string }[];
} {
  let text = "";
  let written = "";
  let thought = "";
  const calls: { name: string; args: unknown; id?: string; signature?: string }[] = [];
  for (const p of parts ?? []) {
    if (p.functionCall)
      calls.push({
        name: p.functionCall.name,
        args: p.functionCall.args ?? {},
        id: p.functionCall.id,
        signature: p.thoughtSignature,
      });
    else if (typeof p.text === "string") {
      if (p.thought) thought += p.text;
      else {
        text += p.text;
        written += p.text;
      }
    } else if (p.inlineData) text += `![image](data:${p.inlineData.mimeType};base64,${p.inlineData.data})`;
  }
  return { text, written, thought, calls };
}

/** Text, thoughts and function calls of every candidate, counted as the stream conversion counts them. */
export function geminiGeneratedText(res: GeminiResponse): string {
  let out = "";
  for (const c of res?.candidates ?? []) {
    const { written, thought, calls } = splitParts(c.content?.parts);
    out += thought + written;
    for (const call of calls) out += call.name + JSON.stringify(call.args);
  }
  return out;
}

export function fromGeminiResponse(
  res: GeminiResponse,
  model: string,
  created = Math.floor(Date.now() / 1000),
): OpenAIChatResponse {
  const choices = (res.candidates ?? []).map((c, i) => {
    const { text, thought, calls } = splitParts(c.content?.parts);
    const message: OpenAIChatResponse["choices"][0]["message"] = { role: "assistant", content: text };
    if (thought) message.reasoning_content = thought;
    if (calls.length) {
      message.tool_calls = calls.map((c) => ({
        id: c.id || callId(),
        type: "function" as const,
        function: { name: c.name, arguments: JSON.stringify(c.args) },
        ...signedCall(c.signature),
      }));
    }
    return { index: c.index ?? i, message, finish_reason: finishReasonOf(c.finishReason, calls.length > 0) ?? "stop" };
  });
  if (choices.length === 0 && res.promptFeedback?.blockReason) {
    choices.push({ index: 0, message: { role: "assistant", content: "" }, finish_reason: "content_filter" });
  }
  return {
    id: res.responseId ? `chatcmpl-${res.responseId}` : `chatcmpl-${crypto.randomUUID().replace(/-/g, "")}`,
    object: "chat.completion",
    created,
    model,
    choices,
    usage: usageFromGemini(res.usageMetadata),
  };
}

/** Gemini stream chunks (each a partial GenerateContentResponse) → OpenAI chunks. */
export class GeminiStreamToOpenAI {
  private id = `chatcmpl-${crypto.randomUUID().replace(/-/g, "")}`;
  private started = false;
  private toolIndex = 0;
  private text = new TextBuffer();
  private finished = false;
  private completionCounted = false;
  private promptCounted = false;
  usage: OpenAIUsage | null = null;

  constructor(
    private model: string,
    private created = Math.floor(Date.now() / 1000),
  ) {}

  /** Content, thoughts and tool calls received so far (for counting when usage is missing or partial). */
  get receivedText(): string {
    return this.text.toString();
  }

  /** Whether the latest usageMetadata counted the prompt. */
  get hasPromptCount(): boolean {
    return this.promptCounted;
  }

  /** Whether a candidate finished and usageMetadata counted the completion: before that the count may be partial or missing. */
  get hasFinalUsage(): boolean {
    return this.finished && this.completionCounted;
  }

  private chunk(delta: OpenAIChunk["choices"][0]["delta"], finish: string | null = null, index = 0): OpenAIChunk {
    return {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices: [{ index, delta, finish_reason: finish }],
    };
  }

  push(res: GeminiResponse): OpenAIChunk[] {
    const out: OpenAIChunk[] = [];
    if (res.usageMetadata) {
      this.usage = usageFromGemini(res.usageMetadata);
      this.completionCounted = typeof res.usageMetadata.candidatesTokenCount === "number";
      this.promptCounted = typeof res.usageMetadata.promptTokenCount === "number";
    }
    if (!this.started) {
      this.started = true;
      out.push(this.chunk({ role: "assistant", content: "" }));
    }
    // A refused prompt has no candidate to finish: without this the client never gets a finish_reason.
    if (res.promptFeedback?.blockReason && !res.candidates?.length && !this.finished) {
      this.finished = true;
      out.push(this.chunk({}, "content_filter"));
    }
    for (const [i, c] of (res.candidates ?? []).entries()) {
      const index = c.index ?? i;
      const { text, written, thought, calls } = splitParts(c.content?.parts);
      if (thought) {
        this.text.add(thought);
        out.push(this.chunk({ reasoning_content: thought }, null, index));
      }
      if (text) {
        this.text.add(written);
        out.push(this.chunk({ content: text }, null, index));
      }
      if (calls.length) {
        const tool_calls = calls.map((call) => {
          const args = JSON.stringify(call.args);
          this.text.add(call.name + args);
          return {
            index: this.toolIndex++,
            id: call.id || callId(),
            type: "function" as const,
            function: { name: call.name, arguments: args },
            ...signedCall(call.signature),
          };
        });
        out.push(this.chunk({ tool_calls }, null, index));
      }
      const finish = finishReasonOf(c.finishReason, this.toolIndex > 0);
      if (finish) {
        this.finished = true;
        out.push(this.chunk({}, finish, index));
      }
    }
    return out;
  }

  usageChunk(): OpenAIChunk {
    return {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices: [],
      usage: this.usage,
    };
  }
}

/** OpenAI embeddings input by its form: texts (string, string[]) or token arrays (number[], number[][]).
 *  Null for anything else, and for empty inputs, which OpenAI refuses too. */
export function embeddingInput(input: unknown): { texts: string[] } | { tokens: number[][] } | null {
  const text = (v: unknown): v is string => typeof v === "string" && v !== "";
  const ids = (v: unknown): v is number[] =>
    Array.isArray(v) && v.length > 0 && v.every((n) => Number.isInteger(n) && n >= 0);
  if (text(input)) return { texts: [input] };
  if (!Array.isArray(input) || input.length === 0) return null;
  if (input.every(text)) return { texts: input };
  if (ids(input)) return { tokens: [input] };
  if (input.every(ids)) return { tokens: input };
  return null;
}

/** Texts to embed → Gemini batchEmbedContents body, one request per text. */
export function toBatchEmbedRequest(model: string, texts: string[], dimensions?: number) {
  return {
    requests: texts.map((text) => {
      const r: { model: string; content: { parts: { text: string }[] }; outputDimensionality?: number } = {
        model: `models/${model}`,
        content: { parts: [{ text }] },
      };
      if (dimensions) r.outputDimensionality = dimensions;
      return r;
    }),
  };
}

/** An embedding as OpenAI's encoding_format "base64" sends it: little-endian float32 bytes. */
function base64Floats(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString("base64");
}

/** batchEmbedContents {embeddings:[{values}]} (or embedContent {embedding:{values}}) → OpenAI list. */
export function fromEmbedResponse(res: any, model: string, promptTokens: number, base64 = false) {
  const list: { values: number[] }[] = Array.isArray(res?.embeddings)
    ? res.embeddings
    : res?.embedding
      ? [res.embedding]
      : [];
  return {
    object: "list",
    data: list.map((e, index) => ({
      object: "embedding",
      index,
      embedding: base64 ? base64Floats(e.values ?? []) : (e.values ?? []),
    })),
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}
