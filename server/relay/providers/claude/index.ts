// Anthropic Claude (channel type 14): the Messages API with an x-api-key.
import type { ProviderAdaptor, ProviderCall } from "../types.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import {
  ANTHROPIC_VERSION,
  ClaudeStreamMapper,
  claudeErrorMessage,
  claudeModelHeaders,
  claudeRequestFor,
  claudeSend,
  parseClaudeResponse,
} from "./messages.ts";
import { claudeGeneratedText } from "../../formats/claude/upstream.ts";
import { jsonText } from "../../formats/client-json.ts";

/** A base URL given with its /v1 suffix still gets exactly one /v1. */
export function messagesUrl(baseUrl: string): string {
  return (/\/v1$/.test(baseUrl) ? baseUrl : baseUrl + "/v1") + "/messages";
}

/** Anthropic's beta SDK calls /v1/messages?beta=true: a Claude client's query goes upstream with it. */
function betaQuery(call: ProviderCall): string {
  return call.format === "claude" && call.search && new URLSearchParams(call.search).get("beta") === "true"
    ? "?beta=true"
    : "";
}

export const claudeAdaptor: ProviderAdaptor = {
  kind: "claude",
  supports: (mode) => mode === "chat",
  nativeFormat: () => "claude",
  buildRequest(call, body) {
    const req = claudeRequestFor(call, body);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-api-key": call.key,
      // A Claude client's own version, where it sent one (relay/forward.ts), else the one this adaptor is written for.
      "anthropic-version": call.clientHeaders?.["anthropic-version"] ?? ANTHROPIC_VERSION,
      ...claudeModelHeaders(call, req.model),
    };
    return { url: messagesUrl(call.baseUrl) + betaQuery(call), headers, body: jsonText(call.json, req) };
  },
  send: claudeSend,
  parseResponse: parseClaudeResponse,
  generatedText: (_call, json) => claudeGeneratedText(json),
  streamMapper: (call) => new ClaudeStreamMapper(call),
  errorMessage: claudeErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[14],
  async fetchModels(baseUrl, key) {
    const res = await fetch((/\/v1$/.test(baseUrl) ? baseUrl : baseUrl + "/v1") + "/models?limit=1000", {
      headers: { "x-api-key": key, "anthropic-version": ANTHROPIC_VERSION },
    });
    if (!res.ok) throw new Error(`the upstream model list answered ${res.status}`);
    const j: any = await res.json();
    return (Array.isArray(j?.data) ? j.data : []).map((m: any) => String(m.id)).filter(Boolean);
  },
};
