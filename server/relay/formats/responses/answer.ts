// Chat answers as Responses API answers: a chat completion becomes a response object (reasoning, message and
// function_call output items), and a chat stream becomes the Responses API's typed events, in the order and
// with the indices the openai SDK's stream accumulator checks.
import type { OpenAIChatResponse, OpenAIChunk, OpenAIUsage } from "../claude/wire.ts";
import { customInput, sealContent, type ResponsesRequest, type ToolNames } from "./request.ts";
import { signatureOfCall } from "../gemini/upstream.ts";
import { thinkingBlocksOf, type ThinkingBlock } from "../claude/upstream.ts";
import { TextBuffer } from "../text-buffer.ts";
import { CustomInputStream } from "./custom-input.ts";

/**
 * The previous_response_id a request named before the gateway replaced it with the earlier turns (its
 * conversations are its own): echoed on the response as OpenAI echoes it. A symbol key, never sent upstream.
 */
export const PREVIOUS_RESPONSE = Symbol.for("switchyard.responses.previous");

const hex = () => crypto.randomUUID().replace(/-/g, "");
export const responseId = () => `resp_${hex()}${hex().slice(0, 16)}`;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export function responseUsage(u: OpenAIUsage | null | undefined): ResponseUsage | null {
  if (!u) return null;
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: {
      cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0,
      cache_write_tokens: u.prompt_tokens_details?.cached_creation_tokens ?? 0,
    },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: u.total_tokens ?? u.prompt_tokens + u.completion_tokens,
  };
}

/** The response object around the output: the request's settings echoed as OpenAI does. */
export function responseShell(
  req: ResponsesRequest,
  id: string,
  model: string,
  createdAt: number,
): Record<string, any> {
  return {
    id,
    object: "response",
    created_at: createdAt,
    status: "in_progress",
    background: false,
    error: null,
    incomplete_details: null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    model,
    output: [],
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: req.previous_response_id ?? (req as any)[PREVIOUS_RESPONSE] ?? null,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: req.reasoning?.summary ?? null },
    store: req.store ?? true,
    temperature: req.temperature ?? 1,
    text: { format: req.text?.format ?? { type: "text" } },
    tool_choice: req.tool_choice ?? "auto",
    tools: req.tools ?? [],
    top_p: req.top_p ?? 1,
    truncation: "disabled",
    usage: null,
    user: req.user ?? null,
    metadata: req.metadata ?? {},
  };
}

/** A finish reason's status: a cut answer is incomplete, with why. */
function outcome(finish: string | null | undefined): { status: string; incomplete_details: { reason: string } | null } {
  if (finish === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finish === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

/** How the answer's items are shaped: which tool names are custom tools or namespaced, and whether reasoning
 * items carry their text sealed in encrypted_content (the client asked with include: ["reasoning.encrypted_content"]). */
export interface AnswerShape {
  names: ToolNames;
  sealReasoning: boolean;
}

export function answerShape(req: ResponsesRequest, names: ToolNames): AnswerShape {
  return { names, sealReasoning: Array.isArray(req.include) && req.include.includes("reasoning.encrypted_content") };
}

const NO_TOOLS: AnswerShape = { names: { custom: new Set(), namespaced: new Map() }, sealReasoning: false };

/** A reasoning item; sealed (encrypted_content) when the client asked, and always when it carries the upstream's
 * signatures (Gemini's for the calls after it, Claude's signed thinking), which the upstream needs back. */
const reasoningItem = (
  id: string,
  text: string,
  sealed: boolean,
  signatures?: Record<string, string>,
  thinking?: ThinkingBlock[],
) => ({
  id,
  type: "reasoning",
  summary: text ? [{ type: "summary_text", text }] : [],
  ...(sealed || signatures || thinking?.length ? { encrypted_content: sealContent(text, signatures, thinking) } : {}),
});
const messageItem = (id: string, text: string, status = "completed") => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
});
const callItem = (id: string, callId: string, name: string, args: string, status = "completed") => ({
  id,
  type: "function_call",
  status,
  arguments: args,
  call_id: callId,
  name,
});
const customItem = (id: string, callId: string, name: string, input: string, status = "completed") => ({
  id,
  type: "custom_tool_call",
  status,
  call_id: callId,
  name,
  input,
});

