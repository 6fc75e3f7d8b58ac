// AWS Bedrock Claude (channel type 33): Claude's Messages body on Bedrock's invoke endpoints, signed
// with SigV4. The channel key is "AccessKeyId|SecretAccessKey|region" (optionally "|SessionToken").
import { AwsV4Signer } from "aws4fetch";
import type { ProviderAdaptor, ProviderCall } from "../types.ts";
import { AppError } from "../../../http/errors.ts";
import {
  ClaudeStreamMapper,
  claudeErrorMessage,
  claudeModelHeaders,
  claudeRequestFor,
  claudeSend,
  parseClaudeResponse,
  withSystemMessagesInSystem,
} from "../claude/messages.ts";
import { claudeGeneratedText } from "../../formats/claude/upstream.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import { EventStreamDecoder } from "./eventstream.ts";
import { bedrockModelId } from "./models.ts";
import { withParamOverride } from "../../override.ts";

export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31";

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  sessionToken?: string;
}

export function parseAwsKey(key: string): AwsCredentials {
  const [accessKeyId, secretAccessKey, region, sessionToken] = key.split("|").map((s) => s.trim());
  if (!accessKeyId || !secretAccessKey || !region) {
    throw new AppError(500, "AWS channel key must have the form AccessKeyId|SecretAccessKey|region");
  }
  return { accessKeyId, secretAccessKey, region, sessionToken: sessionToken || undefined };
}

/** The runtime endpoint of the region, unless the channel names its own (VPC endpoint, test double). */
export function bedrockUrl(call: Pick<ProviderCall, "baseUrl" | "stream">, region: string, modelId: string): string {
  const base = call.baseUrl || `https://bedrock-runtime.${region}.amazonaws.com`;
  return `${base}/model/${encodeURIComponent(modelId)}/${call.stream ? "invoke-with-response-stream" : "invoke"}`;
}

/** Bedrock takes the Messages body without model and stream, with its own anthropic_version. */
export function bedrockBody(call: ProviderCall, body: any): { model: string; body: Record<string, unknown> } {
  const req: Record<string, unknown> = { ...withSystemMessagesInSystem(claudeRequestFor(call, body)) };
  const model = String(req.model ?? call.upstreamModel);
  delete req.model;
  delete req.stream;
  delete req.metadata;
  req.anthropic_version = BEDROCK_ANTHROPIC_VERSION;
  // Bedrock takes beta flags in the body rather than as the anthropic-beta header.
  const beta = claudeModelHeaders(call, model)["anthropic-beta"];
  if (beta) req.anthropic_beta = beta.split(",");
  return { model, body: req };
}

/** Re-frames Bedrock's binary stream as the Claude SSE events it wraps, so the Claude mapper reads it. */
export function eventStreamToSse(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const decoder = new EventStreamDecoder();
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        for (const msg of decoder.push(chunk)) {
          const type = msg.headers[":message-type"];
          const payload = dec.decode(msg.payload);
          if (type === "event" && msg.headers[":event-type"] === "chunk") {
            const inner = JSON.parse(payload)?.bytes;
            if (typeof inner !== "string") continue;
            const json = Buffer.from(inner, "base64").toString("utf8");
            const evType = JSON.parse(json)?.type ?? "message";
            controller.enqueue(enc.encode(`event: ${evType}\ndata: ${json}\n\n`));
          } else if (type === "exception" || type === "error") {
            let message = "upstream stream error";
            try {
              message = JSON.parse(payload)?.message ?? message;
            } catch {}
            const kind = String(msg.headers[":exception-type"] ?? msg.headers[":error-code"] ?? "api_error");
            const ev = { type: "error", error: { type: kind, message } };
            controller.enqueue(enc.encode(`event: error\ndata: ${JSON.stringify(ev)}\n\n`));
          }
        }
      },
    }),
  );
}

export const awsAdaptor: ProviderAdaptor = {
  kind: "aws",
  supports: (mode) => mode === "chat",
  nativeFormat: () => "claude",
  appliesParamOverride: true,
  async buildRequest(call, body) {
    const creds = parseAwsKey(call.key);
    const { model, body: out } = bedrockBody(call, body);
    const url = bedrockUrl(call, creds.region, bedrockModelId(model, creds.region));
    const signed = await new AwsV4Signer({
      method: "POST",
      url,
      body: JSON.stringify(withParamOverride(out, call.paramOverride)),
      service: "bedrock",
      region: creds.region,
      accessKeyId: creds.accessKeyId,
      secretAccessKey: creds.secretAccessKey,
      sessionToken: creds.sessionToken,
      headers: {
        "content-type": "application/json",
        accept: call.stream ? "application/vnd.amazon.eventstream" : "application/json",
      },
    }).sign();
    const headers: Record<string, string> = {};
    signed.headers.forEach((v, k) => (headers[k] = v));
    return { url: signed.url.toString(), headers, body: signed.body as string };
  },
  send: claudeSend,
  decodeStream: (_call, body) => eventStreamToSse(body),
  parseResponse: parseClaudeResponse,
  generatedText: (_call, json) => claudeGeneratedText(json),
  streamMapper: (call) => new ClaudeStreamMapper(call),
  errorMessage: claudeErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[33],
};
