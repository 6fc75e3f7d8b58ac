// OpenAI's Responses API on channels without it (Claude, Gemini, Bedrock, Vertex, Azure before its v1 API,
// OpenAI-compatible upstreams without /v1/responses): a Responses request becomes a chat request, which
// every adaptor takes. Free-form custom tools become functions of one string argument, namespaces flat
// function names, additional_tools items more tools. Tools OpenAI runs itself (web search, file search, ...) are
// not offered to a model that cannot use them. What chat cannot express otherwise (a forced built-in tool,
// stored prompts, background runs, another service's compaction) is refused with a 400 naming it, never dropped.
import { AppError } from "../../../http/errors.ts";
import type { OpenAIChatRequest, OpenAIContentPart, OpenAIMessage, OpenAIToolCall } from "../claude/wire.ts";
import { thinkingBlocksOf, type ThinkingBlock } from "../claude/upstream.ts";

/** The request fields the conversion reads; the rest of the body is echoed back on the response object. */
export interface ResponsesRequest {
  model: string;
  input?: string | any[];
  instructions?: string | null;
  tools?: any[];
  tool_choice?: unknown;
  parallel_tool_calls?: boolean;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  reasoning?: { effort?: string | null; summary?: string | null } | null;
  text?: { format?: { type?: string; name?: string; schema?: unknown; strict?: boolean; description?: string } } | null;
  stream?: boolean;
  store?: boolean;
  previous_response_id?: string | null;
  user?: string;
  [k: string]: unknown;
}

const refuse = (what: string) =>
  new AppError(
    400,
    `${what} is not supported on this channel (its Responses API calls are converted to chat completions)`,
  );

/** Request fields that need OpenAI's own Responses service. */
const SERVICE_ONLY: [string, string][] = [
  ["background", "background mode"],
  ["conversation", "conversation"],
  ["prompt", "a stored prompt (prompt)"],
];

function textOfParts(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p: any) => (typeof p?.text === "string" ? p.text : typeof p?.refusal === "string" ? p.refusal : ""))
    .join("");
}

/**
 * A prompt-cache breakpoint (Anthropic's cache_control, which clients of Claude-backed gateways set on input
 * parts, items and tools) carried to the chat part, message or tool made from what carried it, so a Claude
 * channel receives it (formats/claude/upstream.ts).
 */
function withBreakpoint<T extends object>(target: T, from: any): T {
  if (from?.cache_control && typeof from.cache_control === "object") (target as any).cache_control = from.cache_control;
  return target;
}

/** One input content part as a chat content part. */
function chatPart(p: any): OpenAIContentPart {
  return withBreakpoint(plainChatPart(p), p);
}

function plainChatPart(p: any): OpenAIContentPart {
  switch (p?.type) {
    case "input_text":
    case "output_text":
    case "text":
      return { type: "text", text: String(p.text ?? "") };
    case "refusal":
      return { type: "text", text: String(p.refusal ?? "") };
    case "input_image": {
      if (!p.image_url) throw refuse("an input_image given by file_id");
      return { type: "image_url", image_url: { url: String(p.image_url), ...(p.detail ? { detail: p.detail } : {}) } };
    }
    case "input_file": {
      if (p.file_data) {
        const data = String(p.file_data);
        const url = data.startsWith("data:") ? data : `data:application/pdf;base64,${data}`;
        return { type: "file", file: { file_data: url, ...(p.filename ? { filename: p.filename } : {}) } };
      }
      if (p.file_url)
        return {
          type: "file",
          file: { file_url: String(p.file_url), ...(p.filename ? { filename: p.filename } : {}) },
        };
      throw refuse("an input_file given by file_id");
    }
    case "input_audio":
      return { type: "input_audio", input_audio: p.input_audio ?? { data: p.data, format: p.format } };
    default:
      throw refuse(`input content of type '${String(p?.type)}'`);
  }
}

function messageContent(content: unknown): string | OpenAIContentPart[] {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts = content.map(chatPart);
  const plain = parts.every((p) => p.type === "text" && !(p as { cache_control?: unknown }).cache_control);
  return plain ? parts.map((p) => (p as { text: string }).text).join("") : parts;
}

