// OpenAI chat completions → Anthropic Messages (requests) and Anthropic Messages → OpenAI (responses
// and streams). Pure functions; the adaptor feeds them the option values they need.
import type {
  ClaudeBlock,
  ClaudeMessage,
  ClaudeRequest,
  ClaudeResponse,
  ClaudeStreamEvent,
  ClaudeUsage,
  OpenAIChatRequest,
  OpenAIChatResponse,
  OpenAIChunk,
  OpenAIContentPart,
  OpenAIMessage,
  OpenAIToolCall,
  OpenAIUsage,
} from "./wire.ts";
import { AppError } from "../../../http/errors.ts";
import { claudeBudget, effortOf, thinkingOf } from "../reasoning.ts";
import { refuseOpenAIOnly } from "../chat-only.ts";
import { TextBuffer } from "../text-buffer.ts";

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

/**
 * The tool an OpenAI response_format becomes (the forced-tool technique, which every Claude model and
 * host takes): its input schema is the requested schema, Claude is made to call it, and its input comes
 * back as the message text. Renamed when the client has a tool of that name.
 */
export const STRUCTURED_OUTPUT_TOOL = "structured_output";

/** What the answer converter must know about the request it answers. */
export interface ClaudeRequestFacts {
  /** The name of the structured-output tool, when response_format became one. */
  structuredTool?: string;
}

/** `data:image/png;base64,AAAA` → its media type and payload; null for anything else. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const m = /^data:([^;,]+)?(?:;[^,]*)?;base64,(.*)$/s.exec(url);
  return m ? { mediaType: m[1] || "application/octet-stream", data: m[2]! } : null;
}

function textOf(content: OpenAIMessage["content"]): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content
    .filter((p) => p.type === "text")
    .map((p) => (p as { text: string }).text)
    .join("");
}

/**
 * Copies a client's prompt-cache breakpoint onto the Claude block or tool made from what carried it. OpenAI's
 * format has no such field; clients of Claude-backed gateways (LiteLLM's and OpenRouter's convention) put
 * Anthropic's `cache_control` on content parts, on whole messages and on tools, and it passes as they wrote it.
 */
function marked<T extends object>(target: T, from: unknown): T {
  const cc = (from as { cache_control?: unknown } | null | undefined)?.cache_control;
  if (cc && typeof cc === "object") (target as { cache_control?: unknown }).cache_control = cc;
  return target;
}

/** A message-level breakpoint belongs to the message's last block (Anthropic caches the prefix up to a block). */
function markLast(blocks: ClaudeBlock[], message: unknown): ClaudeBlock[] {
  const last = blocks[blocks.length - 1];
  if (last) marked(last, message);
  return blocks;
}

function hasBreakpoint(m: OpenAIMessage): boolean {
  return (
    !!(m as { cache_control?: unknown }).cache_control
    || (Array.isArray(m.content) && m.content.some((p) => !!(p as { cache_control?: unknown }).cache_control))
  );
}

function partToBlock(part: OpenAIContentPart): ClaudeBlock | null {
  const block = plainPartToBlock(part);
  return block && marked(block, part);
}

function plainPartToBlock(part: OpenAIContentPart): ClaudeBlock | null {
  // Claude rejects empty text blocks.
  if (part.type === "text")
    return (part as { text: string }).text ? { type: "text", text: (part as { text: string }).text } : null;
  if (part.type === "image_url") {
    const url =
      typeof (part as any).image_url === "string" ? (part as any).image_url : ((part as any).image_url?.url ?? "");
    const data = parseDataUrl(url);
    return data
      ? { type: "image", source: { type: "base64", media_type: data.mediaType, data: data.data } }
      : { type: "image", source: { type: "url", url } };
  }
  if (part.type === "file") {
    const f =
      (part as { file?: { file_data?: string; file_url?: string; filename?: string; file_id?: string } }).file ?? {};
    const data = f.file_data ? parseDataUrl(f.file_data) : null;
    const title = f.filename ? { title: f.filename } : {};
    // Claude takes PDFs as base64 and plain text as text.
    if (data?.mediaType.startsWith("text/"))
      return {
        type: "document",
        source: { type: "text", media_type: "text/plain", data: Buffer.from(data.data, "base64").toString("utf8") },
        ...title,
      };
    if (data)
      return { type: "document", source: { type: "base64", media_type: data.mediaType, data: data.data }, ...title };
    if (f.file_url) return { type: "document", source: { type: "url", url: f.file_url } };
    throw new AppError(
      400,
      "a file part needs file_data (a base64 data URL) on this channel (Claude): uploaded file ids are not shared with it",
    );
  }
  if (part.type === "input_audio") throw new AppError(400, "audio input is not supported on this channel (Claude)");
  throw new AppError(400, `content part type '${part.type}' is not supported on this channel (Claude)`);
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

/**
 * Claude's signed thinking in OpenAI chat: `thinking_blocks` beside reasoning_content on an assistant message
 * (and in stream deltas, a block's signature when it ends), the form LiteLLM gives OpenAI clients. Sent back, the
 * blocks open the assistant turn again, so thinking can stay on through a tool loop.
 */
export type ThinkingBlock =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string };

