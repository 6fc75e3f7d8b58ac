// A stand-in for the Anthropic Messages API: validates the key and the request shape the real API
// insists on, and answers with responses and SSE events shaped like recorded ones. A request with
// tools whose last turn is not a tool result gets a tool_use answer; everything else gets text.
// Streams of models named with "-cut" break off before message_delta (so no final usage ever comes),
// "-slow" ones wait slowMs before each event, and "-streamerror" ones send an `event: error` that
// echoes the key and an internal address after the first text delta. Models named with "-nousage"
// send no usage objects at all (answers, message_start and message_delta), as some Claude-compatible
// upstreams do; "-nooutputcount" answers (not streams) report input_tokens and no output_tokens.
// Mid-conversation system messages (role "system" after a user turn) are taken as Anthropic's API takes them; the
// Bedrock and Vertex mocks refuse them, as those APIs do not have them.
// Like the real API it refuses fields it does not know (n, response_format, reasoning_effort...), input
// schemas that are not JSON Schema, and thinking with forced tool use or after a tool-use turn that did not
// start with a thinking block. A forced tool_choice is answered with a call of that tool (its input fits the
// schema); output_config.format with JSON text fitting the schema; thinking with a thinking block first.
// A request with cache_control breakpoints reports prompt caching as the API does (claudeCacheUsage): a cache
// read, and cache writes split by the TTLs its breakpoints asked for (cache_creation.ephemeral_5m/1h_input_tokens).
import { serve, type MockUpstream } from "./recorder.ts";
import { jsonSchemaProblem, sampleFor } from "./schema.ts";

/** Top-level fields the Messages API takes (Bedrock and Vertex add anthropic_version, Bedrock anthropic_beta). */
const KNOWN = new Set([
  "model",
  "max_tokens",
  "messages",
  "system",
  "stop_sequences",
  "temperature",
  "top_p",
  "top_k",
  "stream",
  "tools",
  "tool_choice",
  "thinking",
  "metadata",
  "output_config",
  "output_format",
  "service_tier",
  "container",
  "mcp_servers",
  "context_management",
  "anthropic_version",
  "anthropic_beta",
  "cache_control",
]);

export const CLAUDE_THINKING = "Considering.";

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

export const CLAUDE_USAGE = {
  input_tokens: 12,
  cache_creation_input_tokens: 2,
  cache_read_input_tokens: 3,
  output_tokens: 7,
};
export const CLAUDE_TEXT = "Hello from Claude.";

/** What a request with cache breakpoints reports: this many tokens read from the cache, and written per TTL asked for. */
export const CLAUDE_CACHE = { read: 3000, write5m: 1000, write1h: 2000 };

/** The TTLs of a request's cache_control breakpoints: on the request, system blocks, tools and message blocks. */
export function cacheBreakpoints(body: any): { fiveMinute: number; oneHour: number } {
  const found = { fiveMinute: 0, oneHour: 0 };
  const see = (x: any) => {
    const cc = x?.cache_control;
    if (!cc || typeof cc !== "object") return;
    if (cc.ttl === "1h") found.oneHour++;
    else found.fiveMinute++;
  };
  see(body);
  if (Array.isArray(body?.system)) body.system.forEach(see);
  for (const t of body?.tools ?? []) see(t);
  for (const m of body?.messages ?? []) if (Array.isArray(m.content)) m.content.forEach(see);
  return found;
}

/** The usage of a request (stream or not), with prompt caching where it set breakpoints. */
export function claudeCacheUsage(
  body: any,
  outputTokens: number = CLAUDE_USAGE.output_tokens,
): Record<string, unknown> {
  const bp = cacheBreakpoints(body);
  if (!bp.fiveMinute && !bp.oneHour) return { ...CLAUDE_USAGE, output_tokens: outputTokens };
  const write5m = bp.fiveMinute ? CLAUDE_CACHE.write5m : 0;
  const write1h = bp.oneHour ? CLAUDE_CACHE.write1h : 0;
  return {
    input_tokens: CLAUDE_USAGE.input_tokens,
    cache_creation_input_tokens: write5m + write1h,
    cache_read_input_tokens: CLAUDE_CACHE.read,
    cache_creation: { ephemeral_5m_input_tokens: write5m, ephemeral_1h_input_tokens: write1h },
    output_tokens: outputTokens,
  };
}

/** The tool a reply calls: the forced one, else the first. */
function toolOf(body: any): any {
  const forced =
    body?.tool_choice?.type === "tool" ? body.tools.find((t: any) => t.name === body.tool_choice.name) : null;
  return forced ?? body.tools[0];
}

