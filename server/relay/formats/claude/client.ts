// The Claude-format entry point's conversions for channels that do not speak Claude: a Messages
// request becomes an OpenAI chat request, and the OpenAI reply (whole or streamed) becomes a Claude
// reply again. Pure functions and one small state machine for streams.
import type {
  ClaudeBlock,
  ClaudeRequest,
  ClaudeResponse,
  ClaudeStreamEvent,
  OpenAIChatRequest,
  OpenAIChatResponse,
  OpenAIChunk,
  OpenAIContentPart,
  OpenAIMessage,
  OpenAIUsage,
} from "./wire.ts";
import { AppError } from "../../../http/errors.ts";
import { THINKING, effortFromBudget, effortOf } from "../reasoning.ts";
import { TextBuffer } from "../text-buffer.ts";

function imageUrl(b: ClaudeBlock): string {
  const src = (b as any).source ?? {};
  return src.type === "base64" ? `data:${src.media_type};base64,${src.data}` : (src.url ?? "");
}

/** A Claude document block (PDF or plain text) as an OpenAI content part. */
function documentPart(b: ClaudeBlock): OpenAIContentPart {
  const src = (b as any).source ?? {};
  if (src.type === "base64")
    return {
      type: "file",
      file: { file_data: `data:${src.media_type};base64,${src.data}`, filename: (b as any).title ?? "document.pdf" },
    };
  if (src.type === "text") return { type: "text", text: String(src.data ?? "") };
  if (src.type === "url")
    return { type: "file", file: { file_url: src.url, filename: (b as any).title ?? "document.pdf" } };
  throw new AppError(
    400,
    `a document of source type '${String(src.type)}' cannot be sent to this channel (it is not a Claude channel): send it as base64 or text`,
  );
}

function blocksText(content: string | ClaudeBlock[] | undefined): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content
    .filter((b) => b.type === "text")
    .map((b) => (b as { text: string }).text)
    .join("");
}