export function thinkingBlocksOf(m: unknown): ThinkingBlock[] {
  const blocks = (m as { thinking_blocks?: unknown } | undefined)?.thinking_blocks;
  if (!Array.isArray(blocks)) return [];
  return blocks.filter(
    (b): b is ThinkingBlock =>
      (b?.type === "thinking"
        && typeof b.thinking === "string"
        && typeof b.signature === "string"
        && b.signature !== "")
      || (b?.type === "redacted_thinking" && typeof b.data === "string"),
  );
}

/** Claude wants strictly alternating user/assistant turns: consecutive same-role turns are merged. */
function pushTurn(out: ClaudeMessage[], role: "user" | "assistant", blocks: ClaudeBlock[]): void {
  if (blocks.length === 0) return;
  const last = out[out.length - 1];
  if (last && last.role === role) (last.content as ClaudeBlock[]).push(...blocks);
  else out.push({ role, content: blocks });
}

/** `facts` (optional) receives what the answer's converter must know (fromClaudeResponse, ClaudeStreamToOpenAI). */
export function toClaudeRequest(
  req: OpenAIChatRequest,
  settings: ClaudeSettings,
  facts?: ClaudeRequestFacts,
): ClaudeRequest {
  refuseOpenAIOnly(req, "Claude");
  const model = req.model;
  const maxTokens = req.max_completion_tokens ?? req.max_tokens ?? settings.defaultMaxTokens;
  const system: string[] = [];
  // System text as blocks, kept only when a system message carries a cache breakpoint (a string has no place for one).
  const systemBlocks: { type: "text"; text: string; cache_control?: unknown }[] = [];
  let systemMarked = false;
  const messages: ClaudeMessage[] = [];

  for (const m of req.messages ?? []) {
    if (m.role === "system" || m.role === "developer") {
      const text = textOf(m.content);
      if (text) system.push(text);
      systemMarked ||= hasBreakpoint(m);
      const parts =
        typeof m.content === "string"
          ? [{ type: "text", text: m.content }]
          : (m.content ?? []).filter((p) => p.type === "text");
      const blocks = parts
        .filter((p) => (p as { text: string }).text)
        .map((p) => marked({ type: "text" as const, text: (p as { text: string }).text }, p));
      systemBlocks.push(...(markLast(blocks, m) as typeof systemBlocks));
    } else if (m.role === "tool") {
      const marker = Array.isArray(m.content)
        ? m.content.find((p) => (p as { cache_control?: unknown }).cache_control)
        : undefined;
      pushTurn(messages, "user", [
        marked(
          marked({ type: "tool_result", tool_use_id: m.tool_call_id ?? "", content: textOf(m.content) }, marker),
          m,
        ),
      ]);
    } else if (m.role === "assistant") {
      const blocks: ClaudeBlock[] = [...thinkingBlocksOf(m), ...contentBlocks(m.content)];
      for (const call of m.tool_calls ?? []) {
        blocks.push({
          type: "tool_use",
          id: call.id,
          name: call.function.name,
          input: parseArguments(call.function.arguments),
        });
      }
      pushTurn(messages, "assistant", markLast(blocks, m));
    } else {
      pushTurn(messages, "user", markLast(contentBlocks(m.content), m));
    }
  }

  const out: ClaudeRequest = { model, max_tokens: maxTokens, messages };
  if (systemMarked) out.system = systemBlocks;
  else if (system.length) out.system = system.join("\n");
  // Anthropic's request-level breakpoint (automatic caching of the longest prefix) passes as the client set it.
  marked(out, req);
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
    out.tools = req.tools.map((t) =>
      marked(
        marked(
          {
            name: t.function.name,
            description: t.function.description,
            input_schema: t.function.parameters ?? { type: "object", properties: {} },
          },
          t.function,
        ),
        t,
      ),
    );
  }
  const choice = req.tool_choice;
  if (choice && req.tools?.length) {
    if (choice === "auto") out.tool_choice = { type: "auto" };
    else if (choice === "required") out.tool_choice = { type: "any" };
    else if (choice === "none") out.tool_choice = { type: "none" };
    else if (typeof choice === "object" && choice.function?.name)
      out.tool_choice = { type: "tool", name: choice.function.name };
  }
  if (req.parallel_tool_calls === false && out.tool_choice) out.tool_choice.disable_parallel_tool_use = true;

  const thinking = thinkingFor(req, model, maxTokens, settings);
  if (thinking.model) out.model = thinking.model;
  if (!thinking.config || midToolLoopWithoutThinking(messages)) withoutThinkingBlocks(messages);
  if (thinking.config && !midToolLoopWithoutThinking(messages)) {
    out.thinking = thinking.config;
    const budget = (thinking.config as { budget_tokens?: number }).budget_tokens;
    if (budget && budget >= out.max_tokens) out.max_tokens = budget + MIN_THINKING_BUDGET;
    // Extended thinking rejects a custom temperature/top_p/top_k.
    delete out.temperature;
    delete out.top_p;
    delete out.top_k;
  }
  structuredOutput(req, out, facts);
  return out;
}

