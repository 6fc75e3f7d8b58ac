// The Claude Messages protocol as an adaptor needs it, shared by Anthropic (type 14), AWS Bedrock
// (33) and Claude on Vertex (41): request body for the call's client format, response and stream
// mapping, usage. Only URL, auth and two body fields differ between the three.
import type { ParsedResponse, ProviderCall, SseEvent, StreamMapper, Usage } from "../types.ts";
import { sendUpstream } from "../settings.ts";
import { sseFrame, SSE_DONE } from "../../formats/sse.ts";
import { plainName, scrub, scrubFrame } from "../../formats/scrub.ts";
import { perModel, siteOf } from "../site.ts";
import { shownUsage } from "../../formats/shown-usage.ts";
import { TextCount, withCountedCompletion } from "../../formats/usage.ts";
import {
  ClaudeStreamToOpenAI,
  claudeGeneratedText,
  fromClaudeResponse,
  toClaudeRequest,
  usageFromClaude,
  type ClaudeRequestFacts,
  type ClaudeSettings,
} from "../../formats/claude/upstream.ts";
import { AppError } from "../../../http/errors.ts";
import type { ClaudeBlock, ClaudeMessage, ClaudeRequest, OpenAIUsage } from "../../formats/claude/wire.ts";
import { renamedText } from "../../formats/client-json.ts";

export const ANTHROPIC_VERSION = "2023-06-01";

export function claudeSettings(call: Pick<ProviderCall, "site">, model: string): ClaudeSettings {
  const site = siteOf(call);
  const max = Number(perModel(site.json("claude.default_max_tokens", { default: 8192 }), model, 8192));
  return {
    defaultMaxTokens: Number.isFinite(max) && max > 0 ? Math.floor(max) : 8192,
    thinkingAdapter: site.bool("claude.thinking_adapter_enabled"),
    thinkingPercentage: site.number("claude.thinking_adapter_budget_tokens_percentage", 0.8),
  };
}

/**
 * Extra request headers for a model from claude.model_headers_settings ({"model": {"header": ["v1","v2"]}}),
 * plus the anthropic-beta flags of a Claude client (merged, so neither side's features are lost).
 */
export function claudeModelHeaders(
  call: Pick<ProviderCall, "site" | "clientHeaders">,
  model: string,
): Record<string, string> {
  const all = siteOf(call).json<Record<string, Record<string, string | string[]>>>("claude.model_headers_settings", {});
  const entry = all?.[model];
  const out: Record<string, string> = {};
  if (entry && typeof entry === "object") {
    for (const [name, value] of Object.entries(entry)) {
      const v = Array.isArray(value) ? value.join(",") : String(value);
      if (v) out[name.toLowerCase()] = v;
    }
  }
  const beta = call.clientHeaders?.["anthropic-beta"];
  if (beta) {
    const flags = new Set(
      [...(out["anthropic-beta"] ?? "").split(","), ...beta.split(",")].map((s) => s.trim()).filter(Boolean),
    );
    out["anthropic-beta"] = [...flags].join(",");
  }
  return out;
}

export function toUsage(u: OpenAIUsage): Usage {
  const out: Usage = {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.total_tokens,
    cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0,
    cache_creation_tokens: u.prompt_tokens_details?.cached_creation_tokens ?? 0,
  };
  if (u.claude_cache_creation_1_h_tokens !== undefined)
    out.cache_creation_1h_tokens = u.claude_cache_creation_1_h_tokens;
  return out;
}

/**
 * The Claude request for this call: converted from OpenAI, or the client's own Claude body (model
 * replaced by the upstream name; sent verbatim when global.pass_through_request_enabled is on).
 */
export function claudeRequestFor(call: ProviderCall, body: any): ClaudeRequest {
  if (call.format === "claude") {
    if (siteOf(call).bool("global.pass_through_request_enabled")) return body as ClaudeRequest;
    const out = { ...body, model: call.upstreamModel } as ClaudeRequest;
    if (out.max_tokens == null) out.max_tokens = claudeSettings(call, call.upstreamModel).defaultMaxTokens;
    // The client's text says the same with a mapped model written into it (formats/client-json.ts).
    const sent = call.json;
    // (A Claude client's text is its own string: only an OpenAI stream's gets pieces, formats/client-json.ts.)
    if (
      sent !== undefined
      && typeof sent.text === "string"
      && sent.body === body
      && out.max_tokens === body.max_tokens
    ) {
      const text = out.model === body.model ? sent.text : renamedText(sent.text, out.model);
      call.json = text === undefined ? undefined : { body: out, text };
    }
    return out;
  }
  const facts: CallFacts = { fanOut: fanOutOf(call, body) };
  requestFacts.set(call, facts);
  return toClaudeRequest({ ...body, model: call.upstreamModel }, claudeSettings(call, call.upstreamModel), facts);
}

