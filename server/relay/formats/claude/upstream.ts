// OpenAI chat completions → Anthropic Messages (requests) and Anthropic Messages → OpenAI (responses
// and streams). Pure functions; the adaptor feeds them the option values they need.
import type {
  ClaudeBlock, ClaudeMessage, ClaudeRequest, ClaudeResponse, ClaudeStreamEvent, ClaudeUsage, OpenAIChatRequest,
  OpenAIChatResponse, OpenAIChunk, OpenAIContentPart, OpenAIMessage, OpenAIToolCall, OpenAIUsage,
} from "./wire.ts";

export interface ClaudeSettings {
  /** max_tokens when the client sends none (option claude.default_max_tokens). */
  defaultMaxTokens: number;
  /** Whether a "-thinking" model suffix turns on extended thinking (claude.thinking_adapter_enabled). */
  thinkingAdapter: boolean;
  /** Thinking budget as a share of max_tokens (claude.thinking_adapter_budget_tokens_percentage). */
  thinkingPercentage: number;
}

export const THINKING_SUFFIX = "-thinking";
/** Claude rejects budgets below this. */
const MIN_THINKING_BUDGET = 1024;

/** `data:image/png;base64,AAAA` → its media type and payload; null for anything else. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const m = /^data:([^;,]+)?(?:;[^,]*)?;base64,(.*)$/s.exec(url);
  return m ? { mediaType: m[1] || "application/octet-stream", data: m[2]! } : null;
}

function textOf(content: OpenAIMessage["content"]): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content.filter((p) => p.type === "text").map((p) => (p as { text: string }).text).join("");
}

function partToBlock(part: OpenAIContentPart): ClaudeBlock | null {
  // Claude rejects empty text blocks.
  if (part.type === "text") return (part as { text: string }).text ? { type: "text", text: (part as { text: string }).text } : null;
  if (part.type === "image_url") {
    const url = typeof (part as any).image_url === "string" ? (part as any).image_url : (part as any).image_url?.url ?? "";
    const data = parseDataUrl(url);
    return data
      ? { type: "image", source: { type: "base64", media_type: data.mediaType, data: data.data } }
      : { type: "image", source: { type: "url", url } };
  }
  return null;
}

function contentBlocks(content: OpenAIMessage["content"]): ClaudeBlock[] {
  if (content == null) return [];
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  return content.map(partToBlock).filter((b): b is ClaudeBlock => b !== null);
}

function parseArguments(args: string | undefined): unknown {
  if (!args) return {};
  try {
    return JSON.parse(args);
  } catch {
    return {};
  }
}

/** Claude wants strictly alternating user/assistant turns: consecutive same-role turns are merged. */
function pushTurn(out: ClaudeMessage[], role: "user" | "assistant", blocks: ClaudeBlock[]): void {
  if (blocks.length === 0) return;
  const last = out[out.length - 1];
  if (last && last.role === role) (last.content as ClaudeBlock[]).push(...blocks);
  else out.push({ role, content: blocks });
}