/** A chat tool call as its output item: a custom tool call with its input, or a function call (with its namespace). */
function toolItem(
  shape: AnswerShape,
  id: string,
  callId: string,
  chatName: string,
  args: string,
  status = "completed",
): Record<string, unknown> {
  if (shape.names.custom.has(chatName)) {
    const ns = shape.names.namespaced.get(chatName);
    const item: Record<string, unknown> = customItem(
      id,
      callId,
      ns?.name ?? chatName,
      status === "completed" ? customInput(args) : args,
      status,
    );
    if (ns) item.namespace = ns.namespace;
    return item;
  }
  const ns = shape.names.namespaced.get(chatName);
  return ns
    ? { ...callItem(id, callId, ns.name, args, status), namespace: ns.namespace }
    : callItem(id, callId, chatName, args, status);
}

function reasoningOf(m: any): string {
  const r = m?.reasoning_content ?? m?.reasoning;
  return typeof r === "string" ? r : "";
}

/** A chat completion as a response object (the first choice: the Responses API has no n). */
export function chatToResponse(
  chat: OpenAIChatResponse,
  req: ResponsesRequest,
  model: string,
  shape: AnswerShape = NO_TOOLS,
): Record<string, any> {
  const out = responseShell(req, responseId(), model, chat.created ?? Math.floor(Date.now() / 1000));
  const choice = chat.choices?.[0];
  const m = choice?.message as any;
  const reasoning = reasoningOf(m);
  let signatures: Record<string, string> | undefined;
  for (const c of m?.tool_calls ?? []) {
    const s = signatureOfCall(c);
    if (s) (signatures ??= {})[c.id] = s;
  }
  const thinking = thinkingBlocksOf(m);
  if (reasoning || signatures || thinking.length)
    out.output.push(reasoningItem(`rs_${hex()}`, reasoning, shape.sealReasoning, signatures, thinking));
  if (typeof m?.content === "string" && m.content !== "") out.output.push(messageItem(`msg_${hex()}`, m.content));
  for (const c of m?.tool_calls ?? []) {
    const name = c.function?.name ?? "";
    out.output.push(
      toolItem(
        shape,
        `${shape.names.custom.has(name) ? "ctc" : "fc"}_${hex()}`,
        c.id,
        name,
        c.function?.arguments ?? "",
      ),
    );
  }
  Object.assign(out, outcome(choice?.finish_reason), { usage: responseUsage(chat.usage) });
  return out;
}

interface OpenItem {
  kind: "reasoning" | "message" | "function" | "custom";
  index: number;
  id: string;
  /** the text so far: reasoning, message text, or a call's raw arguments */
  text: TextBuffer;
  toolIndex?: number;
  callId?: string;
  /** a call's chat function name */
  name?: string;
  /** a custom tool call's input, decoded from its arguments as they stream */
  input?: CustomInputStream;
  /** a reasoning item's thought signatures of the calls that follow it */
  signatures?: Record<string, string>;
  /** a reasoning item's summary part has opened (its first text came) */
  summarised?: boolean;
  /** a reasoning item's signed thinking blocks (Claude) */
  thinking?: ThinkingBlock[];
}

/**
 * Chat chunks → Responses stream events. Reasoning and message items close when another kind of output
 * starts; function calls close at the end (parallel calls may interleave their argument pieces).
 */
export class ChatStreamToResponses {
  private seq = 0;
  private started = false;
  private ended = false;
  private shell: Record<string, any>;
  private output: any[] = [];
  private open: OpenItem | null = null;
  private calls = new Map<number, OpenItem>();
  private finish: string | null = null;
  private usage: OpenAIUsage | null = null;