/**
 * Where thinking comes from, first match: the thinking adapter's "-thinking" model suffix; a Claude-style
 * `thinking` object in the body; the exact budget of a Claude or Gemini client (formats/reasoning.ts);
 * OpenAI's reasoning_effort, turned into a budget with claude.thinking_adapter_budget_tokens_percentage.
 */
function thinkingFor(
  req: OpenAIChatRequest,
  model: string,
  maxTokens: number,
  settings: ClaudeSettings,
): { model?: string; config?: NonNullable<ClaudeRequest["thinking"]> | { type: "adaptive" } } {
  if (settings.thinkingAdapter && model.endsWith(THINKING_SUFFIX)) {
    return {
      model: model.slice(0, -THINKING_SUFFIX.length),
      config: {
        type: "enabled",
        budget_tokens: Math.max(MIN_THINKING_BUDGET, Math.floor(maxTokens * settings.thinkingPercentage)),
      },
    };
  }
  if (req.thinking && typeof req.thinking === "object") return { config: req.thinking as ClaudeRequest["thinking"] };
  const asked = thinkingOf(req);
  if (asked) {
    if (asked.budget === 0) return {};
    if (asked.budget < 0) return { config: { type: "adaptive" } };
    return { config: { type: "enabled", budget_tokens: Math.max(MIN_THINKING_BUDGET, Math.floor(asked.budget)) } };
  }
  const effort = effortOf(req.reasoning_effort);
  const budget = effort ? claudeBudget(effort, maxTokens, settings.thinkingPercentage) : null;
  return budget ? { config: { type: "enabled", budget_tokens: budget } } : {};
}

/**
 * Claude refuses thinking when the last assistant turn made tool calls without starting with a signed
 * thinking block, which an OpenAI-format history cannot carry: that one request then goes without thinking
 * (Claude allows thinking to be off inside a tool loop).
 */
/** Signed thinking given back goes only to a request that thinks (without thinking it has no place). */
function withoutThinkingBlocks(messages: ClaudeMessage[]): void {
  for (const m of messages) {
    if (
      m.role !== "assistant"
      || !Array.isArray(m.content)
      || !m.content.some((b) => b.type === "thinking" || b.type === "redacted_thinking")
    )
      continue;
    m.content = m.content.filter((b) => b.type !== "thinking" && b.type !== "redacted_thinking");
  }
}

