// The Gemini-format entry point's conversions for channels that do not speak Gemini: a
// generateContent request becomes an OpenAI chat request, and the OpenAI reply (whole or streamed)
// becomes a GenerateContentResponse again.
import type { OpenAIChatRequest, OpenAIChatResponse, OpenAIChunk, OpenAIContentPart, OpenAIMessage, OpenAIUsage } from "../claude/wire.ts";
import type { GeminiPart, GeminiRequest, GeminiResponse, GeminiUsageMetadata } from "./upstream.ts";

function partsText(parts: GeminiPart[] | undefined): string {
  return (parts ?? []).filter((p) => typeof p.text === "string" && !p.thought).map((p) => p.text).join("");
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
      const calls = parts.filter((p) => p.functionCall).map((p) => {
        const id = p.functionCall!.id ?? `call_${++seq}`;
        const q = open.get(p.functionCall!.name) ?? { ids: [], next: 0 };
        q.ids.push(id);
        open.set(p.functionCall!.name, q);
        return { id, type: "function" as const, function: { name: p.functionCall!.name, arguments: JSON.stringify(p.functionCall!.args ?? {}) } };
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
        messages.push({ role: "tool", tool_call_id: id, name: p.functionResponse.name, content: JSON.stringify(p.functionResponse.response ?? {}) });
      } else if (typeof p.text === "string") content.push({ type: "text", text: p.text });
      else if (p.inlineData) content.push({ type: "image_url", image_url: { url: `data:${p.inlineData.mimeType};base64,${p.inlineData.data}` } });
      else if (p.fileData) content.push({ type: "image_url", image_url: { url: p.fileData.fileUri } });
    }
    if (content.length) {
      const onlyText = content.every((p) => p.type === "text");
      messages.push({ role: "user", content: onlyText ? content.map((p) => (p as { text: string }).text).join("") : content });
    }
  }

  const out: OpenAIChatRequest = { model, messages };
  if (stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  const g = req.generationConfig ?? {};
  if (g.temperature != null) out.temperature = g.temperature;
  if (g.topP != null) out.top_p = g.topP;
  if (g.maxOutputTokens != null) out.max_tokens = g.maxOutputTokens;
  if (g.candidateCount != null) out.n = g.candidateCount;
  if (Array.isArray(g.stopSequences) && g.stopSequences.length) out.stop = g.stopSequences;
  if (g.responseMimeType === "application/json") {
    out.response_format = g.responseSchema
      ? { type: "json_schema", json_schema: { name: "response", schema: g.responseSchema } }
      : { type: "json_object" };
  }
  const decls = (req.tools ?? []).flatMap((t) => t.functionDeclarations ?? []);
  if (decls.length) {
    out.tools = decls.map((d) => ({
      type: "function" as const,
      function: { name: d.name, description: d.description, parameters: (d.parameters ?? (d as any).parametersJsonSchema ?? { type: "object", properties: {} }) as Record<string, unknown> },
    }));
    const mode = req.toolConfig?.functionCallingConfig?.mode;
    const allowed = req.toolConfig?.functionCallingConfig?.allowedFunctionNames;
    if (mode === "NONE") out.tool_choice = "none";
    else if (mode === "ANY") out.tool_choice = allowed?.length === 1 ? { type: "function", function: { name: allowed[0]! } } : "required";
    else if (mode === "AUTO") out.tool_choice = "auto";
  }
  return out;
}

const FINISH: Record<string, string> = { stop: "STOP", length: "MAX_TOKENS", content_filter: "SAFETY", tool_calls: "STOP", function_call: "STOP" };

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

export function openAIResponseToGemini(res: OpenAIChatResponse, model: string): GeminiResponse {
  return {
    candidates: (res.choices ?? []).map((c, i) => {
      const parts: GeminiPart[] = [];
      if (c.message?.reasoning_content) parts.push({ text: c.message.reasoning_content, thought: true });
      if (c.message?.content) parts.push({ text: c.message.content });
      for (const call of c.message?.tool_calls ?? []) parts.push({ functionCall: { name: call.function.name, args: argsOf(call.function.arguments) } });
      return { content: { role: "model", parts }, finishReason: geminiFinishOf(c.finish_reason), index: c.index ?? i };
    }),
    usageMetadata: geminiUsageOf(res.usage),
    modelVersion: model,
    responseId: res.id,
  };
}

/**
 * OpenAI chunks → Gemini stream chunks. Text goes out as it arrives; a tool call's arguments arrive in
 * pieces but Gemini sends each functionCall whole, so calls are held until the choice finishes.
 */
export class OpenAIStreamToGemini {
  private calls = new Map<number, { name: string; args: string }>();
  private finish: string | null = null;
  private usage: OpenAIUsage | null = null;
  private ended = false;
  private text = "";

  constructor(private model: string, private id = crypto.randomUUID().replace(/-/g, "")) {}

  get receivedText(): string {
    return this.text;
  }

  private frame(parts: GeminiPart[], finishReason?: string, usage?: OpenAIUsage | null): GeminiResponse {
    const cand: NonNullable<GeminiResponse["candidates"]>[0] = { content: { role: "model", parts }, index: 0 };
    if (finishReason) cand.finishReason = finishReason;
    const out: GeminiResponse = { candidates: [cand], modelVersion: this.model, responseId: this.id };
    if (usage) out.usageMetadata = geminiUsageOf(usage);
    return out;
  }

  push(chunk: OpenAIChunk): GeminiResponse[] {
    if (chunk.usage) this.usage = chunk.usage;
    const out: GeminiResponse[] = [];
    for (const choice of chunk.choices ?? []) {
      const d = choice.delta ?? {};
      const parts: GeminiPart[] = [];
      if (d.reasoning_content) parts.push({ text: d.reasoning_content, thought: true });
      if (typeof d.content === "string" && d.content) {
        this.text += d.content;
        parts.push({ text: d.content });
      }
      for (const t of d.tool_calls ?? []) {
        const idx = t.index ?? 0;
        const cur = this.calls.get(idx) ?? { name: "", args: "" };
        if (t.function?.name) cur.name = t.function.name;
        if (t.function?.arguments) {
          cur.args += t.function.arguments;
          this.text += t.function.arguments;
        }
        this.calls.set(idx, cur);
      }
      if (parts.length) out.push(this.frame(parts));
      if (choice.finish_reason) this.finish = choice.finish_reason;
    }
    return out;
  }

  /** The closing chunk: held function calls, finish reason and usage. */
  end(usage?: OpenAIUsage | null): GeminiResponse[] {
    if (this.ended) return [];
    this.ended = true;
    const parts: GeminiPart[] = [...this.calls.values()].map((c) => ({ functionCall: { name: c.name, args: argsOf(c.args) } }));
    if (parts.length === 0) parts.push({ text: "" });
    return [this.frame(parts, geminiFinishOf(this.finish), usage ?? this.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 })];
  }
}
