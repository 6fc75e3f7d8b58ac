// A stand-in for Azure OpenAI: deployment URLs, the api-key header and a required api-version query.
import { serve, sseResponse, type MockUpstream } from "./recorder.ts";

export const AZURE_TEXT = "Hello from Azure.";

export function startAzureUpstream(opts: { key?: string; deployments?: string[] } = {}): MockUpstream {
  const key = opts.key ?? "azure-key";
  const deployments = new Set(opts.deployments ?? ["gpt-4o", "gpt-35-turbo", "text-embedding-3-small"]);
  return serve((req, rec) => {
    if (rec.headers["api-key"] !== key) {
      return Response.json({ error: { code: "401", message: "Access denied due to invalid subscription key or wrong API endpoint." } }, { status: 401 });
    }
    if (!new URLSearchParams(rec.search).get("api-version")) {
      return Response.json({ error: { code: "404", message: "Resource not found" } }, { status: 404 });
    }
    const m = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(rec.path);
    if (!m) return Response.json({ error: { code: "404", message: "Resource not found" } }, { status: 404 });
    const dep = decodeURIComponent(m[1]!);
    if (!deployments.has(dep)) return Response.json({ error: { code: "DeploymentNotFound", message: `The API deployment for this resource does not exist.` } }, { status: 404 });
    if (m[2] === "embeddings") {
      return Response.json({ object: "list", data: [{ object: "embedding", index: 0, embedding: [0.5, 0.25] }], model: dep, usage: { prompt_tokens: 4, total_tokens: 4 } });
    }
    const usage = { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 };
    if (rec.body?.stream) {
      const base = { id: "chatcmpl-az", object: "chat.completion.chunk", created: 1, model: "gpt-4o-2024-08-06" };
      const frames = [
        { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: { content: AZURE_TEXT }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
      ].map((f) => `data: ${JSON.stringify(f)}\n\n`);
      if (rec.body.stream_options?.include_usage) frames.push(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
      frames.push("data: [DONE]\n\n");
      return sseResponse(frames);
    }
    return Response.json({
      id: "chatcmpl-az", object: "chat.completion", created: 1, model: "gpt-4o-2024-08-06",
      choices: [{ index: 0, message: { role: "assistant", content: AZURE_TEXT }, finish_reason: "stop" }], usage,
    });
  });
}
