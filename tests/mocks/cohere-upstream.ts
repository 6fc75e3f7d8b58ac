// A stand-in for Cohere's v2 API: /v2/chat (answers and the typed stream events message-start,
// content-*, tool-plan-delta, tool-call-*, message-end with usage), /v2/embed, /v2/rerank and /v1/models.
// Errors are {"id", "message"} with the HTTP status, as Cohere answers; unknown fields such as
// stream_options are refused with 400.
import { serve, type MockUpstream } from "./recorder.ts";

export const COHERE_TEXT = "Hello from Command.";
export const COHERE_USAGE = {
  billed_units: { input_tokens: 11, output_tokens: 7 },
  tokens: { input_tokens: 180, output_tokens: 7 },
};
const CHAT_FIELDS = new Set([
  "model",
  "messages",
  "stream",
  "tools",
  "tool_choice",
  "max_tokens",
  "temperature",
  "p",
  "k",
  "seed",
  "frequency_penalty",
  "presence_penalty",
  "stop_sequences",
  "response_format",
  "documents",
  "safety_mode",
]);

const sse = (type: string, obj: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...obj })}\n\n`;

export function startCohereUpstream(key = "co-key"): MockUpstream {
  return serve((_req, rec) => {
    if (rec.headers.authorization !== `Bearer ${key}`)
      return Response.json({ id: "err-1", message: "invalid api token" }, { status: 401 });
    const body = rec.body ?? {};
    if (rec.path === "/v1/models") return Response.json({ models: [{ name: "command-r", endpoints: ["chat"] }] });
    if (rec.path === "/v2/embed") {
      if (!Array.isArray(body.texts) || !body.input_type)
        return Response.json(
          { id: "err-2", message: "invalid request: texts and input_type are required" },
          { status: 400 },
        );
      return Response.json({
        id: "emb-1",
        embeddings: { float: body.texts.map(() => [0.1, 0.2]) },
        texts: body.texts,
        meta: { billed_units: { input_tokens: 3 } },
      });
    }
    if (rec.path === "/v2/rerank") {
      if (typeof body.query !== "string" || !Array.isArray(body.documents))
        return Response.json(
          { id: "err-3", message: "invalid request: query and documents are required" },
          { status: 400 },
        );
      return Response.json({
        id: "rr-1",
        results: body.documents
          .map((_: unknown, index: number) => ({ index, relevance_score: 0.9 - index * 0.1 }))
          .slice(0, body.top_n ?? body.documents.length),
        meta: { billed_units: { search_units: 1 } },
      });
    }
    if (rec.path !== "/v2/chat") return Response.json({ id: "err-4", message: "not found" }, { status: 404 });
    const unknown = Object.keys(body).find((k) => !CHAT_FIELDS.has(k));
    if (unknown)
      return Response.json(
        { id: "err-5", message: `invalid request: unknown field: parameter ${unknown} is not a valid field` },
        { status: 400 },
      );
    const tool = Array.isArray(body.tools) && body.tools.length ? body.tools[0].function.name : null;
    if (!body.stream) {
      const message: Record<string, unknown> = tool
        ? {
            role: "assistant",
            tool_plan: "I will look it up.",
            tool_calls: [{ id: "tc_1", type: "function", function: { name: tool, arguments: '{"city":"Paris"}' } }],
          }
        : { role: "assistant", content: [{ type: "text", text: COHERE_TEXT }] };
      return Response.json({
        id: "chat-1",
        message,
        finish_reason: tool ? "TOOL_CALL" : "COMPLETE",
        usage: COHERE_USAGE,
      });
    }
    const frames = [
      sse("message-start", {
        id: "chat-1",
        delta: { message: { role: "assistant", content: [], tool_plan: "", tool_calls: [], citations: [] } },
      }),
    ];
    if (tool) {
      frames.push(sse("tool-plan-delta", { delta: { message: { tool_plan: "I will look it up." } } }));
      frames.push(
        sse("tool-call-start", {
          index: 0,
          delta: { message: { tool_calls: { id: "tc_1", type: "function", function: { name: tool, arguments: "" } } } },
        }),
      );
      frames.push(
        sse("tool-call-delta", {
          index: 0,
          delta: { message: { tool_calls: { function: { arguments: '{"city":"Paris"}' } } } },
        }),
      );
      frames.push(sse("tool-call-end", { index: 0 }));
    } else {
      frames.push(sse("content-start", { index: 0, delta: { message: { content: { type: "text", text: "" } } } }));
      for (const t of ["Hello", " from", " Command."])
        frames.push(sse("content-delta", { index: 0, delta: { message: { content: { text: t } } } }));
      frames.push(sse("content-end", { index: 0 }));
    }
    frames.push(sse("message-end", { delta: { finish_reason: tool ? "TOOL_CALL" : "COMPLETE", usage: COHERE_USAGE } }));
    return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
  });
}