function toolInput(tool: any): unknown {
  return tool?.input_schema?.properties?.city ? { city: "Paris" } : sampleFor(tool?.input_schema);
}

function wantsTool(body: any): boolean {
  if (!Array.isArray(body?.tools) || body.tools.length === 0) return false;
  if (body.tool_choice?.type === "none") return false;
  if (body.tool_choice?.type === "tool" || body.tool_choice?.type === "any") return true;
  const last = [...(body.messages ?? [])].reverse().find((m: any) => m?.role !== "system");
  const blocks = Array.isArray(last?.content) ? last.content : [];
  return !blocks.some((b: any) => b.type === "tool_result");
}

/** Problems the real API would answer 400 for. */
/** `systemMessages`: the API takes mid-conversation system messages (Anthropic's does; Bedrock's and Vertex's do not). */
export function claudeRequestProblem(body: any, modelInBody = true, systemMessages = true): string | null {
  if (!body || typeof body !== "object") return "body must be a JSON object";
  if (modelInBody && typeof body.model !== "string") return "model: Field required";
  if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages: Field required";
  // A mid-conversation system message (role "system") may follow a user turn; user and assistant turns
  // alternate around it.
  let prev = "";
  for (const [i, m] of body.messages.entries()) {
    if (m?.role === "system" && systemMessages) {
      if (prev !== "user") return `messages.${i}: a system message must follow a user turn`;
      if (
        !(
          typeof m.content === "string"
          || (Array.isArray(m.content) && m.content.every((b: any) => b?.type === "text"))
        )
      ) {
        return `messages.${i}.content: a system message takes text only`;
      }
      continue;
    }
    if (m?.role !== "user" && m?.role !== "assistant")
      return `messages.${i}.role: Input should be 'user', 'assistant'${systemMessages ? " or 'system'" : ""}`;
    if (i === 0 && m.role !== "user") return "messages: first message must use the user role";
    if (m.role === prev) return "messages: roles must alternate between user and assistant";
    prev = m.role;
  }
  if (body.thinking && (body.temperature !== undefined || body.top_p !== undefined))
    return "temperature may not be set with thinking";
  const extra = Object.keys(body).find((k) => !KNOWN.has(k));
  if (extra) return `${extra}: Extra inputs are not permitted`;
  for (const [i, t] of (body.tools ?? []).entries()) {
    if (t.type && t.type !== "custom") continue;
    if (t.input_schema?.type !== "object") return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
    const p = jsonSchemaProblem(t.input_schema, `tools.${i}.custom.input_schema`);
    if (p) return p;
  }
  const thinking = body.thinking?.type === "enabled" || body.thinking?.type === "adaptive";
  if (thinking && (body.tool_choice?.type === "tool" || body.tool_choice?.type === "any"))
    return "Thinking may not be enabled when tool_choice forces tool use.";
  if (thinking) {
    const lastAssistant = [...body.messages].reverse().find((m: any) => m.role === "assistant");
    const blocks = Array.isArray(lastAssistant?.content) ? lastAssistant.content : [];
    if (
      blocks.some((b: any) => b.type === "tool_use")
      && blocks[0]?.type !== "thinking"
      && blocks[0]?.type !== "redacted_thinking"
    ) {
      return "messages: a final `assistant` message must start with a thinking block when `thinking` is enabled";
    }
  }
  return null;
}

/** The text of a plain answer: JSON fitting output_config.format's schema when one is asked for. */
function replyText(body: any): string {
  const fmt = body?.output_config?.format ?? body?.output_format;
  return fmt?.type === "json_schema" ? JSON.stringify(sampleFor(fmt.schema)) : CLAUDE_TEXT;
}

export function claudeReply(body: any, model = body?.model ?? "claude-test") {
  const forced = body?.tool_choice?.type === "tool" || body?.tool_choice?.type === "any";
  const tool = wantsTool(body) ? toolOf(body) : null;
  const content: object[] = tool
    ? [
        ...(forced ? [] : [{ type: "text", text: "Let me check." }]),
        { type: "tool_use", id: "toolu_01A", name: tool.name, input: toolInput(tool) },
      ]
    : [{ type: "text", text: replyText(body) }];
  if (body?.thinking && body.thinking.type !== "disabled")
    content.unshift({ type: "thinking", thinking: CLAUDE_THINKING, signature: "sig" });
  const reply: Record<string, unknown> = {
    id: "msg_01XFDUDYJgAACzvnptvVoYEL",
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: wantsTool(body) ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: claudeCacheUsage(body),
  };
  if (String(model).includes("-nousage")) delete reply.usage;
  else if (String(model).includes("-nooutputcount")) reply.usage = { input_tokens: CLAUDE_USAGE.input_tokens };
  return reply;
}

