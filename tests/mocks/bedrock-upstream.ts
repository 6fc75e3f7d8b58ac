// A stand-in for Bedrock runtime: /model/{modelId}/invoke and /invoke-with-response-stream. It checks
// the SigV4 signature by recomputing it with the shared secret (a wrong secret, region, service or a
// body changed after signing fails with 403), validates the Bedrock flavour of the Messages body, and
// streams the Claude events wrapped in AWS event-stream frames ({"bytes": base64}).
import { AwsV4Signer } from "aws4fetch";
import { encodeEventStreamMessage } from "../../server/relay/providers/aws/eventstream.ts";
import { serve, type MockUpstream } from "./recorder.ts";
import { claudeEvents, claudeReply, claudeRequestProblem } from "./claude-upstream.ts";

export interface BedrockCreds {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

function chunkFrame(ev: object): Uint8Array {
  const bytes = Buffer.from(JSON.stringify(ev)).toString("base64");
  return encodeEventStreamMessage(
    { ":event-type": "chunk", ":content-type": "application/json", ":message-type": "event" },
    JSON.stringify({ bytes, p: "abcdefgh" }),
  );
}

export function bedrockStream(events: object[], opts: { splitEvery?: number; exceptionAfter?: number } = {}): Response {
  const frames: Uint8Array[] = [];
  events.forEach((ev, i) => {
    if (opts.exceptionAfter !== undefined && i === opts.exceptionAfter) {
      frames.push(
        encodeEventStreamMessage(
          {
            ":exception-type": "throttlingException",
            ":content-type": "application/json",
            ":message-type": "exception",
          },
          JSON.stringify({ message: "Too many requests, please wait before trying again." }),
        ),
      );
    } else if (opts.exceptionAfter === undefined || i < opts.exceptionAfter) frames.push(chunkFrame(ev));
  });
  const all = Buffer.concat(frames);
  const step = opts.splitEvery ?? 37; // deliberately cut frames across network chunks
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < all.length; i += step) c.enqueue(new Uint8Array(all.subarray(i, i + step)));
      c.close();
    },
  });
  return new Response(stream, {
    headers: {
      "content-type": "application/vnd.amazon.eventstream",
      "x-amzn-bedrock-content-type": "application/json",
    },
  });
}

export function startBedrockUpstream(creds: BedrockCreds): MockUpstream {
  return serve(async (req, rec) => {
    const auth = rec.headers.authorization ?? "";
    const date = rec.headers["x-amz-date"] ?? "";
    const signedHeaders = /SignedHeaders=([^,]+)/.exec(auth)?.[1]?.split(";") ?? [];
    const headers: Record<string, string> = {};
    for (const h of signedHeaders) if (h !== "host" && rec.headers[h] !== undefined) headers[h] = rec.headers[h]!;
    const expected = await new AwsV4Signer({
      method: rec.method,
      url: req.url,
      headers,
      body: rec.raw,
      service: "bedrock",
      region: creds.region,
      accessKeyId: creds.accessKeyId,
      secretAccessKey: creds.secretAccessKey,
      datetime: date,
    }).sign();
    if (!auth || expected.headers.get("authorization") !== auth) {
      return Response.json(
        { message: "The request signature we calculated does not match the signature you provided." },
        { status: 403 },
      );
    }
    const m = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/.exec(rec.path);
    if (!m) return Response.json({ message: "Unknown operation" }, { status: 404 });
    const modelId = decodeURIComponent(m[1]!);
    const body = rec.body;
    if (body?.model !== undefined)
      return Response.json(
        {
          message:
            "Malformed input request: extraneous key [model] is not permitted, please reformat your input and try again.",
        },
        { status: 400 },
      );
    if (body?.stream !== undefined)
      return Response.json(
        {
          message:
            "Malformed input request: extraneous key [stream] is not permitted, please reformat your input and try again.",
        },
        { status: 400 },
      );
    if (body?.anthropic_version !== "bedrock-2023-05-31")
      return Response.json({ message: "Malformed input request: anthropic_version is required" }, { status: 400 });
    const problem = claudeRequestProblem(body, false, false);
    if (problem) return Response.json({ message: `Malformed input request: ${problem}` }, { status: 400 });
    if (m[2] === "invoke") return Response.json(claudeReply(body, modelId));
    return bedrockStream(claudeEvents(body, modelId), { exceptionAfter: modelId.includes("throttle") ? 3 : undefined });
  });
}