/**
 * A Claude body for an API without mid-conversation system messages (Bedrock, Vertex): each one's text joins the
 * top-level system after what is there (a system instruction still, from the start instead of from its point), and
 * the turns it stood between, now side by side, become one. A body without them is returned as it is.
 */
export function withSystemMessagesInSystem(req: ClaudeRequest): ClaudeRequest {
  if (!req.messages.some((m) => m?.role === "system")) return req;
  const system: { type: "text"; text: string; [k: string]: unknown }[] =
    typeof req.system === "string" ? (req.system ? [{ type: "text", text: req.system }] : []) : [...(req.system ?? [])];
  const messages: ClaudeMessage[] = [];
  for (const m of req.messages) {
    if (m.role === "system") {
      if (typeof m.content === "string") system.push({ type: "text", text: m.content });
      else for (const b of m.content) system.push({ type: "text", text: String((b as { text?: unknown }).text ?? "") });
      continue;
    }
    const last = messages.at(-1);
    if (last && last.role === m.role)
      messages[messages.length - 1] = { ...last, content: [...blocksOf(last.content), ...blocksOf(m.content)] };
    else messages.push(m);
  }
  return { ...req, system, messages };
}

function blocksOf(content: ClaudeMessage["content"]): ClaudeBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

/** What the answer of a converted call needs from its request: set by claudeRequestFor, read by parse, stream and send. */
interface CallFacts extends ClaudeRequestFacts {
  /** n > 1: the same request sent this many times (Claude has no n). */
  fanOut: number;
}
const requestFacts = new WeakMap<ProviderCall, CallFacts>();

/** The most choices one call may ask a Claude channel for (each is a request of its own). */
export const CLAUDE_MAX_N = 8;

function fanOutOf(call: ProviderCall, body: any): number {
  const n = body?.n == null ? 1 : Number(body.n);
  if (!Number.isInteger(n) || n < 1) throw new AppError(400, "n must be a positive integer");
  if (n === 1) return 1;
  if (call.stream)
    throw new AppError(
      400,
      "n > 1 cannot be streamed from a Claude channel (Claude has no n: the gateway sends n requests, which it can only do without stream); ask with stream off or n = 1",
    );
  if (n > CLAUDE_MAX_N)
    throw new AppError(
      400,
      `n may be at most ${CLAUDE_MAX_N} on a Claude channel (each choice is a request of its own)`,
    );
  return n;
}

/** The other answers of a fan-out, carried under this key of the first answer's JSON to parseClaudeResponse. */
const MORE = "_fan_out";

/**
 * Sends a converted call with n > 1 as n requests at once and answers as one upstream would: the first
 * failure as it came, or the first answer carrying the others. Every other call is one fetch.
 */
export async function claudeSend(call: ProviderCall, url: string, init: RequestInit): Promise<Response> {
  const n = requestFacts.get(call)?.fanOut ?? 1;
  if (n <= 1) return sendUpstream(call, url, init);
  const all = await Promise.all(Array.from({ length: n }, () => fetch(url, init)));
  const failed = all.find((r) => !r.ok);
  if (failed) {
    for (const r of all) if (r !== failed) void r.body?.cancel().catch(() => {});
    return failed;
  }
  const bodies: any[] = [];
  for (const r of all) bodies.push(await r.json());
  return Response.json({ ...bodies[0], [MORE]: bodies.slice(1) });
}

/** Whether an answer reports usage: without an input count it has none at all (the relay then counts both
 * sides, where zeros would bill nothing). */
const hasUsage = (json: any): boolean => typeof json?.usage?.input_tokens === "number";

/** An answer's usage; a missing output count is left for the relay to count from the answer's text. */
function parsedAnswer(body: unknown, json: any): ParsedResponse {
  if (!hasUsage(json)) return { body, usage: null };
  const usage = toUsage(usageFromClaude(json.usage));
  return typeof json.usage.output_tokens === "number"
    ? { body, usage }
    : { body, usage, uncountedOutput: claudeGeneratedText(json) };
}

