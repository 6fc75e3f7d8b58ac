// OpenAI's Responses API on channels without it (Claude, Gemini, Bedrock, Vertex, Azure before its v1 API,
// OpenAI-compatible upstreams without /v1/responses): a Responses request becomes a chat request, which
// every adaptor takes. What chat cannot express (built-in tools, stored prompts, background runs, item
// references) is refused with a 400 naming it, never dropped.
import { AppError } from "../../../http/errors.ts";
import type { OpenAIChatRequest, OpenAIContentPart, OpenAIMessage, OpenAIToolCall } from "../claude/wire.ts";

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

const refuse = (what: string) => new AppError(400, `${what} is not supported on this channel (its Responses API calls are converted to chat completions)`);

/** Request fields that need OpenAI's own Responses service. */
const SERVICE_ONLY: [string, string][] = [["background", "background mode"], ["conversation", "conversation"], ["prompt", "a stored prompt (prompt)"]];

function textOfParts(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p: any) => (typeof p?.text === "string" ? p.text : typeof p?.refusal === "string" ? p.refusal : "")).join("");
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
      if (p.file_url) return { type: "file", file: { file_url: String(p.file_url), ...(p.filename ? { filename: p.filename } : {}) } };
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

/** The input items as chat messages: function calls join the assistant message before them, outputs become tool messages. */
function chatMessages(input: ResponsesRequest["input"]): OpenAIMessage[] {
  if (input == null) return [];
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input)) throw new AppError(400, "input must be a string or an array of input items");
  const out: OpenAIMessage[] = [];
  for (const item of input) {
    const type = item?.type ?? (item?.role ? "message" : undefined);
    if (type === "message") {
      const role = item.role === "developer" ? "system" : item.role;
      if (role !== "user" && role !== "system" && role !== "assistant") throw new AppError(400, `input message role '${String(item.role)}' is not one of user, system, developer, assistant`);
      out.push(withBreakpoint(role === "assistant" ? { role, content: textOfParts(item.content) } : { role, content: messageContent(item.content) }, item));
    } else if (type === "function_call") {
      const call: OpenAIToolCall = { id: String(item.call_id ?? item.id ?? ""), type: "function", function: { name: String(item.name ?? ""), arguments: String(item.arguments ?? "") } };
      const last = out[out.length - 1];
      if (last?.role === "assistant") (last.tool_calls ??= []).push(call);
      else out.push({ role: "assistant", content: null, tool_calls: [call] });
    } else if (type === "function_call_output") {
      const output = typeof item.output === "string" ? item.output : textOfParts(item.output);
      out.push(withBreakpoint({ role: "tool", tool_call_id: String(item.call_id ?? ""), content: output }, item));
    } else if (type === "reasoning") {
      // Earlier reasoning: chat has no way to send it back; the answer it led to is in the other items.
      continue;
    } else {
      throw refuse(`input item type '${String(type)}'`);
    }
  }
  return out;
}

function chatTools(tools: any[] | undefined): OpenAIChatRequest["tools"] {
  if (!tools?.length) return undefined;
  return tools.map((t) => {
    if (t?.type !== "function") throw refuse(`the built-in tool '${String(t?.type)}'`);
    const fn: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean } = { name: String(t.name) };
    if (t.description) fn.description = t.description;
    if (t.parameters) fn.parameters = t.parameters;
    if (typeof t.strict === "boolean") fn.strict = t.strict;
    return withBreakpoint({ type: "function" as const, function: fn }, t);
  });
}

function chatToolChoice(choice: unknown): OpenAIChatRequest["tool_choice"] | undefined {
  if (choice == null) return undefined;
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  const c = choice as { type?: string; name?: string };
  if (c.type === "function" && c.name) return { type: "function", function: { name: c.name } };
  throw refuse(`tool_choice ${JSON.stringify(choice)}`);
}

/** A Responses request as the chat request that answers it. */
export function responsesToChat(req: ResponsesRequest): OpenAIChatRequest {
  for (const [key, what] of SERVICE_ONLY) if (req[key] != null && req[key] !== false) throw refuse(what);
  if (req.previous_response_id) {
    throw new AppError(400, `previous_response_id '${req.previous_response_id}' is not known to this gateway (it keeps the responses it converted for an hour; others live on the channel that made them): send the earlier turns as input instead`, "previous_response_not_found");
  }
  const messages: OpenAIMessage[] = [];
  if (req.instructions) messages.push({ role: "system", content: String(req.instructions) });
  messages.push(...chatMessages(req.input));
  const out: OpenAIChatRequest = withBreakpoint({ model: req.model, messages }, req);
  const effort = req.reasoning?.effort;
  if (effort) out.reasoning_effort = effort;
  if (req.max_output_tokens != null) {
    if (effort) out.max_completion_tokens = req.max_output_tokens;
    else out.max_tokens = req.max_output_tokens;
  }
  if (req.temperature != null) out.temperature = req.temperature;
  if (req.top_p != null) out.top_p = req.top_p;
  if (req.user) out.user = req.user;
  const tools = chatTools(req.tools);
  if (tools) out.tools = tools;
  const choice = chatToolChoice(req.tool_choice);
  if (choice && tools) out.tool_choice = choice;
  if (req.parallel_tool_calls === false && tools) out.parallel_tool_calls = false;
  const fmt = req.text?.format;
  if (fmt?.type === "json_schema") {
    if (!fmt.schema || typeof fmt.schema !== "object") throw new AppError(400, "text.format.schema is required for json_schema");
    out.response_format = { type: "json_schema", json_schema: { name: fmt.name ?? "response", schema: fmt.schema, ...(fmt.strict != null ? { strict: fmt.strict } : {}) } };
  } else if (fmt?.type === "json_object") out.response_format = { type: "json_object" };
  else if (fmt?.type && fmt.type !== "text") throw refuse(`text.format type '${fmt.type}'`);
  if (req.stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}
