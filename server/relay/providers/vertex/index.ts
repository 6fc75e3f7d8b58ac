// Vertex AI (channel type 41): Claude and Gemini models in a Google Cloud project, authorised with an
// OAuth token minted from the service-account JSON stored as the channel key. The region comes from
// the channel's `other` field: a region name, or JSON {"default": "...", "<model>": "..."}.
import type { ProviderAdaptor, ProviderCall } from "../types.ts";
import { sendUpstream } from "../settings.ts";
import { AppError } from "../../../http/errors.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import {
  ClaudeStreamMapper,
  claudeErrorMessage,
  claudeModelHeaders,
  claudeRequestFor,
  claudeSend,
  parseClaudeResponse,
  withSystemMessagesInSystem,
} from "../claude/messages.ts";
import { GeminiStreamMapper, geminiBodyFor, geminiErrorMessage, parseGeminiResponse } from "../gemini/index.ts";
import { claudeGeneratedText } from "../../formats/claude/upstream.ts";
import { geminiGeneratedText } from "../../formats/gemini/upstream.ts";
import { perModel } from "../site.ts";
import { accessToken, parseServiceAccount } from "./auth.ts";

export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";
export const VERTEX_DEFAULT_REGION = "us-central1";

export const isClaudeModel = (model: string) => model.startsWith("claude");

/** Vertex names Claude snapshots "<name>@<date>"; the October 2024 Sonnet is "claude-3-5-sonnet-v2". */
export function vertexClaudeModel(model: string): string {
  if (model.includes("@")) return model;
  if (model === "claude-3-5-sonnet-20241022") return "claude-3-5-sonnet-v2@20241022";
  const m = /^(.*)-(\d{8})$/.exec(model);
  return m ? `${m[1]}@${m[2]}` : model;
}

export function vertexRegion(call: Pick<ProviderCall, "channel" | "options">, model: string): string {
  const fromOptions = call.options?.region;
  if (typeof fromOptions === "string" && fromOptions) return fromOptions;
  const other = (call.channel.other ?? "").trim();
  if (other.startsWith("{")) {
    try {
      return String(perModel(JSON.parse(other), model, VERTEX_DEFAULT_REGION));
    } catch {
      return VERTEX_DEFAULT_REGION;
    }
  }
  return other || VERTEX_DEFAULT_REGION;
}

export function vertexUrl(
  call: Pick<ProviderCall, "baseUrl" | "stream" | "channel" | "options">,
  project: string,
  model: string,
): string {
  const claude = isClaudeModel(model);
  const region = vertexRegion(call, model);
  const host =
    call.baseUrl
    || (region === "global" ? "https://aiplatform.googleapis.com" : `https://${region}-aiplatform.googleapis.com`);
  const publisher = claude ? "anthropic" : "google";
  // Model names keep their "@" (Vertex's own URLs show it literally); anything else odd is escaped.
  const name = claude ? vertexClaudeModel(model) : model;
  const method = claude
    ? call.stream
      ? ":streamRawPredict"
      : ":rawPredict"
    : call.stream
      ? ":streamGenerateContent?alt=sse"
      : ":generateContent";
  return `${host}/v1/projects/${encodeURIComponent(project)}/locations/${region}/publishers/${publisher}/models/${name.replace(/[^A-Za-z0-9._@-]/g, encodeURIComponent)}${method}`;
}

export const vertexAdaptor: ProviderAdaptor = {
  kind: "vertex",
  supports: (mode) => mode === "chat",
  nativeFormat: (call) => (isClaudeModel(call.upstreamModel) ? "claude" : "gemini"),
  async buildRequest(call, body) {
    let sa;
    try {
      sa = parseServiceAccount(call.key);
    } catch (e) {
      throw new AppError(500, (e as Error).message);
    }
    let out: Record<string, unknown>;
    let model: string;
    let extra: Record<string, string> = {};
    if (isClaudeModel(call.upstreamModel)) {
      out = { ...withSystemMessagesInSystem(claudeRequestFor(call, body)) };
      model = String(out.model ?? call.upstreamModel);
      delete out.model;
      out.anthropic_version = VERTEX_ANTHROPIC_VERSION;
      extra = claudeModelHeaders(call, model);
      if (call.stream) out.stream = true;
    } else {
      const g = await geminiBodyFor(call, body);
      model = g.model;
      out = g.body as Record<string, unknown>;
      // Vertex requires a role on every content; the Gemini API defaults it to "user".
      if (Array.isArray(out.contents))
        out.contents = (out.contents as any[]).map((c) => (c && !c.role ? { ...c, role: "user" } : c));
    }
    let token: string;
    try {
      token = await accessToken(sa);
    } catch (e) {
      throw new AppError(502, (e as Error).message);
    }
    return {
      url: vertexUrl(call, sa.project_id, model),
      headers: { ...extra, "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(out),
    };
  },
  send: (call, url, init) =>
    isClaudeModel(call.upstreamModel) ? claudeSend(call, url, init) : sendUpstream(call, url, init),
  parseResponse: (call, json) =>
    isClaudeModel(call.upstreamModel) ? parseClaudeResponse(call, json) : parseGeminiResponse(call, json),
  generatedText: (call, json) =>
    isClaudeModel(call.upstreamModel) ? claudeGeneratedText(json) : geminiGeneratedText(json),
  streamMapper: (call) =>
    isClaudeModel(call.upstreamModel) ? new ClaudeStreamMapper(call) : new GeminiStreamMapper(call),
  errorMessage: (status, text) => {
    const m = geminiErrorMessage(status, text);
    return m.startsWith("upstream answered") ? claudeErrorMessage(status, text) : m;
  },
  defaultModels: DEFAULT_CHANNEL_MODELS[41],
};