function midToolLoopWithoutThinking(messages: ClaudeMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant") continue;
    const blocks = Array.isArray(m.content) ? m.content : [];
    if (!blocks.some((b) => b.type === "tool_use")) return false;
    return blocks[0]?.type !== "thinking" && blocks[0]?.type !== "redacted_thinking";
  }
  return false;
}

/** Tool names Claude takes. */
const TOOL_NAME = /[^A-Za-z0-9_-]/g;

/**
 * OpenAI's response_format on Claude: with thinking on, Claude's own structured output
 * (output_config.format; forced tool use is refused with thinking); otherwise the forced-tool technique,
 * which every Claude model and host takes. json_object has no schema: any object.
 */
function structuredOutput(req: OpenAIChatRequest, out: ClaudeRequest, facts?: ClaudeRequestFacts): void {
  const fmt = req.response_format as
    | { type?: string; json_schema?: { name?: string; schema?: Record<string, unknown> } }
    | undefined;
  if (!fmt || typeof fmt !== "object" || fmt.type === "text" || fmt.type === undefined) return;
  if (fmt.type !== "json_object" && fmt.type !== "json_schema") {
    throw new AppError(
      400,
      `response_format type '${String(fmt.type)}' is not supported on this channel (Claude): use text, json_object or json_schema`,
    );
  }
  const schema = fmt.type === "json_schema" ? fmt.json_schema?.schema : undefined;
  if (fmt.type === "json_schema" && (!schema || typeof schema !== "object")) {
    throw new AppError(400, "response_format.json_schema.schema is required");
  }
  const own = out.tool_choice;
  // A specific tool the client forced answers with that tool call: there is no text to shape.
  if (own?.type === "tool") return;
  if (out.thinking) {
    out.output_config = {
      ...(out.output_config as object),
      format: { type: "json_schema", schema: schema ?? { type: "object" } },
    };
    return;
  }
  const taken = new Set((out.tools ?? []).map((t) => t.name));
  let name = STRUCTURED_OUTPUT_TOOL;
  while (taken.has(name)) name += "_";
  const described = fmt.json_schema?.name ? ` (${String(fmt.json_schema.name).replace(TOOL_NAME, "")})` : "";
  out.tools = [
    ...(out.tools ?? []),
    {
      name,
      description: `Give your final answer by calling this tool: its input is the answer${described}.`,
      input_schema: schema ?? { type: "object" },
    },
  ];
  out.tool_choice = req.tools?.length && own?.type !== "none" ? { type: "any" } : { type: "tool", name };
  if (req.parallel_tool_calls === false) out.tool_choice.disable_parallel_tool_use = true;
  if (facts) facts.structuredTool = name;
}

const FINISH: Record<string, string> = {
  end_turn: "stop",
  stop_sequence: "stop",
  pause_turn: "stop",
  max_tokens: "length",
  tool_use: "tool_calls",
  refusal: "content_filter",
};

export function finishReasonOf(stopReason: string | null | undefined): string | null {
  if (!stopReason) return null;
  return FINISH[stopReason] ?? "stop";
}

/**
 * Claude counts cached prompt tokens apart from input_tokens; OpenAI's prompt_tokens includes them. Cache writes
 * keep their TTL split (cache_creation) when the upstream reports it: writes it leaves unaccounted for are
 * 5-minute ones, the default TTL.
 */
export function usageFromClaude(u: Partial<ClaudeUsage> | undefined): OpenAIUsage {
  const cacheRead = u?.cache_read_input_tokens ?? 0;
  const split = u?.cache_creation;
  const oneHour = split?.ephemeral_1h_input_tokens ?? 0;
  const cacheWrite = Math.max(u?.cache_creation_input_tokens ?? 0, (split?.ephemeral_5m_input_tokens ?? 0) + oneHour);
  const prompt = (u?.input_tokens ?? 0) + cacheRead + cacheWrite;
  const completion = u?.output_tokens ?? 0;
  const usage: OpenAIUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead, cached_creation_tokens: cacheWrite },
  };
  if (split && cacheWrite > 0) {
    usage.claude_cache_creation_5_m_tokens = cacheWrite - oneHour;
    usage.claude_cache_creation_1_h_tokens = oneHour;
  }
  return usage;
}

