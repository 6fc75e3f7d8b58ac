// An OpenAI-compatible upstream that answers wherever the provider puts its API (…/v1, /api/paas/v4,
// /api/v3, /v2, /compatible-mode/v1, /client/v4/accounts/{id}/ai/v1, a custom full URL): any path ending
// in /chat/completions, /embeddings, /rerank, /images/generations or /models. It checks the bearer key
// (or `auth`), answers OpenAI's error body for a wrong one, and records every request.
// Models with "reason" in their name stream reasoning_content before the text; answers carry a
// non-standard "x_provider" field (what force_format removes).
import { serve, type MockUpstream, type Recorded } from "./recorder.ts";

export interface CompatOptions {
  /** The key the bearer token must be (default "sk-compat"), unless `auth` decides. */
  key?: string;
  auth?: (rec: Recorded) => boolean;
  /** The answer's text (streamed in three pieces). */
  text?: string;
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
    completion_tokens_details?: { reasoning_tokens: number };
  };
  /** What the model answers for a request, in place of the text or the first tool's call. */
  reply?: (body: any) => CompatReply;
  /** The upstream refuses stream_options (400), as some compatibility APIs do. */
  refuseStreamOptions?: boolean;
}

/** A scripted answer: text, reasoning_content, tool calls (their arguments streamed in `pieces` parts). */
export interface CompatReply {
  text?: string;
  reasoning?: string;
  calls?: { id: string; name: string; arguments: string }[];
  finish?: string;
}

export const COMPAT_TEXT = "Hello from a compatible upstream.";
export const COMPAT_REASONING = "Thinking it over.";

function pieces(text: string): string[] {
  const a = Math.ceil(text.length / 3);
  return [text.slice(0, a), text.slice(a, 2 * a), text.slice(2 * a)];
}

export function compatHandler(o: CompatOptions = {}) {
  const text = o.text ?? COMPAT_TEXT;
  const usage = o.usage ?? { prompt_tokens: 11, completion_tokens: 7 };
  const fullUsage = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
  return (_req: Request, rec: Recorded): Response => {
    const ok = o.auth ? o.auth(rec) : rec.headers.authorization === `Bearer ${o.key ?? "sk-compat"}`;
    if (!ok)
      return Response.json(
        {
          error: {
            message: "Incorrect API key provided.",
            type: "invalid_request_error",
            param: null,
            code: "invalid_api_key",
          },
        },
        { status: 401 },
      );
    const body = rec.body ?? {};
    const model = String(body.model ?? "");
    const path = rec.path;
    if (path.endsWith("/models"))
      return Response.json({ object: "list", data: [{ id: "compat-model", object: "model", owned_by: "upstream" }] });
    if (path.endsWith("/embeddings")) {
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      return Response.json({
        object: "list",
        model,
        data: inputs.map((_: unknown, index: number) => ({ object: "embedding", index, embedding: [0.25, 0.5] })),
        usage: { prompt_tokens: 5, total_tokens: 5 },
      });
    }
    if (path.endsWith("/rerank"))
      return Response.json({ id: "rr-1", results: [{ index: 0, relevance_score: 0.91 }], usage: { total_tokens: 9 } });
    if (path.endsWith("/images/generations"))
      return Response.json({ created: 1700000000, data: [{ url: "https://img.invalid/1.png" }] });
    if (!path.endsWith("/chat/completions"))
      return Response.json(
        { error: { message: `Invalid URL (POST ${path})`, type: "invalid_request_error", code: null } },
        { status: 404 },
      );
    if (o.refuseStreamOptions && body.stream_options) {
      return Response.json(
        {
          error: {
            message: "invalid request: stream_options is not supported",
            type: "invalid_request_error",
            code: null,
          },
        },
        { status: 400 },
      );
    }
    const base = { id: "chatcmpl-compat", created: 1700000000, model, x_provider: "compat" };
    if (o.reply) return scripted(o.reply(body), body, base, fullUsage);
    const reasoning = model.includes("reason") ? COMPAT_REASONING : "";
    const tool = Array.isArray(body.tools) && body.tools.length ? body.tools[0].function.name : null;
    if (!body.stream) {
      const message: Record<string, unknown> = tool
        ? {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1", type: "function", function: { name: tool, arguments: '{"city":"Paris"}' } }],
          }
        : { role: "assistant", content: text, ...(reasoning ? { reasoning_content: reasoning } : {}) };
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: tool ? "tool_calls" : "stop", logprobs: null }],
        usage: fullUsage,
      });
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const frames = [chunk({ role: "assistant", content: "" })];
    if (reasoning)
      frames.push(
        chunk({ reasoning_content: reasoning.slice(0, 8) }),
        chunk({ reasoning_content: reasoning.slice(8) }),
      );
    if (tool) {
      frames.push(
        chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: tool, arguments: "" } }] }),
      );
      frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }));
    } else for (const p of pieces(text)) frames.push(chunk({ content: p }));
    frames.push(chunk({}, tool ? "tool_calls" : "stop"));
    if (body.stream_options?.include_usage)
      frames.push(
        `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [], usage: fullUsage })}\n\n`,
      );
    frames.push("data: [DONE]\n\n");
    return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
  };
}

/** A scripted reply as a chat completion or chunk stream: the reasoning, the text and each call's arguments in
 * three pieces, usage last when asked for. */
function scripted(r: CompatReply, body: any, base: Record<string, unknown>, usage: Record<string, unknown>): Response {
  const calls = r.calls ?? [];
  const finish = r.finish ?? (calls.length ? "tool_calls" : "stop");
  if (!body.stream) {
    const message: Record<string, unknown> = { role: "assistant", content: r.text ?? null };
    if (r.reasoning) message.reasoning_content = r.reasoning;
    if (calls.length)
      message.tool_calls = calls.map((c) => ({
        id: c.id,
        type: "function",
        function: { name: c.name, arguments: c.arguments },
      }));
    return Response.json({
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
      usage,
    });
  }
  const chunk = (delta: Record<string, unknown>, f: string | null = null) =>
    `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: f }] })}\n\n`;
  const frames = [chunk({ role: "assistant", content: "" })];
  if (r.reasoning) for (const p of pieces(r.reasoning)) frames.push(chunk({ reasoning_content: p }));
  if (r.text) for (const p of pieces(r.text)) frames.push(chunk({ content: p }));
  calls.forEach((c, index) => {
    frames.push(
      chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] }),
    );
    for (const p of pieces(c.arguments))
      if (p) frames.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
  });
  frames.push(chunk({}, finish));
  if (body.stream_options?.include_usage)
    frames.push(`data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [], usage })}\n\n`);
  frames.push("data: [DONE]\n\n");
  return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
}

export function startCompatUpstream(o: CompatOptions = {}): MockUpstream {
  return serve(compatHandler(o));
}