/**
 * Reasoning and compaction items the gateway made carry their text in `encrypted_content` under this prefix, so
 * a client that keeps no server state (Codex with store: false) can send them back and the upstream gets the
 * text again, with the thought signatures of the calls that followed (Gemini's, per call_id). Not encrypted:
 * the text is the reasoning the client was already shown, the signatures are the upstream's own ciphertext.
 */
export const GATEWAY_CONTENT = "swy1:";

export interface Sealed {
  text: string;
  /** call_id → the upstream's thought signature for that call (Gemini) */
  signatures?: Record<string, string>;
  /** the signed thinking blocks the text came in (Claude) */
  thinking?: ThinkingBlock[];
}

export function sealContent(text: string, signatures?: Record<string, string>, thinking?: ThinkingBlock[]): string {
  const payload: Sealed = { text };
  if (signatures && Object.keys(signatures).length) payload.signatures = signatures;
  if (thinking?.length) payload.thinking = thinking;
  return GATEWAY_CONTENT + Buffer.from(JSON.stringify(payload), "utf8").toString("base64");
}

/** The gateway's own sealed content, or null for another service's (OpenAI's real ciphertext) or a broken one. */
export function openSeal(sealed: unknown): Sealed | null {
  if (typeof sealed !== "string" || !sealed.startsWith(GATEWAY_CONTENT)) return null;
  try {
    const v = JSON.parse(Buffer.from(sealed.slice(GATEWAY_CONTENT.length), "base64").toString("utf8"));
    if (!v || typeof v.text !== "string") return null;
    const out: Sealed = { text: v.text };
    if (v.signatures && typeof v.signatures === "object") out.signatures = v.signatures;
    const thinking = thinkingBlocksOf({ thinking_blocks: v.thinking });
    if (thinking.length) out.thinking = thinking;
    return out;
  } catch {
    return null;
  }
}

/** The text of the gateway's own sealed content, or null. */
export const openContent = (sealed: unknown): string | null => openSeal(sealed)?.text ?? null;

/** Where a compaction summary goes back into a conversation (as a user message), what introduces it. */
export const SUMMARY_INTRO = "A summary of the earlier conversation:\n";

/** The chat function name of a tool inside a namespace (chat has no namespaces; `.` is not allowed in names). */
export const namespacedName = (namespace: string, name: string) => `${namespace}__${name}`;

/** What the answer's conversion needs to know about the tools the request offered. */
export interface ToolNames {
  /** chat function names that stand for free-form custom tools (their one argument is `input`) */
  custom: Set<string>;
  /** chat function names of tools inside a namespace → the namespace and the tool's own name */
  namespaced: Map<string, { namespace: string; name: string }>;
}

/** The one string argument a free-form custom tool's function takes. */
export const CUSTOM_INPUT = "input";

/** A custom tool call's input as function arguments, and back (what is not `{"input": "..."}` is taken as the input itself). */
export const customArguments = (input: unknown) =>
  JSON.stringify({ [CUSTOM_INPUT]: typeof input === "string" ? input : JSON.stringify(input ?? "") });
export function customInput(args: string): string {
  try {
    const v = JSON.parse(args);
    if (v && typeof v === "object" && typeof v[CUSTOM_INPUT] === "string") return v[CUSTOM_INPUT];
  } catch {}
  return args;
}

/** The text a tool's output parts carry, and the parts chat cannot put in a tool message (images, files). */
function toolOutput(output: unknown): { text: string; media: OpenAIContentPart[] } {
  if (typeof output === "string") return { text: output, media: [] };
  if (!Array.isArray(output)) return { text: output == null ? "" : JSON.stringify(output), media: [] };
  let text = "";
  const media: OpenAIContentPart[] = [];
  for (const p of output) {
    if (p?.type === "input_text" || p?.type === "output_text" || p?.type === "text") text += String(p.text ?? "");
    else media.push(chatPart(p));
  }
  return { text, media };
}

/** A function_call or custom_tool_call item's chat function name (namespaced when the item names a namespace). */
function callName(item: any): string {
  const name = String(item.name ?? "");
  return typeof item.namespace === "string" && item.namespace ? namespacedName(item.namespace, name) : name;
}

