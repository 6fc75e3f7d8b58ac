// A stand-in for Azure OpenAI: deployment URLs, the api-key header and a required api-version query. Chat
// answers tools, response_format, reasoning_effort and n as the OpenAI mock does; the Responses API exists
// only from api-version 2025-03-01-preview on (and in the v1 API), as on Azure.
import { serve, sseResponse, type MockUpstream } from "./recorder.ts";
import { REASONING, chatProblem, jsonAnswer, responsesAnswer } from "./openai-upstream.ts";

export const AZURE_TEXT = "Hello from Azure.";

export function startAzureUpstream(opts: { key?: string; deployments?: string[] } = {}): MockUpstream {
  const key = opts.key ?? "azure-key";
  const deployments = new Set(opts.deployments ?? ["gpt-4o", "gpt-35-turbo", "text-embedding-3-small"]);
  return serve((req, rec) => {
    if (rec.headers["api-key"] !== key) {
      return Response.json(
        { error: { code: "401", message: "Access denied due to invalid subscription key or wrong API endpoint." } },
        { status: 401 },
      );
    }
    const version = new URLSearchParams(rec.search).get("api-version") ?? "";
    if (rec.path === "/openai/v1/responses" || (rec.path === "/openai/responses" && version >= "2025-03-01"))
      return responsesAnswer(rec.body, rec.body?.model ?? "");
    if (!version) return Response.json({ error: { code: "404", message: "Resource not found" } }, { status: 404 });
    const m = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings|images\/edits)$/.exec(rec.path);
    if (!m) return Response.json({ error: { code: "404", message: "Resource not found" } }, { status: 404 });
    const dep = decodeURIComponent(m[1]!);
    if (!deployments.has(dep))
      return Response.json(
        { error: { code: "DeploymentNotFound", message: `The API deployment for this resource does not exist.` } },
        { status: 404 },
      );
    if (m[2] === "images/edits") {
      if (!String(rec.headers["content-type"] ?? "").startsWith("multipart/form-data"))
        return Response.json({ error: { code: "BadRequest", message: "multipart expected" } }, { status: 400 });
      return Response.json({
        created: 1,
        data: [{ b64_json: Buffer.from(`azure edited for ${dep}`).toString("base64") }],
      });
    }
    if (m[2] === "embeddings") {
      const inputs: unknown[] = Array.isArray(rec.body?.input) ? rec.body.input : [rec.body?.input];
      return Response.json({
        object: "list",
        data: inputs.map((_, index) => ({ object: "embedding", index, embedding: [0.5, 0.25] })),
        model: dep,
        usage: { prompt_tokens: 4, total_tokens: 4 },
      });
    }
    const usage = { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 };
    const problem = chatProblem(rec.body);
    if (problem) return Response.json({ error: { code: "BadRequest", message: problem } }, { status: 400 });
    const tool =
      Array.isArray(rec.body?.tools) && rec.body.tools.length && rec.body.tool_choice !== "none"
        ? rec.body.tools[0].function.name
        : null;
    const text = jsonAnswer(rec.body) ?? AZURE_TEXT;
    const n = Math.max(1, Number(rec.body?.n) || 1);
    if (rec.body?.stream && (tool || n > 1 || rec.body.reasoning_effort || text !== AZURE_TEXT)) {
      const base = { id: "chatcmpl-az", object: "chat.completion.chunk", created: 1, model: "gpt-4o-2024-08-06" };
      const all = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({ ...base, choices: Array.from({ length: n }, (_, index) => ({ index, delta, finish_reason: finish })) })}\n\n`;
      const frames = [all({ role: "assistant", content: "" })];
      if (rec.body.reasoning_effort) frames.push(all({ reasoning_content: REASONING }));
      if (tool)
        frames.push(
          all({
            tool_calls: [
              { index: 0, id: "call_az", type: "function", function: { name: tool, arguments: '{"city":"Paris"}' } },
            ],
          }),
          all({}, "tool_calls"),
        );
      else frames.push(all({ content: text }), all({}, "stop"));
      if (rec.body.stream_options?.include_usage)
        frames.push(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
      frames.push("data: [DONE]\n\n");
      return sseResponse(frames);
    }
    if (!rec.body?.stream && (tool || n > 1 || rec.body?.reasoning_effort || text !== AZURE_TEXT)) {
      const message: Record<string, unknown> = tool
        ? {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_az", type: "function", function: { name: tool, arguments: '{"city":"Paris"}' } }],
          }
        : { role: "assistant", content: text };
      if (rec.body?.reasoning_effort) message.reasoning_content = REASONING;
      return Response.json({
        id: "chatcmpl-az",
        object: "chat.completion",
        created: 1,
        model: "gpt-4o-2024-08-06",
        usage,
        choices: Array.from({ length: n }, (_, index) => ({
          index,
          message,
          finish_reason: tool ? "tool_calls" : "stop",
        })),
      });
    }
    if (rec.body?.stream) {
      const base = { id: "chatcmpl-az", object: "chat.completion.chunk", created: 1, model: "gpt-4o-2024-08-06" };
      const frames = [
        { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: { content: AZURE_TEXT }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
      ].map((f) => `data: ${JSON.stringify(f)}\n\n`);
      if (rec.body.stream_options?.include_usage)
        frames.push(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
      frames.push("data: [DONE]\n\n");
      return sseResponse(frames);
    }
    return Response.json({
      id: "chatcmpl-az",
      object: "chat.completion",
      created: 1,
      model: "gpt-4o-2024-08-06",
      choices: [{ index: 0, message: { role: "assistant", content: AZURE_TEXT }, finish_reason: "stop" }],
      usage,
    });
  });
}
