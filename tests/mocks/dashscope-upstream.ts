// A stand-in for Alibaba Cloud DashScope: the OpenAI-compatible mode (/compatible-mode/v1/…) and the native
// services the compatible mode lacks — text-rerank, text2image image-synthesis as an async task (needs
// X-DashScope-Async: enable; GET /api/v1/tasks/{id} is RUNNING once, then SUCCEEDED) and qwen-tts, whose
// answer links an audio file. Errors are {code, message, request_id} with the HTTP status.
import { serve, type MockUpstream } from "./recorder.ts";
import { compatHandler } from "./openai-compatible-upstream.ts";

export const QWEN_TEXT = "Hello from Qwen.";
export const WAV_BYTES = new Uint8Array([82, 73, 70, 70, 36, 0, 0, 0, 87, 65, 86, 69]);

export function startDashscopeUpstream(key = "sk-dashscope"): MockUpstream {
  const polls = new Map<string, number>();
  const compat = compatHandler({ key, text: QWEN_TEXT });
  const err = (status: number, code: string, message: string) =>
    Response.json({ code, message, request_id: "req-err" }, { status });
  const mock = serve((req, rec) => {
    if (rec.path === "/files/speech.wav") return new Response(WAV_BYTES, { headers: { "content-type": "audio/wav" } });
    if (rec.path.startsWith("/compatible-mode/v1/")) return compat(req, rec);
    if (rec.headers.authorization !== `Bearer ${key}`) return err(401, "InvalidApiKey", "Invalid API-key provided.");
    const body = rec.body ?? {};
    if (rec.path === "/api/v1/services/rerank/text-rerank/text-rerank") {
      if (typeof body.input?.query !== "string" || !Array.isArray(body.input?.documents))
        return err(400, "InvalidParameter", "input.query and input.documents are required");
      const results = body.input.documents.map((d: string, index: number) => ({
        index,
        relevance_score: 0.8 - index * 0.1,
        ...(body.parameters?.return_documents ? { document: { text: d } } : {}),
      }));
      return Response.json({ output: { results }, usage: { total_tokens: 14 }, request_id: "req-rr" });
    }
    if (rec.path === "/api/v1/services/aigc/text2image/image-synthesis") {
      if (rec.headers["x-dashscope-async"] !== "enable")
        return err(403, "AccessDenied", "current user api does not support synchronous calls");
      if (typeof body.input?.prompt !== "string") return err(400, "InvalidParameter", "input.prompt is required");
      const id = `task-${polls.size + 1}`;
      polls.set(id, 0);
      return Response.json({ output: { task_status: "PENDING", task_id: id }, request_id: "req-img" });
    }
    const task = /^\/api\/v1\/tasks\/([^/]+)$/.exec(rec.path);
    if (task && req.method === "GET") {
      const id = task[1]!;
      if (!polls.has(id)) return err(404, "NotFound", "task not found");
      const n = polls.get(id)! + 1;
      polls.set(id, n);
      if (n < 2) return Response.json({ output: { task_id: id, task_status: "RUNNING" }, request_id: "req-poll" });
      return Response.json({
        output: {
          task_id: id,
          task_status: "SUCCEEDED",
          results: [{ url: `${mock.url}/files/image-1.png` }],
          task_metrics: { TOTAL: 1, SUCCEEDED: 1, FAILED: 0 },
        },
        usage: { image_count: 1 },
        request_id: "req-done",
      });
    }
    if (rec.path === "/api/v1/services/aigc/multimodal-generation/generation") {
      if (typeof body.input?.text !== "string" || !body.input.voice)
        return err(400, "InvalidParameter", "input.text and input.voice are required");
      return Response.json({
        output: {
          audio: { url: `${mock.url}/files/speech.wav`, expires_at: 1700086400, id: "audio-1" },
          finish_reason: "stop",
        },
        usage: { input_tokens: 6, output_tokens: 40, characters: 12 },
        request_id: "req-tts",
      });
    }
    return err(404, "NotFound", `no such API: ${rec.path}`);
  });
  return mock;
}