/**
 * The input items as chat messages: calls join the assistant message before them, their outputs become tool
 * messages (an output's images follow the run of tool messages as a user message), the gateway's own reasoning
 * goes back as the next assistant message's reasoning_content.
 */
function chatMessages(input: ResponsesRequest["input"], carry: SignedReasoning): OpenAIMessage[] {
  if (input == null) return [];
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input)) throw new AppError(400, "input must be a string or an array of input items");
  const out: OpenAIMessage[] = [];
  let reasoning = "";
  /** the thought signatures of calls still to come, from the gateway's reasoning items before them */
  let signatures: Record<string, string> | undefined;
  /** signed thinking blocks for the next assistant message */
  let thinking: ThinkingBlock[] = [];
  let media: OpenAIContentPart[] = [];
  const flushMedia = () => {
    if (media.length) out.push({ role: "user", content: media });
    media = [];
  };
  const assistant = (): OpenAIMessage => {
    const last = out[out.length - 1];
    const m: OpenAIMessage & { thinking_blocks?: ThinkingBlock[] } =
      last?.role === "assistant" && !media.length ? last : { role: "assistant", content: null };
    if (m !== last) {
      flushMedia();
      out.push(m);
    }
    if (reasoning) m.reasoning_content = (m.reasoning_content ?? "") + reasoning;
    if (thinking.length && carry.claude) (m.thinking_blocks ??= []).push(...thinking);
    reasoning = "";
    thinking = [];
    return m;
  };
  input.forEach((item: any, i: number) => {
    const type = item?.type ?? (item?.role ? "message" : undefined);
    if (type === "message") {
      if (item.role === "assistant") {
        const m = withBreakpoint(assistant(), item);
        const text = textOfParts(item.content);
        m.content = m.content ? `${m.content}${text}` : text;
        return;
      }
      const role = item.role === "developer" ? "system" : item.role;
      if (role !== "user" && role !== "system")
        throw new AppError(
          400,
          `input[${i}].role '${String(item.role)}' is not one of user, system, developer, assistant`,
        );
      flushMedia();
      out.push(withBreakpoint({ role, content: messageContent(item.content) }, item));
    } else if (type === "function_call" || type === "custom_tool_call") {
      const args = type === "function_call" ? String(item.arguments ?? "") : customArguments(item.input);
      const id = String(item.call_id ?? item.id ?? "");
      const call: OpenAIToolCall & { extra_content?: unknown } = {
        id,
        type: "function",
        function: { name: callName(item), arguments: args },
      };
      const signature = carry.gemini ? signatures?.[id] : undefined;
      if (signature) call.extra_content = { google: { thought_signature: signature } };
      (assistant().tool_calls ??= []).push(call);
    } else if (type === "function_call_output" || type === "custom_tool_call_output") {
      const o = toolOutput(item.output);
      out.push(withBreakpoint({ role: "tool", tool_call_id: String(item.call_id ?? ""), content: o.text }, item));
      media.push(...o.media);
    } else if (type === "reasoning") {
      // The gateway's own reasoning goes back (chat upstreams such as DeepSeek and Kimi want it with their tool
      // calls), and so does an open model's plain reasoning_text; another service's encrypted reasoning means
      // nothing to this upstream and is left out.
      const sealed = openSeal(item.encrypted_content);
      if (sealed?.text) reasoning += sealed.text;
      else if (!sealed && Array.isArray(item.content)) {
        for (const p of item.content)
          if (p?.type === "reasoning_text" && typeof p.text === "string") reasoning += p.text;
      }
      if (sealed?.signatures) Object.assign((signatures ??= {}), sealed.signatures);
      if (sealed?.thinking) thinking.push(...sealed.thinking);
    } else if (type === "additional_tools") {
      // Its tools join the request's (chatTools); chat has no place for them in the conversation.
    } else if (type === "compaction") {
      const summary = openContent(item.encrypted_content);
      if (summary == null) throw refuse(`input[${i}]: a compaction item made by another service`);
      flushMedia();
      out.push({ role: "user", content: SUMMARY_INTRO + summary });
    } else if (type === "item_reference") {
      throw new AppError(
        400,
        `input[${i}]: item_reference '${String(item.id)}' is not known to this gateway (it keeps the items of the responses it converted for an hour): send the item itself`,
        "item_not_found",
      );
    } else {
      throw refuse(`input[${i}]: input item type '${String(type)}'`);
    }
  });
  flushMedia();
  return out;
}