/** Text, thinking and tool calls (name and input) of a Messages answer. */
export function claudeGeneratedText(res: ClaudeResponse): string {
  let out = "";
  for (const b of res?.content ?? []) {
    if (b.type === "text") out += (b as { text: string }).text ?? "";
    else if (b.type === "thinking") out += (b as { thinking: string }).thinking ?? "";
    else if (b.type === "tool_use")
      out += (b as { name: string }).name + JSON.stringify((b as { input?: unknown }).input ?? {});
  }
  return out;
}

/** One Messages answer as an OpenAI choice; the structured-output tool's input becomes the text. */
function choiceOf(res: ClaudeResponse, index: number, facts: ClaudeRequestFacts): OpenAIChatResponse["choices"][0] {
  let text = "";
  let thinking = "";
  let structured = false;
  const toolCalls: OpenAIToolCall[] = [];
  const signed: ThinkingBlock[] = [];
  for (const b of res.content ?? []) {
    if (b.type === "text") text += (b as { text: string }).text;
    else if (b.type === "thinking") {
      const t = b as { thinking: string; signature?: string };
      thinking += t.thinking;
      if (t.signature) signed.push({ type: "thinking", thinking: t.thinking, signature: t.signature });
    } else if (b.type === "redacted_thinking")
      signed.push({ type: "redacted_thinking", data: String((b as { data?: unknown }).data ?? "") });
    else if (b.type === "tool_use") {
      const t = b as { id: string; name: string; input: unknown };
      if (facts.structuredTool && t.name === facts.structuredTool) {
        text = JSON.stringify(t.input ?? {});
        structured = true;
      } else
        toolCalls.push({
          id: t.id,
          type: "function",
          function: { name: t.name, arguments: JSON.stringify(t.input ?? {}) },
        });
    }
  }
  const message: OpenAIChatResponse["choices"][0]["message"] = { role: "assistant", content: text };
  if (toolCalls.length) message.tool_calls = toolCalls;
  if (thinking) message.reasoning_content = thinking;
  if (signed.length) message.thinking_blocks = signed;
  const finish =
    structured && !toolCalls.length && res.stop_reason === "tool_use" ? "stop" : finishReasonOf(res.stop_reason);
  return { index, message, finish_reason: finish };
}

/**
 * A Messages answer as a chat completion. `more` are the answers of the other requests of a fan-out (n > 1,
 * which Claude has no parameter for): choices 1..n, their usage added.
 */