export function toClaudeRequest(req: OpenAIChatRequest, settings: ClaudeSettings): ClaudeRequest {
  let model = req.model;
  const maxTokens = req.max_completion_tokens ?? req.max_tokens ?? settings.defaultMaxTokens;
  const system: string[] = [];
  const messages: ClaudeMessage[] = [];

  for (const m of req.messages ?? []) {
    if (m.role === "system" || m.role === "developer") {
      const text = textOf(m.content);
      if (text) system.push(text);
    } else if (m.role === "tool") {
      pushTurn(messages, "user", [{ type: "tool_result", tool_use_id: m.tool_call_id ?? "", content: textOf(m.content) }]);
    } else if (m.role === "assistant") {
      const blocks = contentBlocks(m.content);
      for (const call of m.tool_calls ?? []) {
        blocks.push({ type: "tool_use", id: call.id, name: call.function.name, input: parseArguments(call.function.arguments) });
      }
      pushTurn(messages, "assistant", blocks);
    } else {
      pushTurn(messages, "user", contentBlocks(m.content));
    }
  }

  const out: ClaudeRequest = { model, max_tokens: maxTokens, messages };
  if (system.length) out.system = system.join("\n");
  if (req.temperature != null) out.temperature = req.temperature;
  if (req.top_p != null) out.top_p = req.top_p;
  if (req.top_k != null) out.top_k = req.top_k;
  if (req.stream) out.stream = true;
  if (req.stop != null) {
    const stops = (Array.isArray(req.stop) ? req.stop : [req.stop]).filter((s) => typeof s === "string" && s !== "");
    if (stops.length) out.stop_sequences = stops;
  }
  if (req.user) out.metadata = { user_id: req.user };
  if (req.tools?.length) {
    out.tools = req.tools.map((t) => ({
      name: t.function.name,
      description: t.function.description,
      input_schema: t.function.parameters ?? { type: "object", properties: {} },
    }));
  }
  const choice = req.tool_choice;
  if (choice && req.tools?.length) {
    if (choice === "auto") out.tool_choice = { type: "auto" };
    else if (choice === "required") out.tool_choice = { type: "any" };
    else if (choice === "none") out.tool_choice = { type: "none" };
    else if (typeof choice === "object" && choice.function?.name) out.tool_choice = { type: "tool", name: choice.function.name };
  }
  if (req.parallel_tool_calls === false && out.tool_choice) out.tool_choice.disable_parallel_tool_use = true;

  if (settings.thinkingAdapter && model.endsWith(THINKING_SUFFIX)) {
    out.model = model.slice(0, -THINKING_SUFFIX.length);
    out.thinking = { type: "enabled", budget_tokens: Math.max(MIN_THINKING_BUDGET, Math.floor(maxTokens * settings.thinkingPercentage)) };
    if (out.thinking.budget_tokens >= maxTokens) out.max_tokens = out.thinking.budget_tokens + MIN_THINKING_BUDGET;
    // Extended thinking rejects a custom temperature/top_p/top_k.
    delete out.temperature;
    delete out.top_p;
    delete out.top_k;
  } else if (req.thinking && typeof req.thinking === "object") {
    out.thinking = req.thinking as ClaudeRequest["thinking"];
  }
  return out;
}

const FINISH: Record<string, string> = {
  end_turn: "stop", stop_sequence: "stop", pause_turn: "stop", max_tokens: "length", tool_use: "tool_calls", refusal: "content_filter",
};

export function finishReasonOf(stopReason: string | null | undefined): string | null {
  if (!stopReason) return null;
  return FINISH[stopReason] ?? "stop";
}

/** Claude counts cached prompt tokens apart from input_tokens; OpenAI's prompt_tokens includes them. */
export function usageFromClaude(u: Partial<ClaudeUsage> | undefined): OpenAIUsage {
  const cacheRead = u?.cache_read_input_tokens ?? 0;
  const cacheWrite = u?.cache_creation_input_tokens ?? 0;
  const prompt = (u?.input_tokens ?? 0) + cacheRead + cacheWrite;
  const completion = u?.output_tokens ?? 0;
  return {
    prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead, cached_creation_tokens: cacheWrite },
  };
}

/** Text, thinking and tool calls (name and input) of a Messages answer. */
export function claudeGeneratedText(res: ClaudeResponse): string {
  let out = "";
  for (const b of res?.content ?? []) {
    if (b.type === "text") out += (b as { text: string }).text ?? "";
    else if (b.type === "thinking") out += (b as { thinking: string }).thinking ?? "";
    else if (b.type === "tool_use") out += (b as { name: string }).name + JSON.stringify((b as { input?: unknown }).input ?? {});
  }
  return out;
}

export function fromClaudeResponse(res: ClaudeResponse, created = Math.floor(Date.now() / 1000)): OpenAIChatResponse {
  let text = "";
  let thinking = "";
  const toolCalls: OpenAIToolCall[] = [];
  for (const b of res.content ?? []) {
    if (b.type === "text") text += (b as { text: string }).text;
    else if (b.type === "thinking") thinking += (b as { thinking: string }).thinking;
    else if (b.type === "tool_use") {
      const t = b as { id: string; name: string; input: unknown };
      toolCalls.push({ id: t.id, type: "function", function: { name: t.name, arguments: JSON.stringify(t.input ?? {}) } });
    }
  }
  const message: OpenAIChatResponse["choices"][0]["message"] = { role: "assistant", content: text };
  if (toolCalls.length) message.tool_calls = toolCalls;
  if (thinking) message.reasoning_content = thinking;
  return {
    id: res.id, object: "chat.completion", created, model: res.model,
    choices: [{ index: 0, message, finish_reason: finishReasonOf(res.stop_reason) }],
    usage: usageFromClaude(res.usage),
  };
}

