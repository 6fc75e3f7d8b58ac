// A stand-in for Tencent Cloud's signed Hunyuan API (POST / with X-TC-Action ChatCompletions or
// GetEmbedding, version 2023-09-01): the TC3-HMAC-SHA256 signature is checked as Tencent Cloud does
// (canonical request over content-type and host, credential scope date/hunyuan/tc3_request). Errors are a
// 200 with {Response: {Error: {Code, Message}, RequestId}}; answers use Tencent's capitalised fields.
import { createHash, createHmac } from "node:crypto";
import { serve, type MockUpstream } from "./recorder.ts";

export const HUNYUAN_TEXT = "Hello from Hunyuan.";
export const HUNYUAN_USAGE = { PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18 };

function expectedAuth(
  rec: { headers: Record<string, string>; raw: string },
  secretId: string,
  secretKey: string,
): string {
  const ts = Number(rec.headers["x-tc-timestamp"]);
  const date = new Date(ts * 1000).toISOString().slice(0, 10);
  const hash = (s: string) => createHash("sha256").update(s).digest("hex");
  const canonical = `POST\n/\n\ncontent-type:${rec.headers["content-type"]}\nhost:${rec.headers.host}\n\ncontent-type;host\n${hash(rec.raw)}`;
  const scope = `${date}/hunyuan/tc3_request`;
  const toSign = `TC3-HMAC-SHA256\n${ts}\n${scope}\n${hash(canonical)}`;
  const h = (k: string | Buffer, m: string) => createHmac("sha256", k).update(m).digest();
  const sig = createHmac("sha256", h(h(h("TC3" + secretKey, date), "hunyuan"), "tc3_request"))
    .update(toSign)
    .digest("hex");
  return `TC3-HMAC-SHA256 Credential=${secretId}/${scope}, SignedHeaders=content-type;host, Signature=${sig}`;
}

export function startTencentUpstream(creds = { secretId: "AKIDtencent", secretKey: "tc-secret" }): MockUpstream {
  return serve((_req, rec) => {
    const fail = (Code: string, Message: string) =>
      Response.json({ Response: { Error: { Code, Message }, RequestId: "req-err" } });
    if (rec.path !== "/") return fail("InvalidAction", "the path must be /");
    if (rec.headers["x-tc-version"] !== "2023-09-01") return fail("InvalidParameter", "X-TC-Version is not valid");
    if (rec.headers.authorization !== expectedAuth(rec, creds.secretId, creds.secretKey))
      return fail(
        "AuthFailure.SignatureFailure",
        "The provided credentials could not be validated. Please check your signature is correct.",
      );
    const body = rec.body ?? {};
    if (rec.headers["x-tc-action"] === "GetEmbedding") {
      return Response.json({
        Response: {
          Data: (body.InputList ?? []).map((_: unknown, i: number) => ({
            Embedding: [0.5, 0.5],
            Index: i,
            Object: "embedding",
          })),
          Usage: { PromptTokens: 3, TotalTokens: 3 },
          RequestId: "req-emb",
        },
      });
    }
    if (rec.headers["x-tc-action"] !== "ChatCompletions") return fail("InvalidAction", "unknown action");
    if (!Array.isArray(body.Messages) || !body.Model)
      return fail("MissingParameter", "Model and Messages are required");
    if (!body.Stream) {
      return Response.json({
        Response: {
          Id: "hy-1",
          Created: 1700000000,
          Note: "以上内容为AI生成",
          Choices: [{ FinishReason: "stop", Message: { Role: "assistant", Content: HUNYUAN_TEXT } }],
          Usage: HUNYUAN_USAGE,
          RequestId: "req-1",
        },
      });
    }
    const parts = ["Hello", " from", " Hunyuan."];
    const frames = parts.map(
      (Content, i) =>
        `data: ${JSON.stringify({ Id: "hy-1", Created: 1700000000, Note: "以上内容为AI生成", Choices: [{ Delta: { Role: "assistant", Content }, FinishReason: i === parts.length - 1 ? "stop" : "" }], Usage: { PromptTokens: 11, CompletionTokens: i === parts.length - 1 ? 7 : i + 1, TotalTokens: 12 + i } })}\n\n`,
    );
    return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
  });
}