export function claudeRequestToOpenAI(req: ClaudeRequest): OpenAIChatRequest {
  const messages: OpenAIMessage[] = [];
  const system = typeof req.system === "string" ? req.system : blocksText(req.system as ClaudeBlock[] | undefined);
  if (system) messages.push({ role: "system", content: system });

  for (const [i, m] of (req.messages ?? []).entries()) {
    if (!CONVERTED_ROLES.has(m.role)) {
      throw new AppError(
        400,
        `messages.${i}.role: role '${String(m.role)}' has no counterpart on this channel (it is not a Claude channel): user, assistant and system are converted`,
      );
    }
    if (typeof m.content !== "string" && !Array.isArray(m.content)) {
      throw new AppError(400, `messages.${i}.content: Input should be a valid string or list`);
    }
    if (m.role === "system") {
      // A mid-conversation system message: a system message at the same point.
      messages.push({ role: "system", content: systemText(m.content, i) });
      continue;
    }
    if (typeof m.content === "string") {
      messages.push({ role: m.role, content: m.content });
      continue;
    }
    if (m.role === "assistant") {
      const text = blocksText(m.content);
      const calls = m.content
        .filter((b) => b.type === "tool_use")
        .map((b: any) => ({
          id: b.id,
          type: "function" as const,
          function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
        }));
      const msg: OpenAIMessage = { role: "assistant", content: text || (calls.length ? null : "") };
      if (calls.length) msg.tool_calls = calls;
      messages.push(msg);
      continue;
    }
    // A user turn: tool results become separate "tool" messages (first, as OpenAI expects them right
    // after the assistant's tool calls), the rest one user message.
    const parts: OpenAIContentPart[] = [];
    for (const [j, b] of m.content.entries()) {
      if (b.type === "tool_result") {
        const r = b as any;
        const text = typeof r.content === "string" ? r.content : blocksText(r.content);
        messages.push({ role: "tool", tool_call_id: r.tool_use_id, content: text });
      } else if (b.type === "text") parts.push({ type: "text", text: (b as any).text });
      else if (b.type === "image") parts.push({ type: "image_url", image_url: { url: imageUrl(b) } });
      else if (b.type === "document") parts.push(documentPart(b));
      else if (!IGNORED_BLOCKS.has(b.type)) {
        throw new AppError(
          400,
          `messages.${i}.content.${j}.type: content block type '${b.type}' has no counterpart on this channel (it is not a Claude channel)`,
        );
      }
    }
    if (parts.length) {
      const onlyText = parts.every((p) => p.type === "text");
      messages.push({ role: "user", content: onlyText ? parts.map((p) => (p as any).text).join("") : parts });
    }
  }

  for (const k of CLAUDE_ONLY) {
    if (req[k] != null && !(Array.isArray(req[k]) && (req[k] as unknown[]).length === 0)) {
      throw new AppError(400, `${k} is a Claude API feature this channel (not a Claude channel) does not have`);
    }
  }
  const out: OpenAIChatRequest = { model: req.model, messages, max_tokens: req.max_tokens };
  if (req.stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  if (req.temperature != null) out.temperature = req.temperature;
  if (req.top_p != null) out.top_p = req.top_p;
  if (req.stop_sequences?.length) out.stop = req.stop_sequences;
  if (req.metadata?.user_id) out.user = req.metadata.user_id;
  if (req.tools?.length) {
    const server = req.tools.find((t) => t.type && t.type !== "custom");
    if (server)
      throw new AppError(
        400,
        `tool type '${server.type}' is a Claude server tool this channel (not a Claude channel) cannot run; only custom tools are converted`,
      );
    out.tools = req.tools.map((t) => ({
      type: "function" as const,
      function: { name: t.name, description: t.description, parameters: t.input_schema },
    }));
  }
  reasoningOf(req, out);
  structuredFormatOf(req, out);
  const c = req.tool_choice;
  if (c) {
    if (c.type === "auto") out.tool_choice = "auto";
    else if (c.type === "any") out.tool_choice = "required";
    else if (c.type === "none") out.tool_choice = "none";
    else if (c.type === "tool" && c.name) out.tool_choice = { type: "function", function: { name: c.name } };
    if (c.disable_parallel_tool_use) out.parallel_tool_calls = false;
  }
  return out;
}

const CONVERTED_ROLES = new Set(["user", "assistant", "system"]);

/** A mid-conversation system message's text; its blocks may only be text (what an OpenAI system message holds). */
function systemText(content: string | ClaudeBlock[], i: number): string {
  if (typeof content === "string") return content;
  const other = content.findIndex((b) => b?.type !== "text");
  if (other >= 0) {
    throw new AppError(
      400,
      `messages.${i}.content.${other}.type: a system message's '${String(content[other]?.type)}' block has no counterpart on this channel (it is not a Claude channel): text only`,
    );
  }
  return blocksText(content);
}

/** Request fields only Anthropic's API has: refused on converted channels rather than dropped. */
const CLAUDE_ONLY = ["mcp_servers", "container"] as const;
/** Blocks that carry nothing a converted channel could use: earlier reasoning, cited search results, redacted thinking. */
const IGNORED_BLOCKS = new Set(["thinking", "redacted_thinking"]);

/**
 * thinking and output_config.effort → reasoning_effort (a level) for OpenAI upstreams, and the exact budget
 * beside it for Claude and Gemini upstreams (formats/reasoning.ts).
 */
function reasoningOf(req: ClaudeRequest, out: OpenAIChatRequest): void {
  const t = req.thinking as { type?: string; budget_tokens?: number; display?: string } | undefined;
  const include = t?.display !== "omitted";
  if (t?.type === "enabled" && Number(t.budget_tokens) > 0) {
    out[THINKING as any] = { budget: Number(t.budget_tokens), include };
    const effort = effortFromBudget(Number(t.budget_tokens));
    if (effort) out.reasoning_effort = effort;
  } else if (t?.type === "adaptive") out[THINKING as any] = { budget: -1, include };
  else if (t?.type === "disabled") out[THINKING as any] = { budget: 0, include: false };
  const effort = effortOf((req.output_config as { effort?: unknown } | undefined)?.effort);
  if (effort) out.reasoning_effort = effort === "max" ? "xhigh" : effort;
}

/** Claude's structured output (output_config.format, or the beta's output_format) → response_format. */
function structuredFormatOf(req: ClaudeRequest, out: OpenAIChatRequest): void {
  const fmt = ((req.output_config as { format?: unknown } | undefined)?.format ?? req.output_format) as
    | { type?: string; schema?: unknown }
    | undefined;
  if (!fmt) return;
  if (fmt.type !== "json_schema" || !fmt.schema || typeof fmt.schema !== "object") {
    throw new AppError(400, "output_config.format must be {type: 'json_schema', schema: {...}}");
  }
  out.response_format = { type: "json_schema", json_schema: { name: "output", schema: fmt.schema } };
}

const STOP: Record<string, string> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  function_call: "tool_use",
  content_filter: "refusal",
};

export function stopReasonOf(finish: string | null | undefined): string {
  return (finish && STOP[finish]) || "end_turn";
}

/** OpenAI's prompt_tokens includes cached tokens; Claude reports them apart. */
export function claudeUsageOf(u: OpenAIUsage | undefined | null) {
  const cached = u?.prompt_tokens_details?.cached_tokens ?? 0;
  const created = u?.prompt_tokens_details?.cached_creation_tokens ?? 0;
  const out: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
    cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  } = {
    input_tokens: Math.max(0, (u?.prompt_tokens ?? 0) - cached - created),
    output_tokens: u?.completion_tokens ?? 0,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: created,
  };
  // The TTL split, where the upstream behind the conversion reported one (new-api's field names).
  if (u?.claude_cache_creation_1_h_tokens !== undefined) {
    out.cache_creation = {
      ephemeral_5m_input_tokens: u.claude_cache_creation_5_m_tokens ?? 0,
      ephemeral_1h_input_tokens: u.claude_cache_creation_1_h_tokens,
    };
  }
  return out;
}

function messageId(id: string | undefined): string {
  return id && id.startsWith("msg_")
    ? id
    : `msg_${(id || crypto.randomUUID()).replace(/[^A-Za-z0-9]/g, "").slice(0, 24)}`;
}

