// A stand-in for the Anthropic Messages API: validates the key and the request shape the real API
// insists on, and answers with responses and SSE events shaped like recorded ones. A request with
// tools whose last turn is not a tool result gets a tool_use answer; everything else gets text.
// Streams of models named with "-cut" break off before message_delta (so no final usage ever comes),
// "-slow" ones wait slowMs before each event, and "-streamerror" ones send an `event: error` that
// echoes the key and an internal address after the first text delta. Models named with "-nousage"
// send no usage objects at all (answers, message_start and message_delta), as some Claude-compatible
// upstreams do.
import { serve, type MockUpstream } from "./recorder.ts";

export interface ClaudeMockOptions {
  key?: string;
  /** Text pieces of streamed answers (default "Hello", " from Claude."). */
  textDeltas?: string[];
  /** Thinking pieces streamed first when the request enables thinking (default "Considering."). */
  thinkingDeltas?: string[];
  /** Delay before each event of "-slow" streams (ms). */
  slowMs?: number;
}

export const CLAUDE_INTERNAL_URL = "http://10.1.2.3:8080/internal/v1/messages";

export const CLAUDE_USAGE = { input_tokens: 12, cache_creation_input_tokens: 2, cache_read_input_tokens: 3, output_tokens: 7 };
export const CLAUDE_TEXT = "Hello from Claude.";

function wantsTool(body: any): boolean {
  if (!Array.isArray(body?.tools) || body.tools.length === 0) return false;
  if (body.tool_choice?.type === "none") return false;
  const last = body.messages?.[body.messages.length - 1];
  const blocks = Array.isArray(last?.content) ? last.content : [];
  return !blocks.some((b: any) => b.type === "tool_result");
}

/** Problems the real API would answer 400 for. */
export function claudeRequestProblem(body: any, modelInBody = true): string | null {
  if (!body || typeof body !== "object") return "body must be a JSON object";
  if (modelInBody && typeof body.model !== "string") return "model: Field required";
  if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages: Field required";
  for (let i = 1; i < body.messages.length; i++) {
    if (body.messages[i].role === body.messages[i - 1].role) return "messages: roles must alternate between user and assistant";
  }
  if (body.messages[0].role !== "user") return "messages: first message must use the user role";
  if (body.thinking && (body.temperature !== undefined || body.top_p !== undefined)) return "temperature may not be set with thinking";
  return null;
}

export function claudeReply(body: any, model = body?.model ?? "claude-test") {
  const content = wantsTool(body)
    ? [{ type: "text", text: "Let me check." }, { type: "tool_use", id: "toolu_01A", name: body.tools[0].name, input: { city: "Paris" } }]
    : [{ type: "text", text: CLAUDE_TEXT }];
  const reply: Record<string, unknown> = {
    id: "msg_01XFDUDYJgAACzvnptvVoYEL", type: "message", role: "assistant", model, content,
    stop_reason: wantsTool(body) ? "tool_use" : "end_turn", stop_sequence: null, usage: CLAUDE_USAGE,
  };
  if (String(model).includes("-nousage")) delete reply.usage;
  return reply;
}

