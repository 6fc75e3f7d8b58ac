// A stand-in for the Anthropic Messages API: validates the key and the request shape the real API
// insists on, and answers with responses and SSE events shaped like recorded ones. A request with
// tools whose last turn is not a tool result gets a tool_use answer; everything else gets text.
import { serve, sseResponse, type MockUpstream } from "./recorder.ts";

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
  return {
    id: "msg_01XFDUDYJgAACzvnptvVoYEL", type: "message", role: "assistant", model, content,
    stop_reason: wantsTool(body) ? "tool_use" : "end_turn", stop_sequence: null, usage: CLAUDE_USAGE,
  };
}

export function claudeEvents(body: any, model = body?.model ?? "claude-test"): object[] {
  const start = { type: "message_start", message: { id: "msg_01Stream", type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null,
    usage: { input_tokens: CLAUDE_USAGE.input_tokens, cache_creation_input_tokens: 2, cache_read_input_tokens: 3, output_tokens: 1 } } };
  const evs: object[] = [start, { type: "ping" }];
  if (body?.thinking) {
    evs.push({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } });
    evs.push({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Considering." } });
    evs.push({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } });
    evs.push({ type: "content_block_stop", index: 0 });
  }
  const base = body?.thinking ? 1 : 0;
  evs.push({ type: "content_block_start", index: base, content_block: { type: "text", text: "" } });
  evs.push({ type: "content_block_delta", index: base, delta: { type: "text_delta", text: "Hello" } });
  evs.push({ type: "content_block_delta", index: base, delta: { type: "text_delta", text: " from Claude." } });
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
  return evs;
}

export const claudeSseFrame = (ev: any) => `event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;

export function startClaudeUpstream(opts: { key?: string } = {}): MockUpstream {
  const key = opts.key ?? "claude-key";
  return serve((req, rec) => {
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
    if (rec.body.stream) return sseResponse(claudeEvents(rec.body).map(claudeSseFrame));
    return Response.json(claudeReply(rec.body));
  });
}