export function fromClaudeResponse(
  res: ClaudeResponse,
  created = Math.floor(Date.now() / 1000),
  facts: ClaudeRequestFacts = {},
  more: ClaudeResponse[] = [],
): OpenAIChatResponse {
  const all = [res, ...more];
  const usage = usageFromClaude(res.usage);
  for (const r of more) {
    const u = usageFromClaude(r.usage);
    usage.prompt_tokens += u.prompt_tokens;
    usage.completion_tokens += u.completion_tokens;
    usage.total_tokens += u.total_tokens;
    usage.prompt_tokens_details!.cached_tokens! += u.prompt_tokens_details?.cached_tokens ?? 0;
    usage.prompt_tokens_details!.cached_creation_tokens! += u.prompt_tokens_details?.cached_creation_tokens ?? 0;
    if (u.claude_cache_creation_1_h_tokens !== undefined || usage.claude_cache_creation_1_h_tokens !== undefined) {
      usage.claude_cache_creation_5_m_tokens =
        (usage.claude_cache_creation_5_m_tokens ?? 0) + (u.claude_cache_creation_5_m_tokens ?? 0);
      usage.claude_cache_creation_1_h_tokens =
        (usage.claude_cache_creation_1_h_tokens ?? 0) + (u.claude_cache_creation_1_h_tokens ?? 0);
    }
  }
  return {
    id: res.id,
    object: "chat.completion",
    created,
    model: res.model,
    choices: all.map((r, i) => choiceOf(r, i, facts)),
    usage,
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
  /** the content block of the structured-output tool, whose JSON input streams out as text */
  private structuredBlock = -1;
  private finish: string | null = null;
  private text = new TextBuffer();
  /** the open thinking block's text, sent with its signature when the block ends */
  private thinking = new TextBuffer();
  private outputFinal = false;
  error: { type: string; message: string } | null = null;

  constructor(
    private created = Math.floor(Date.now() / 1000),
    private facts: ClaudeRequestFacts = {},
  ) {}

  /** The completion text received so far, thinking included (for counting when usage is missing). */
  get receivedText(): string {
    return this.text.toString();
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
    return {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    };
  }

  private mergeUsage(u: Partial<ClaudeUsage> | undefined): void {
    if (!u) return;
    for (const [k, v] of Object.entries(u)) if (typeof v === "number") (this.raw as any)[k] = v;
    // The TTL split of the writes comes as an object beside the counts, in message_start and message_delta alike.
    if (u.cache_creation && typeof u.cache_creation === "object")
      this.raw.cache_creation = { ...this.raw.cache_creation, ...u.cache_creation };
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
        if (block.type === "tool_use" && this.facts.structuredTool && block.name === this.facts.structuredTool) {
          this.structuredBlock = ev.index;
          return [];
        }
        if (block.type === "tool_use") {
          const index = this.toolIndex.size;
          this.toolIndex.set(ev.index, index);
          this.text.add(block.name ?? "");
          return [
            this.chunk({
              tool_calls: [{ index, id: block.id, type: "function", function: { name: block.name, arguments: "" } }],
            }),
          ];
        }
        if (block.type === "text" && block.text) {
          this.text.add(block.text);
          return [this.chunk({ content: block.text })];
        }
        if (block.type === "thinking") {
          this.thinking = new TextBuffer();
          this.thinking.add(block.thinking ?? "");
          if (!block.thinking) return [];
          this.text.add(block.thinking);
          return [this.chunk({ reasoning_content: block.thinking })];
        }
        if (block.type === "redacted_thinking" && typeof block.data === "string")
          return [
            this.chunk({
              thinking_blocks: [{ type: "redacted_thinking", data: block.data }],
            } as OpenAIChunk["choices"][0]["delta"]),
          ];
        return [];
      }
      case "content_block_delta": {
        const d = ev.delta ?? {};
        if (d.type === "text_delta") {
          this.text.add(d.text);
          return [this.chunk({ content: d.text })];
        }
        if (d.type === "thinking_delta") {
          this.text.add(d.thinking ?? "");
          this.thinking.add(d.thinking ?? "");
          return [this.chunk({ reasoning_content: d.thinking })];
        }
        // The block's signature ends it: the whole signed block goes out once, for a client that gives it back.
        if (d.type === "signature_delta" && d.signature) {
          const block: ThinkingBlock = { type: "thinking", thinking: this.thinking.toString(), signature: d.signature };
          this.thinking = new TextBuffer();
          return [this.chunk({ thinking_blocks: [block] } as OpenAIChunk["choices"][0]["delta"])];
        }
        if (d.type === "input_json_delta" && ev.index === this.structuredBlock) {
          if (!d.partial_json) return [];
          this.text.add(d.partial_json);
          return [this.chunk({ content: d.partial_json })];
        }
        if (d.type === "input_json_delta") {
          const index = this.toolIndex.get(ev.index) ?? 0;
          this.text.add(d.partial_json ?? "");
          return [
            this.chunk({
              tool_calls: [{ index, function: { arguments: d.partial_json ?? "" } } as Partial<OpenAIToolCall>],
            }),
          ];
        }
        return [];
      }
      case "message_delta": {
        this.mergeUsage(ev.usage);
        if (typeof ev.usage?.output_tokens === "number") this.outputFinal = true;
        this.finish = finishReasonOf(ev.delta?.stop_reason) ?? this.finish;
        // The structured-output tool is the answer, not a call the client should run.
        if (this.finish === "tool_calls" && this.structuredBlock >= 0 && this.toolIndex.size === 0)
          this.finish = "stop";
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