  constructor(
    req: ResponsesRequest,
    model: string,
    private shape: AnswerShape = NO_TOOLS,
  ) {
    this.shell = responseShell(req, responseId(), model, Math.floor(Date.now() / 1000));
  }

  private ev(type: string, fields: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...fields })}\n\n`;
  }

  private snapshot(): Record<string, any> {
    return { ...this.shell, output: this.output.filter(Boolean) };
  }

  private start(): string {
    if (this.started) return "";
    this.started = true;
    return (
      this.ev("response.created", { response: this.snapshot() })
      + this.ev("response.in_progress", { response: this.snapshot() })
    );
  }

  private close(item: OpenItem | null): string {
    if (!item) return "";
    const base = { item_id: item.id, output_index: item.index };
    const text = item.text.toString();
    let out = "";
    if (item.kind === "reasoning") {
      if (item.summarised) {
        out += this.ev("response.reasoning_summary_text.done", { ...base, summary_index: 0, text });
        out += this.ev("response.reasoning_summary_part.done", {
          ...base,
          summary_index: 0,
          part: { type: "summary_text", text },
        });
      }
      this.output[item.index] = reasoningItem(item.id, text, this.shape.sealReasoning, item.signatures, item.thinking);
    } else if (item.kind === "message") {
      out += this.ev("response.output_text.done", { ...base, content_index: 0, text, logprobs: [] });
      out += this.ev("response.content_part.done", {
        ...base,
        content_index: 0,
        part: { type: "output_text", text, annotations: [], logprobs: [] },
      });
      this.output[item.index] = messageItem(item.id, text);
    } else if (item.kind === "custom") {
      const done = toolItem(this.shape, item.id, item.callId!, item.name!, text);
      // Arguments that were not {"input": "..."} streamed no text: the whole input goes as one piece.
      if (!item.input!.emitted && done.input)
        out += this.ev("response.custom_tool_call_input.delta", { ...base, delta: done.input });
      out += this.ev("response.custom_tool_call_input.done", { ...base, input: done.input });
      this.output[item.index] = done;
    } else {
      const done = toolItem(this.shape, item.id, item.callId!, item.name!, text);
      out += this.ev("response.function_call_arguments.done", { ...base, name: done.name, arguments: text });
      this.output[item.index] = done;
    }
    out += this.ev("response.output_item.done", { output_index: item.index, item: this.output[item.index] });
    if (this.open === item) this.open = null;
    return out;
  }

  private openItem(kind: "reasoning" | "message"): string {
    let out = this.close(this.open);
    const item: OpenItem = {
      kind,
      index: this.output.length,
      id: `${kind === "reasoning" ? "rs" : "msg"}_${hex()}`,
      text: new TextBuffer(),
    };
    this.open = item;
    const base = { item_id: item.id, output_index: item.index };
    if (kind === "reasoning") {
      // Its summary part opens with the first reasoning text (an item that only carries signatures has none).
      this.output.push({ id: item.id, type: "reasoning", summary: [] });
      out += this.ev("response.output_item.added", { output_index: item.index, item: this.output[item.index] });
    } else {
      this.output.push({ id: item.id, type: "message", status: "in_progress", role: "assistant", content: [] });
      out += this.ev("response.output_item.added", { output_index: item.index, item: this.output[item.index] });
      out += this.ev("response.content_part.added", {
        ...base,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [], logprobs: [] },
      });
    }
    return out;
  }

  /** One chat chunk in, the Responses events it makes out. */
  push(chunk: OpenAIChunk): string {
    if (this.ended) return "";
    let out = this.start();
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (!choice) return out;
    const d: any = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (reasoning) {
      if (this.open?.kind !== "reasoning") out += this.openItem("reasoning");
      if (!this.open!.summarised) {
        this.open!.summarised = true;
        out += this.ev("response.reasoning_summary_part.added", {
          item_id: this.open!.id,
          output_index: this.open!.index,
          summary_index: 0,
          part: { type: "summary_text", text: "" },
        });
      }
      this.open!.text.add(reasoning);
      out += this.ev("response.reasoning_summary_text.delta", {
        item_id: this.open!.id,
        output_index: this.open!.index,
        summary_index: 0,
        delta: reasoning,
      });
    }
    const signed = thinkingBlocksOf(d);
    if (signed.length) {
      if (this.open?.kind !== "reasoning") out += this.openItem("reasoning");
      (this.open!.thinking ??= []).push(...signed);
    }
    if (typeof d.content === "string" && d.content !== "") {
      if (this.open?.kind !== "message") out += this.openItem("message");
      this.open!.text.add(d.content);
      out += this.ev("response.output_text.delta", {
        item_id: this.open!.id,
        output_index: this.open!.index,
        content_index: 0,
        delta: d.content,
        logprobs: [],
      });
    }
    for (const t of d.tool_calls ?? []) {
      const toolIndex = t.index ?? 0;
      let item = this.calls.get(toolIndex);
      if (!item) {
        const callId = t.id ?? `call_${hex().slice(0, 24)}`;
        const signature = signatureOfCall(t);
        if (signature) {
          // The signature goes in a reasoning item before the call: the one still open, else one of its own.
          if (this.open?.kind !== "reasoning") out += this.openItem("reasoning");
          (this.open!.signatures ??= {})[callId] = signature;
        }
        out += this.close(this.open);
        const name = t.function?.name ?? "";
        const custom = this.shape.names.custom.has(name);
        item = {
          kind: custom ? "custom" : "function",
          index: this.output.length,
          id: `${custom ? "ctc" : "fc"}_${hex()}`,
          text: new TextBuffer(),
          toolIndex,
          callId,
          name,
          input: custom ? new CustomInputStream() : undefined,
        };
        this.calls.set(toolIndex, item);
        this.output.push(toolItem(this.shape, item.id, item.callId!, name, "", "in_progress"));
        out += this.ev("response.output_item.added", { output_index: item.index, item: this.output[item.index] });
      }
      const args = t.function?.arguments;
      if (args) {
        item.text.add(args);
        if (item.input) {
          const delta = item.input.push(args);
          if (delta)
            out += this.ev("response.custom_tool_call_input.delta", {
              item_id: item.id,
              output_index: item.index,
              delta,
            });
        } else
          out += this.ev("response.function_call_arguments.delta", {
            item_id: item.id,
            output_index: item.index,
            delta: args,
          });
      }
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  /**
   * An upstream error mid-stream: the Responses error event (with `error`, which the openai SDK raises), then
   * response.failed (what Codex reads); the response ends there, no response.completed follows.
   */
  error(message: string, code = "upstream_error"): string {
    if (this.ended) return "";
    this.ended = true;
    const failed = { ...this.snapshot(), status: "failed", error: { code, message }, usage: responseUsage(this.usage) };
    return (
      this.start()
      + this.ev("error", { code, message, param: null, error: { type: "server_error", code, message } })
      + this.ev("response.failed", { response: failed })
    );
  }

  /** Closes every open item and completes the response with its usage. */
  end(usage?: OpenAIUsage | null): string {
    if (this.ended) return "";
    this.ended = true;
    let out = this.start() + this.close(this.open);
    for (const item of [...this.calls.values()].sort((a, b) => a.index - b.index)) out += this.close(item);
    // The upstream's own usage chunk has every detail (reasoning tokens); the relay's reading of it, or its count
    // when the stream had none, stands in otherwise.
    const final = { ...this.snapshot(), ...outcome(this.finish), usage: responseUsage(this.usage ?? usage) };
    this.completed = final;
    return (
      out + this.ev(final.status === "completed" ? "response.completed" : "response.incomplete", { response: final })
    );
  }

  /** The final response object, once end() has run (for the gateway's store of previous responses). */
  completed: Record<string, any> | null = null;
}