type ChatTool = NonNullable<OpenAIChatRequest["tools"]>[number];

/** One Responses tool as chat functions (a namespace gives one per tool in it). */
function addTool(t: any, out: ChatTool[], names: ToolNames, seen: Set<string>, namespace?: string): void {
  if (t?.type === "namespace" && !namespace) {
    for (const child of Array.isArray(t.tools) ? t.tools : []) addTool(child, out, names, seen, String(t.name ?? ""));
    return;
  }
  // A tool OpenAI runs itself (web_search, which Codex offers by default, file_search, code_interpreter, ...) has no
  // counterpart here: it is not offered, and the model answers without it. Forcing one is refused (chatToolChoice).
  if (t?.type !== "function" && t?.type !== "custom") return;
  const own = String(t.name ?? "");
  const name = namespace ? namespacedName(namespace, own) : own;
  if (seen.has(name)) return;
  seen.add(name);
  if (namespace) names.namespaced.set(name, { namespace, name: own });
  const fn: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean } = { name };
  if (t.description) fn.description = t.description;
  if (t.type === "custom") {
    names.custom.add(name);
    const format = t.format;
    const grammar =
      format?.type === "grammar" && typeof format.definition === "string"
        ? `, written in this ${format.syntax === "regex" ? "regular expression" : `${String(format.syntax ?? "lark")} grammar`}:\n${format.definition}`
        : "";
    fn.parameters = {
      type: "object",
      properties: {
        [CUSTOM_INPUT]: { type: "string", description: `The tool's whole input, as free-form text${grammar}` },
      },
      required: [CUSTOM_INPUT],
      additionalProperties: false,
    };
  } else {
    if (t.parameters) fn.parameters = t.parameters;
    if (typeof t.strict === "boolean") fn.strict = t.strict;
  }
  out.push(withBreakpoint({ type: "function" as const, function: fn }, t));
}

/** The request's tools and those of its additional_tools input items, as chat functions. */
function chatTools(req: ResponsesRequest, names: ToolNames): ChatTool[] {
  const out: ChatTool[] = [];
  const seen = new Set<string>();
  for (const t of Array.isArray(req.tools) ? req.tools : []) addTool(t, out, names, seen);
  if (Array.isArray(req.input)) {
    for (const item of req.input)
      if (item?.type === "additional_tools")
        for (const t of Array.isArray(item.tools) ? item.tools : []) addTool(t, out, names, seen);
  }
  return out;
}

/** A named tool choice's chat function name. */
function choiceName(c: { type?: string; name?: string; namespace?: string }): string | null {
  if ((c.type !== "function" && c.type !== "custom") || !c.name) return null;
  return c.namespace ? namespacedName(c.namespace, c.name) : c.name;
}

/** tool_choice in chat terms; `allowed_tools` narrows the tools sent to the ones it allows. */
function chatToolChoice(
  choice: unknown,
  tools: ChatTool[],
): { choice?: OpenAIChatRequest["tool_choice"]; tools: ChatTool[] } {
  if (choice == null) return { tools };
  if (choice === "auto" || choice === "none" || choice === "required") return { choice, tools };
  const c = choice as { type?: string; name?: string; mode?: string; tools?: any[] };
  const name = choiceName(c);
  if (name) return { choice: { type: "function", function: { name } }, tools };
  if (c.type === "allowed_tools" && Array.isArray(c.tools) && (c.mode === "auto" || c.mode === "required")) {
    const allowed = new Set(c.tools.map((t) => choiceName(t)).filter(Boolean));
    return { choice: c.mode, tools: tools.filter((t) => allowed.has(t.function.name)) };
  }
  throw refuse(`tool_choice ${JSON.stringify(choice).slice(0, 200)}`);
}

/** Which upstream's signed reasoning the chat request may carry back (each in its own chat field). */
export interface SignedReasoning {
  /** Gemini's thought signatures, on tool calls (extra_content.google) */
  gemini?: boolean;
  /** Claude's signed thinking blocks, on assistant messages (thinking_blocks) */
  claude?: boolean;
}