/**
 * Turns Claude stream events into OpenAI chunks, one event at a time. Keeps the running usage
 * (message_start carries the input side, message_delta the cumulative output side).
 */
export class ClaudeStreamToOpenAI {
  id = "";
  model = "";
  usage: OpenAIUsage = usageFromClaude(undefined);
  private raw: Partial<ClaudeUsage> = {};
  private toolIndex = new Map<number, number>();
  private finish: string | null = null;
  private text = "";
  private outputFinal = false;
  error: { type: string; message: string } | null = null;

  constructor(private created = Math.floor(Date.now() / 1000)) {}

  /** The completion text received so far, thinking included (for counting when usage is missing). */
  get receivedText(): string {
    return this.text;
  }

  /** Whether the upstream reported input_tokens (message_start normally does). */
  get hasInputUsage(): boolean {
    return typeof this.raw.input_tokens === "number";
  }

  /** Whether message_delta brought the final output count; before it, message_start's count is a placeholder. */
  get hasFinalOutput(): boolean {
    return this.outputFinal;
  }

  private chunk(delta: OpenAIChunk["choices"][0]["delta"], finish: string | null = null): OpenAIChunk {
    return { id: this.id, object: "chat.completion.chunk", created: this.created, model: this.model, choices: [{ index: 0, delta, finish_reason: finish }] };
  }

  private mergeUsage(u: Partial<ClaudeUsage> | undefined): void {
    if (!u) return;
    for (const [k, v] of Object.entries(u)) if (typeof v === "number") (this.raw as any)[k] = v;
    this.usage = usageFromClaude(this.raw);
  }

  push(ev: ClaudeStreamEvent): OpenAIChunk[] {
    switch (ev.type) {
      case "message_start": {
        this.id = ev.message?.id ?? this.id;
        this.model = ev.message?.model ?? this.model;
        this.mergeUsage(ev.message?.usage);
        return [this.chunk({ role: "assistant", content: "" })];
      }
      case "content_block_start": {
        const block = ev.content_block ?? {};
        if (block.type === "tool_use") {
          const index = this.toolIndex.size;
          this.toolIndex.set(ev.index, index);
          this.text += block.name ?? "";
          return [this.chunk({ tool_calls: [{ index, id: block.id, type: "function", function: { name: block.name, arguments: "" } }] })];
        }
        if (block.type === "text" && block.text) {
          this.text += block.text;
          return [this.chunk({ content: block.text })];
        }
        if (block.type === "thinking" && block.thinking) {
          this.text += block.thinking;
          return [this.chunk({ reasoning_content: block.thinking })];
        }
        return [];
      }
      case "content_block_delta": {
        const d = ev.delta ?? {};
        if (d.type === "text_delta") {
          this.text += d.text;
          return [this.chunk({ content: d.text })];
        }
        if (d.type === "thinking_delta") {
          this.text += d.thinking ?? "";
          return [this.chunk({ reasoning_content: d.thinking })];
        }
        if (d.type === "input_json_delta") {
          const index = this.toolIndex.get(ev.index) ?? 0;
          this.text += d.partial_json ?? "";
          return [this.chunk({ tool_calls: [{ index, function: { arguments: d.partial_json ?? "" } } as Partial<OpenAIToolCall>] })];
        }
        return [];
      }
      case "message_delta": {
        this.mergeUsage(ev.usage);
        if (typeof ev.usage?.output_tokens === "number") this.outputFinal = true;
        this.finish = finishReasonOf(ev.delta?.stop_reason) ?? this.finish;
        return this.finish ? [this.chunk({}, this.finish)] : [];
      }
      case "error":
        this.error = { type: ev.error?.type ?? "api_error", message: ev.error?.message ?? "upstream stream error" };
        return [];
      default:
        return [];
    }
  }

  /** The trailing usage chunk OpenAI sends when stream_options.include_usage is set. */
  usageChunk(): OpenAIChunk {
    return { id: this.id, object: "chat.completion.chunk", created: this.created, model: this.model, choices: [], usage: this.usage };
  }
}
