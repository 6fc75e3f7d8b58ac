// A stand-in for AI Proxy's knowledge base API (POST /api/library/ask, a bearer key): an answer with the
// documents it drew on, streamed as {content, finish, model, documents} frames; an unknown library is
// {success: false, errCode, message}. /api/report/getUserOverview (Api-Key header) is the account balance.
import { serve, type MockUpstream } from "./recorder.ts";

export const AIPROXY_TEXT = "Hello from the library.";
export const AIPROXY_DOCS = [{ title: "Guide", url: "https://docs.invalid/guide" }];

export function startAiproxyUpstream(key = "ap-key", library = "lib-1"): MockUpstream {
  return serve((_req, rec) => {
    if (rec.path === "/api/report/getUserOverview") {
      if (rec.headers["api-key"] !== key)
        return Response.json({ success: false, message: "invalid key", error_code: 401 });
      return Response.json({ success: true, message: "", error_code: 0, data: { totalPoints: 42.5 } });
    }
    if (rec.headers.authorization !== `Bearer ${key}`)
      return Response.json({ success: false, errCode: 401, message: "invalid api key" }, { status: 401 });
    if (rec.path !== "/api/library/ask")
      return Response.json({ success: false, errCode: 404, message: "not found" }, { status: 404 });
    const body = rec.body ?? {};
    if (body.libraryId !== library)
      return Response.json({ success: false, errCode: 10004, message: "library not found" });
    if (typeof body.query !== "string" || !body.query)
      return Response.json({ success: false, errCode: 10001, message: "query is required" });
    if (!body.stream) return Response.json({ success: true, answer: AIPROXY_TEXT, documents: AIPROXY_DOCS });
    const frames = ["Hello", " from", " the library."].map(
      (content) => `data: ${JSON.stringify({ content, finish: false, model: body.model })}\n\n`,
    );
    frames.push(
      `data: ${JSON.stringify({ content: "", finish: true, model: body.model, documents: AIPROXY_DOCS })}\n\n`,
    );
    return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
  });
}