export function parseClaudeResponse(call: ProviderCall, json: any): ParsedResponse {
  if (call.format === "claude") return parsedAnswer(json, json);
  const more: any[] = Array.isArray(json?.[MORE]) ? json[MORE] : [];
  const body = fromClaudeResponse(json, undefined, requestFacts.get(call), more);
  body.model = call.requestModel;
  // A fan-out is billed for every request it made; any answer without usage leaves the counting to the relay.
  if (more.length) return { body, usage: more.every(hasUsage) && hasUsage(json) ? toUsage(body.usage!) : null };
  return parsedAnswer(body, json);
}

/** Reads Claude stream events; answers them verbatim to Claude clients, as OpenAI chunks to others. */
export class ClaudeStreamMapper implements StreamMapper {
  private conv: ClaudeStreamToOpenAI;
  private finished = false;
  /** The relay's count of the text (textCounted()). */
  private counted = new TextCount();
  constructor(private call: ProviderCall) {
    this.conv = new ClaudeStreamToOpenAI(undefined, requestFacts.get(call));
  }

  complete(): boolean {
    return this.finished;
  }

  event(ev: SseEvent): string {
    let obj: any = null;
    try {
      obj = ev.data ? JSON.parse(ev.data) : null;
    } catch {}
    // Errors are never passed on verbatim, not even to Claude clients: they may echo the key or an address.
    if (ev.event === "error" || obj?.type === "error") {
      this.finished = true;
      return this.errorFrame(obj?.error?.type, obj?.error?.message ?? ev.data);
    }
    if (obj?.type === "message_stop") this.finished = true;
    if (!obj || typeof obj !== "object") return this.call.format === "claude" ? scrubFrame(ev, this.call) : "";
    const chunks = this.conv.push(obj);
    if (this.call.format === "claude") return ev.raw;
    let out = "";
    for (const c of chunks) {
      c.model = this.call.requestModel;
      out += sseFrame(JSON.stringify(c));
    }
    return out;
  }

  /** An upstream stream error, rebuilt from its type and scrubbed message only, in the client's format. */
  private errorFrame(rawType: unknown, rawMessage: unknown): string {
    const type = plainName(rawType, "api_error");
    const message = scrub(
      typeof rawMessage === "string" && rawMessage ? rawMessage : "upstream stream error",
      this.call,
    );
    if (this.call.format === "claude")
      return sseFrame(JSON.stringify({ type: "error", error: { type, message } }), "error");
    return sseFrame(JSON.stringify({ error: { message, type } }));
  }

  end(counted?: () => Usage): string {
    if (this.call.format === "claude") return "";
    let out = "";
    if (this.call.clientWantsUsage) {
      const u = this.conv.usageChunk();
      u.model = this.call.requestModel;
      // Anything short of a complete report is shown as billed: corrected by the count, or counted whole.
      if (!this.conv.hasInputUsage || !this.conv.hasFinalOutput) {
        const billed = this.usage() ?? counted?.();
        if (billed) u.usage = shownUsage(billed, this.conv.usage);
      }
      out += sseFrame(JSON.stringify(u));
    }
    return out + SSE_DONE;
  }

  countsText(): boolean {
    return (
      this.conv.hasInputUsage && !this.conv.hasFinalOutput && this.counted.of(this.conv.receivedText) === undefined
    );
  }

  textCounted(tokens: number): void {
    this.counted.set(this.conv.receivedText, tokens);
  }

  usage(): Usage | null {
    // Without the input side this is no usage: the relay counts the prompt as well as the text.
    if (!this.conv.hasInputUsage) return null;
    const u = toUsage(this.conv.usage);
    if (this.conv.hasFinalOutput) return u;
    // Cut or abandoned before message_delta: message_start's output_tokens is a placeholder (often 1).
    const text = this.conv.receivedText;
    return withCountedCompletion(u, text, this.counted.of(text));
  }

  generatedText(): string {
    return this.conv.receivedText;
  }
}

export function claudeErrorMessage(status: number, text: string): string {
  try {
    const j = JSON.parse(text);
    const m = j?.error?.message ?? j?.message ?? j?.Message;
    if (typeof m === "string" && m) return m;
  } catch {}
  return `upstream answered with status ${status}`;
}