/** A Responses request as the chat request that answers it, and what converting the answer back needs. */
export function convertResponsesRequest(
  req: ResponsesRequest,
  carry: SignedReasoning = {},
): { chat: OpenAIChatRequest; names: ToolNames } {
  for (const [key, what] of SERVICE_ONLY) if (req[key] != null && req[key] !== false) throw refuse(what);
  if (req.previous_response_id) {
    throw new AppError(
      400,
      `previous_response_id '${req.previous_response_id}' is not known to this gateway (it keeps the responses it converted for an hour; others live on the channel that made them): send the earlier turns as input instead`,
      "previous_response_not_found",
    );
  }
  const messages: OpenAIMessage[] = [];
  if (req.instructions) messages.push({ role: "system", content: String(req.instructions) });
  messages.push(...chatMessages(req.input, carry));
  const out: OpenAIChatRequest = withBreakpoint({ model: req.model, messages }, req);
  const effort = req.reasoning?.effort;
  if (effort) out.reasoning_effort = effort;
  // max_tokens, which every chat API takes; the OpenAI adaptor makes it max_completion_tokens where the upstream
  // wants that (formats/reasoning.ts), and the Claude and Gemini conversions read either.
  if (req.max_output_tokens != null) out.max_tokens = req.max_output_tokens;
  if (req.temperature != null) out.temperature = req.temperature;
  if (req.top_p != null) out.top_p = req.top_p;
  if (req.user) out.user = req.user;
  if (typeof req.prompt_cache_key === "string" && req.prompt_cache_key) out.prompt_cache_key = req.prompt_cache_key;
  const names: ToolNames = { custom: new Set(), namespaced: new Map() };
  const chosen = chatToolChoice(req.tool_choice, chatTools(req, names));
  if (chosen.tools.length) {
    out.tools = chosen.tools;
    if (chosen.choice) out.tool_choice = chosen.choice;
    if (req.parallel_tool_calls === false) out.parallel_tool_calls = false;
  }
  const fmt = req.text?.format;
  if (fmt?.type === "json_schema") {
    if (!fmt.schema || typeof fmt.schema !== "object")
      throw new AppError(400, "text.format.schema is required for json_schema");
    out.response_format = {
      type: "json_schema",
      json_schema: {
        name: fmt.name ?? "response",
        schema: fmt.schema,
        ...(fmt.description ? { description: fmt.description } : {}),
        ...(fmt.strict != null ? { strict: fmt.strict } : {}),
      },
    };
  } else if (fmt?.type === "json_object") out.response_format = { type: "json_object" };
  else if (fmt?.type && fmt.type !== "text") throw refuse(`text.format type '${fmt.type}'`);
  const verbosity = (req.text as { verbosity?: unknown } | null | undefined)?.verbosity;
  if (typeof verbosity === "string") out.verbosity = verbosity;
  if (req.stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return { chat: out, names };
}

/** A Responses request as the chat request that answers it. */
export function responsesToChat(req: ResponsesRequest): OpenAIChatRequest {
  return convertResponsesRequest(req).chat;
}

/**
 * A Responses body for a channel that has the API itself: the gateway's sealed reasoning items are left out
 * (their content means nothing to another service) and its compaction items become the user message they stand
 * for. The same object when there are none (the usual case: one look at each item's type).
 */
export function plainForUpstream(body: any): any {
  const input = body?.input;
  if (!Array.isArray(input)) return body;
  let sealed = false;
  for (const item of input) {
    if ((item?.type === "reasoning" || item?.type === "compaction") && openContent(item.encrypted_content) != null) {
      sealed = true;
      break;
    }
  }
  if (!sealed) return body;
  const out: unknown[] = [];
  for (const item of input) {
    const text = item?.type === "reasoning" || item?.type === "compaction" ? openContent(item.encrypted_content) : null;
    if (text == null) out.push(item);
    else if (item.type === "compaction")
      out.push({ type: "message", role: "user", content: [{ type: "input_text", text: SUMMARY_INTRO + text }] });
  }
  return { ...body, input: out };
}