export function claudeEvents(body: any, model = body?.model ?? "claude-test", opts: ClaudeMockOptions = {}): object[] {
  const start = { type: "message_start", message: { id: "msg_01Stream", type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null,
    usage: { input_tokens: CLAUDE_USAGE.input_tokens, cache_creation_input_tokens: 2, cache_read_input_tokens: 3, output_tokens: 1 } } };
  const evs: object[] = [start, { type: "ping" }];
  if (body?.thinking) {
    evs.push({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } });
    for (const t of opts.thinkingDeltas ?? ["Considering."]) evs.push({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: t } });
    evs.push({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } });
    evs.push({ type: "content_block_stop", index: 0 });
  }
  const base = body?.thinking ? 1 : 0;
  evs.push({ type: "content_block_start", index: base, content_block: { type: "text", text: "" } });
  for (const t of opts.textDeltas ?? ["Hello", " from Claude."]) evs.push({ type: "content_block_delta", index: base, delta: { type: "text_delta", text: t } });
  evs.push({ type: "content_block_stop", index: base });
  if (wantsTool(body)) {
    evs.push({ type: "content_block_start", index: base + 1, content_block: { type: "tool_use", id: "toolu_01A", name: body.tools[0].name, input: {} } });
    evs.push({ type: "content_block_delta", index: base + 1, delta: { type: "input_json_delta", partial_json: "" } });
    evs.push({ type: "content_block_delta", index: base + 1, delta: { type: "input_json_delta", partial_json: "{\"city\": \"Pa" } });
    evs.push({ type: "content_block_delta", index: base + 1, delta: { type: "input_json_delta", partial_json: "ris\"}" } });
    evs.push({ type: "content_block_stop", index: base + 1 });
  }
  evs.push({ type: "message_delta", delta: { stop_reason: wantsTool(body) ? "tool_use" : "end_turn", stop_sequence: null }, usage: { output_tokens: CLAUDE_USAGE.output_tokens } });
  evs.push({ type: "message_stop" });
  if (String(model).includes("-nousage")) {
    delete (start.message as any).usage;
    delete (evs[evs.length - 2] as any).usage;
  }
  return evs;
}

export const claudeSseFrame = (ev: any) => `event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;

/** The frames of a stream, shaped by the words in the model name (see the top of this file). */
function streamResponse(mock: { cancelled: number }, body: any, key: string, opts: ClaudeMockOptions): Response {
  const model = String(body.model);
  let evs = claudeEvents(body, model, opts);
  const cut = model.includes("-cut");
  if (cut) evs = evs.slice(0, evs.findIndex((e: any) => e.type === "message_delta"));
  if (model.includes("-streamerror")) {
    const at = evs.findIndex((e: any) => e.delta?.type === "text_delta") + 1;
    const error = { type: "error", error: { type: "overloaded_error", message: `Overloaded (key ${key}) at ${CLAUDE_INTERNAL_URL}` } };
    evs = [...evs.slice(0, at), error];
  }
  const delay = model.includes("-slow") ? opts.slowMs ?? 50 : 0;
  const enc = new TextEncoder();
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    async start(c) {
      try {
        for (const ev of evs) {
          if (delay) await Bun.sleep(delay);
          if (cancelled) return;
          c.enqueue(enc.encode(claudeSseFrame(ev)));
        }
        if (cut) {
          // Let the frames reach the reader, then reset the connection.
          await Bun.sleep(30);
          c.error(new Error("connection reset"));
          return;
        }
        c.close();
      } catch {
        // The reader went away.
      }
    },
    cancel() {
      cancelled = true;
      mock.cancelled++;
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream" } });
}

export function startClaudeUpstream(opts: ClaudeMockOptions = {}): MockUpstream & { cancelled: number } {
  const key = opts.key ?? "claude-key";
  const counters = { cancelled: 0 };
  const up = serve((req, rec) => {
    if (rec.headers["x-api-key"] !== key) {
      return Response.json({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }, { status: 401 });
    }
    if (rec.path === "/v1/models" && rec.method === "GET") {
      return Response.json({ data: [{ type: "model", id: "claude-sonnet-4-20250514" }, { type: "model", id: "claude-3-5-haiku-20241022" }], has_more: false });
    }
    if (rec.path !== "/v1/messages") return Response.json({ type: "error", error: { type: "not_found_error", message: "Not found" } }, { status: 404 });
    if (!rec.headers["anthropic-version"]) {
      return Response.json({ type: "error", error: { type: "invalid_request_error", message: "anthropic-version: header is required" } }, { status: 400 });
    }
    const problem = claudeRequestProblem(rec.body);
    if (problem) return Response.json({ type: "error", error: { type: "invalid_request_error", message: problem } }, { status: 400 });
    if (rec.body.model === "claude-overloaded") {
      return Response.json({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, { status: 529 });
    }
    if (rec.body.stream) return streamResponse(counters, rec.body, key, opts);
    return Response.json(claudeReply(rec.body));
  });
  return Object.defineProperty(up, "cancelled", { get: () => counters.cancelled }) as MockUpstream & { cancelled: number };
}