export function openAIResponseToClaude(res: OpenAIChatResponse, model: string): ClaudeResponse {
  const choice = res.choices?.[0];
  const content: ClaudeBlock[] = [];
  const msg = choice?.message;
  const reasoning = msg?.reasoning_content ?? (msg as { reasoning?: unknown } | undefined)?.reasoning;
  if (typeof reasoning === "string" && reasoning)
    content.push({ type: "thinking", thinking: reasoning, signature: "" });
  if (msg?.content) content.push({ type: "text", text: msg.content });
  for (const call of msg?.tool_calls ?? []) {
    let input: unknown = {};
    try {
      input = JSON.parse(call.function.arguments || "{}");
    } catch {}
    content.push({ type: "tool_use", id: call.id, name: call.function.name, input });
  }
  return {
    id: messageId(res.id),
    type: "message",
    role: "assistant",
    model: model || res.model,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason),
    stop_sequence: null,
    usage: claudeUsageOf(res.usage),
  };
}

type BlockKind = "text" | "thinking" | "tool_use";

/**
 * Turns OpenAI chunks into Claude stream events. Claude numbers content blocks and opens/closes each
 * one explicitly, so the machine tracks which block is open and starts a new one when the kind of
 * delta (text, reasoning, a new tool call) changes.
 */
export class OpenAIStreamToClaude {
  private started = false;
  private open: { kind: BlockKind; toolIndex?: number } | null = null;
  private blockIndex = -1;
  private finish: string | null = null;
  private usage: OpenAIUsage | null = null;
  private ended = false;
  private text = new TextBuffer();

  constructor(
    private model: string,
    private id = `msg_${crypto.randomUUID().replace(/-/g, "").slice(0, 24)}`,
  ) {}

  get receivedText(): string {
    return this.text.toString();
  }

  private start(out: ClaudeStreamEvent[]): void {
    if (this.started) return;
    this.started = true;
    out.push({
      type: "message_start",
      message: {
        id: this.id,
        type: "message",
        role: "assistant",
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    });
  }

  private close(out: ClaudeStreamEvent[]): void {
    if (!this.open) return;
    out.push({ type: "content_block_stop", index: this.blockIndex });
    this.open = null;
  }

  private openBlock(
    out: ClaudeStreamEvent[],
    kind: BlockKind,
    block: Record<string, unknown>,
    toolIndex?: number,
  ): void {
    this.close(out);
    this.blockIndex++;
    this.open = { kind, toolIndex };
    out.push({ type: "content_block_start", index: this.blockIndex, content_block: block });
  }

  push(chunk: OpenAIChunk): ClaudeStreamEvent[] {
    const out: ClaudeStreamEvent[] = [];
    this.start(out);
    if (chunk.usage) this.usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      const d = choice.delta ?? {};
      const reasoning = d.reasoning_content ?? (d as { reasoning?: unknown }).reasoning;
      if (typeof reasoning === "string" && reasoning) {
        if (this.open?.kind !== "thinking") this.openBlock(out, "thinking", { type: "thinking", thinking: "" });
        out.push({
          type: "content_block_delta",
          index: this.blockIndex,
          delta: { type: "thinking_delta", thinking: reasoning },
        });
      }
      if (typeof d.content === "string" && d.content !== "") {
        this.text.add(d.content);
        if (this.open?.kind !== "text") this.openBlock(out, "text", { type: "text", text: "" });
        out.push({
          type: "content_block_delta",
          index: this.blockIndex,
          delta: { type: "text_delta", text: d.content },
        });
      }
      for (const call of d.tool_calls ?? []) {
        const idx = call.index ?? 0;
        if (this.open?.kind !== "tool_use" || this.open.toolIndex !== idx) {
          this.openBlock(
            out,
            "tool_use",
            { type: "tool_use", id: call.id ?? `toolu_${idx}`, name: call.function?.name ?? "", input: {} },
            idx,
          );
        }
        const args = call.function?.arguments;
        if (args) {
          this.text.add(args);
          out.push({
            type: "content_block_delta",
            index: this.blockIndex,
            delta: { type: "input_json_delta", partial_json: args },
          });
        }
      }
      if (choice.finish_reason) this.finish = choice.finish_reason;
    }
    return out;
  }

  /** Closes the message: the last block, message_delta with stop reason and usage, message_stop. */
  end(usage?: OpenAIUsage | null): ClaudeStreamEvent[] {
    if (this.ended) return [];
    this.ended = true;
    const out: ClaudeStreamEvent[] = [];
    this.start(out);
    this.close(out);
    const u = claudeUsageOf(usage ?? this.usage);
    out.push({
      type: "message_delta",
      delta: { stop_reason: stopReasonOf(this.finish), stop_sequence: null },
      usage: u,
    });
    out.push({ type: "message_stop" });
    return out;
  }
}

/** Claude's SSE framing: each event carries its type both as the SSE event name and in the data. */
export function claudeSse(ev: ClaudeStreamEvent): string {
  return `event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;
}
