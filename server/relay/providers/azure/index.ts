// Azure OpenAI (channel type 3): OpenAI's wire format behind deployment URLs, an `api-key` header and
// an api-version query parameter taken from the channel's `other` field.
import type { ProviderAdaptor, ProviderCall } from "../types.ts";
import { chatBody, openaiAdaptor } from "../openai/index.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import { azureRealtime } from "./realtime.ts";
import { jsonText } from "../../formats/client-json.ts";

/** Used when the channel does not name an API version. */
export const AZURE_DEFAULT_API_VERSION = "2024-10-21";

const PATHS: Record<string, string> = {
  chat: "/chat/completions",
  completions: "/completions",
  embeddings: "/embeddings",
  images: "/images/generations",
  image_edits: "/images/edits",
  audio_speech: "/audio/speech",
  audio_transcription: "/audio/transcriptions",
  audio_translation: "/audio/translations",
};

/**
 * Deployment names cannot contain dots, and Azure dropped the dated snapshot suffixes of the first
 * GPT models: "gpt-3.5-turbo-0613" is deployed as "gpt-35-turbo" (the one-api convention operators know).
 */
export function deploymentName(model: string): string {
  let name = model.replace(/\./g, "");
  for (const suffix of ["-0301", "-0314", "-0613"]) if (name.endsWith(suffix)) name = name.slice(0, -suffix.length);
  return name;
}

export function azureApiVersion(call: Pick<ProviderCall, "channel" | "options">): string {
  const fromOptions = call.options?.api_version ?? call.options?.apiVersion;
  if (typeof fromOptions === "string" && fromOptions.trim()) return fromOptions.trim();
  const other = (call.channel.other ?? "").trim();
  // `other` is the bare version string for Azure channels (one-api layout); tolerate a JSON object too.
  if (other.startsWith("{")) {
    try {
      const v = JSON.parse(other).api_version;
      if (typeof v === "string" && v) return v;
    } catch {}
    return AZURE_DEFAULT_API_VERSION;
  }
  return other || AZURE_DEFAULT_API_VERSION;
}

/**
 * Azure serves the Responses API from API version 2025-03-01-preview on, and in its v1 API ("v1" or
 * "preview" as the channel's version); under older versions the gateway answers it through the deployment's
 * chat completions.
 */
export function azureServesResponses(call: Pick<ProviderCall, "channel" | "options">): boolean {
  const v = azureApiVersion(call);
  return v === "v1" || v === "preview" || v.slice(0, 10) >= "2025-03-01";
}

export function azureUrl(call: ProviderCall): string {
  const raw = azureApiVersion(call);
  const version = encodeURIComponent(raw);
  const base = call.baseUrl.replace(/\/openai$/, "");
  if (call.mode === "responses") {
    return raw === "v1" || raw === "preview"
      ? `${base}/openai/v1/responses${raw === "preview" ? "?api-version=preview" : ""}`
      : `${base}/openai/responses?api-version=${version}`;
  }
  const path = PATHS[call.mode] ?? PATHS.chat;
  return `${base}/openai/deployments/${encodeURIComponent(deploymentName(call.upstreamModel))}${path}?api-version=${version}`;
}

export const azureAdaptor: ProviderAdaptor = {
  kind: "azure",
  supports: (mode) => mode in PATHS || mode === "responses",
  nativeFormat: () => "openai",
  nativeResponses: azureServesResponses,
  realtime: (call) => azureRealtime(call),
  buildRequest(call, body) {
    const headers: Record<string, string> = { "api-key": call.key };
    if (body instanceof FormData) return { url: azureUrl(call), headers, body };
    headers["content-type"] = "application/json";
    return { url: azureUrl(call), headers, body: jsonText(call.json, chatBody(call, body)) };
  },
  parseResponse: openaiAdaptor.parseResponse,
  passThroughJson: openaiAdaptor.passThroughJson,
  streamMapper: openaiAdaptor.streamMapper,
  errorMessage: openaiAdaptor.errorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[3],
  async fetchModels(baseUrl, key, channel) {
    const version = channel ? azureApiVersion({ channel, options: {} }) : AZURE_DEFAULT_API_VERSION;
    const res = await fetch(
      `${baseUrl.replace(/\/openai$/, "")}/openai/models?api-version=${encodeURIComponent(version)}`,
      { headers: { "api-key": key } },
    );
    if (!res.ok) throw new Error(`the upstream model list answered ${res.status}`);
    const j: any = await res.json();
    return (Array.isArray(j?.data) ? j.data : []).map((m: any) => String(m.id)).filter(Boolean);
  },
};
