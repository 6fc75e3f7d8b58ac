// OpenAI's Realtime API: a websocket at /v1/realtime?model=, authorised with the bearer key. The client's
// OpenAI-Beta choice (the beta interface, realtime=v1) is passed on: beta and GA sessions speak different events.
import type { ProviderCall, RealtimeTarget } from "../types.ts";

/** http(s) base URL → ws(s). */
export function wsBase(baseUrl: string): string {
  return baseUrl.replace(/^http/i, "ws");
}

export function openaiRealtime(call: ProviderCall): RealtimeTarget {
  const base = wsBase(call.baseUrl);
  const path = /\/v\d+$/.test(base) ? "/realtime" : "/v1/realtime";
  const headers: Record<string, string> = { authorization: `Bearer ${call.key}` };
  const beta = call.clientHeaders?.["openai-beta"];
  if (beta) headers["openai-beta"] = beta;
  return { url: `${base}${path}?model=${encodeURIComponent(call.upstreamModel)}`, headers };
}
