// Building OpenAI answers from another wire format: chat completions, stream chunks and the stream's
// closing frames, for the adaptors of providers with their own format (Baidu, Zhipu v3, Spark, Cohere,
// Dify, AI Proxy, Tencent's signed API). Each of them converts its upstream's events into calls here.
import type { ProviderCall, SseEvent, StreamMapper, Usage } from "../types.ts";
import { SSE_DONE, sseFrame } from "../../formats/sse.ts";
import { shownUsage } from "../../formats/shown-usage.ts";
import { scrub } from "../../formats/scrub.ts";
import { TextBuffer } from "../../formats/text-buffer.ts";

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export function openAIUsage(u: Usage) {
  return { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens };
}

/** A usage from prompt and completion counts (either may be missing); null when neither is a positive number. */
export function usageOf(prompt: unknown, completion: unknown, total?: unknown): Usage | null {
  const n = (v: unknown) =>
    typeof v === "number" && Number.isFinite(v) && v > 0
      ? Math.floor(v)
      : typeof v === "string" && Number(v) > 0
        ? Math.floor(Number(v))
        : 0;
  const p = n(prompt),
    c = n(completion),
    t = n(total);
  if (!p && !c && !t) return null;
  const completionTokens = c || (t > p ? t - p : 0);
  return { prompt_tokens: p, completion_tokens: completionTokens, total_tokens: Math.max(t, p + completionTokens) };
}

export function completionId(): string {
  return "chatcmpl-" + crypto.randomUUID().replace(/-/g, "").slice(0, 24);
}

/** A non-stream chat completion. */
export function chatCompletion(
  model: string,
  message: { content: string | null; reasoning_content?: string; tool_calls?: ToolCall[] },
  finish: string,
  usage: Usage | null,
  id = completionId(),
) {
  const msg: Record<string, unknown> = { role: "assistant", content: message.content };
  if (message.reasoning_content) msg.reasoning_content = message.reasoning_content;
  if (message.tool_calls?.length) msg.tool_calls = message.tool_calls;
  return {
    id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: msg, finish_reason: finish, logprobs: null }],
    usage: usage ? openAIUsage(usage) : { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
}

/**
 * The common half of a stream mapper for a converted upstream: chunk framing, the text generated so far,
 * the usage seen, and the closing frames (the usage chunk when the client asked for one, then [DONE]).
 * Subclasses read their upstream's JSON events in `onJson` (or whole events in `event`) and call text(),
 * reasoning(), tool(), finish(), error().
 */
export abstract class ConvertedStream implements StreamMapper {
  protected found: Usage | null = null;
  protected finished = false;
  private generated = new TextBuffer();
  private id = completionId();
  private created = Math.floor(Date.now() / 1000);
  private started = false;
  private finishSent = false;

  constructor(protected call: ProviderCall) {}

  /** One upstream event whose data is JSON; events that are not JSON are passed over. */
  protected onJson(_json: any, _ev: SseEvent): string {
    return "";
  }

  event(ev: SseEvent): string {
    let json: any;
    try {
      json = JSON.parse(ev.data);
    } catch {
      return "";
    }
    return this.onJson(json, ev);
  }

  protected frame(delta: Record<string, unknown>, finish: string | null = null): string {
    if (!this.started) {
      this.started = true;
      delta = { role: "assistant", ...delta };
    }
    return sseFrame(
      JSON.stringify({
        id: this.id,
        object: "chat.completion.chunk",
        created: this.created,
        model: this.call.requestModel,
        choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      }),
    );
  }

  protected text(s: string): string {
    if (!s) return "";
    this.generated.add(s);
    return this.frame({ content: s });
  }

  protected reasoning(s: string): string {
    if (!s) return "";
    this.generated.add(s);
    return this.frame({ reasoning_content: s });
  }

  /** A tool call's first chunk (id and name) or a later piece of its arguments (index only). */
  protected tool(index: number, part: { id?: string; name?: string; arguments?: string }): string {
    this.generated.add((part.name ?? "") + (part.arguments ?? ""));
    const fn: Record<string, string> = { arguments: part.arguments ?? "" };
    if (part.name !== undefined) fn.name = part.name;
    const call: Record<string, unknown> = { index, function: fn };
    if (part.id !== undefined) Object.assign(call, { id: part.id, type: "function" });
    return this.frame({ tool_calls: [call] });
  }

  /** The finishing chunk (once) and the stream counts as complete. */
  protected finish(reason = "stop"): string {
    this.finished = true;
    if (this.finishSent) return "";
    this.finishSent = true;
    return this.frame({}, reason);
  }

  /** An error the upstream sent inside its stream, given to the client (scrubbed); the stream is over. */
  protected error(message: string): string {
    this.finished = true;
    return sseFrame(
      JSON.stringify({
        error: { message: scrub(message || "upstream stream error", this.call), type: "upstream_error" },
      }),
    );
  }

  end(counted?: () => Usage): string {
    if (!this.call.clientWantsUsage) return SSE_DONE;
    const billed = this.found ?? counted?.();
    if (!billed) return SSE_DONE;
    const chunk = {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.call.requestModel,
      choices: [],
      usage: shownUsage(billed),
    };
    return sseFrame(JSON.stringify(chunk)) + SSE_DONE;
  }

  usage(): Usage | null {
    return this.found;
  }

  generatedText(): string {
    return this.generated.toString();
  }

  complete(): boolean {
    return this.finished;
  }
}

/** An OpenAI-shaped error answer with a status, for upstreams that report errors inside a 200 body. */
export function errorResponse(status: number, message: string, code?: string | number): Response {
  return Response.json(
    { error: { message, type: "upstream_error", code: code === undefined ? null : String(code) } },
    { status },
  );
}

/**
 * The upstream answer, or an error answer when its 200 body is one (`detect` reads the parsed JSON).
 * Only JSON bodies are read here; streams (text/event-stream) pass untouched.
 */
export async function rejectErrorBody(
  res: Response,
  detect: (json: any) => { status: number; message: string; code?: string | number } | null,
): Promise<Response> {
  if (!res.ok || (res.headers.get("content-type") ?? "").includes("text/event-stream")) return res;
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    return new Response(text, { status: res.status, headers: res.headers });
  }
  const err = detect(json);
  if (err) return errorResponse(err.status, err.message, err.code);
  return new Response(text, { status: res.status, headers: { "content-type": "application/json" } });
}

/** A readable message from the error bodies providers send (OpenAI's, and the flat ones of the Chinese APIs). */
export function providerErrorMessage(status: number, text: string): string {
  try {
    const j = JSON.parse(text);
    const m =
      j?.error?.message
      ?? j?.Response?.Error?.Message
      ?? j?.message
      ?? j?.error_msg
      ?? j?.msg
      ?? j?.error_description
      ?? j?.error;
    if (typeof m === "string" && m) return m;
  } catch {}
  return `upstream answered with status ${status}`;
}

/** Flattens OpenAI message content (string or parts) to text. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content == null ? "" : String(content);
  return content
    .map((p: any) =>
      typeof p === "string" ? p : p?.type === "text" || typeof p?.text === "string" ? (p.text ?? "") : "",
    )
    .join("");
}