export function claudeEvents(body: any, model = body?.model ?? "claude-test", opts: ClaudeMockOptions = {}): object[] {
  const start = {
    type: "message_start",
    message: {
      id: "msg_01Stream",
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: claudeCacheUsage(body, 1),
    },
  };
  const evs: object[] = [start, { type: "ping" }];
  const thinks = body?.thinking && body.thinking.type !== "disabled";
  if (thinks) {
    evs.push({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } });
    for (const t of opts.thinkingDeltas ?? ["Considering."])
      evs.push({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: t } });
    evs.push({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } });
    evs.push({ type: "content_block_stop", index: 0 });
  }
  let base = thinks ? 1 : 0;
  const forced = body?.tool_choice?.type === "tool" || body?.tool_choice?.type === "any";
  // A forced tool call comes without text before it, as Claude answers one.
  if (!(forced && wantsTool(body))) {
    const fmt = body?.output_config?.format ?? body?.output_format;
    const deltas = fmt?.type === "json_schema" ? [replyText(body)] : (opts.textDeltas ?? ["Hello", " from Claude."]);
    evs.push({ type: "content_block_start", index: base, content_block: { type: "text", text: "" } });
    for (const t of deltas)
      evs.push({ type: "content_block_delta", index: base, delta: { type: "text_delta", text: t } });
    evs.push({ type: "content_block_stop", index: base });
    base++;
  }
  if (wantsTool(body)) {
    const tool = toolOf(body);
    const json = JSON.stringify(toolInput(tool));
    const cut = Math.floor(json.length / 2);
    evs.push({
      type: "content_block_start",
      index: base,
      content_block: { type: "tool_use", id: "toolu_01A", name: tool.name, input: {} },
    });
    evs.push({ type: "content_block_delta", index: base, delta: { type: "input_json_delta", partial_json: "" } });
    evs.push({
      type: "content_block_delta",
      index: base,
      delta: { type: "input_json_delta", partial_json: json.slice(0, cut) },
    });
    evs.push({
      type: "content_block_delta",
      index: base,
      delta: { type: "input_json_delta", partial_json: json.slice(cut) },
    });
    evs.push({ type: "content_block_stop", index: base });
  }
  evs.push({
    type: "message_delta",
    delta: { stop_reason: wantsTool(body) ? "tool_use" : "end_turn", stop_sequence: null },
    usage: { output_tokens: CLAUDE_USAGE.output_tokens },
  });
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
  if (cut)
    evs = evs.slice(
      0,
      evs.findIndex((e: any) => e.type === "message_delta"),
    );
  if (model.includes("-streamerror")) {
    const at = evs.findIndex((e: any) => e.delta?.type === "text_delta") + 1;
    const error = {
      type: "error",
      error: { type: "overloaded_error", message: `Overloaded (key ${key}) at ${CLAUDE_INTERNAL_URL}` },
    };
    evs = [...evs.slice(0, at), error];
  }
  const delay = model.includes("-slow") ? (opts.slowMs ?? 50) : 0;
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
      return Response.json(
        { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } },
        { status: 401 },
      );
    }
    if (rec.path === "/v1/models" && rec.method === "GET") {
      return Response.json({
        data: [
          { type: "model", id: "claude-sonnet-4-20250514" },
          { type: "model", id: "claude-3-5-haiku-20241022" },
        ],
        has_more: false,
      });
    }
    if (rec.path !== "/v1/messages")
      return Response.json(
        { type: "error", error: { type: "not_found_error", message: "Not found" } },
        { status: 404 },
      );
    if (!rec.headers["anthropic-version"]) {
      return Response.json(
        { type: "error", error: { type: "invalid_request_error", message: "anthropic-version: header is required" } },
        { status: 400 },
      );
    }
    const problem = claudeRequestProblem(rec.body);
    if (problem)
      return Response.json(
        { type: "error", error: { type: "invalid_request_error", message: problem } },
        { status: 400 },
      );
    if (rec.body.model === "claude-overloaded") {
      return Response.json(
        { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
        { status: 529 },
      );
    }
    if (rec.body.stream) return streamResponse(counters, rec.body, key, opts);
    return Response.json(claudeReply(rec.body));
  });
  return Object.defineProperty(up, "cancelled", { get: () => counters.cancelled }) as MockUpstream & {
    cancelled: number;
  };
}
