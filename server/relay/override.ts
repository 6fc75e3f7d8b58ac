// A channel's param_override is merged (shallowly) into the body that goes upstream, after any format
// conversion, so its keys reach the upstream in the upstream's own wire format (Claude's top_k, Gemini's
// cachedContent, ...) whatever format the client spoke. An adaptor that signs its body cannot be
// edited afterwards; it declares appliesParamOverride and merges call.paramOverride itself.
import type { ProviderAdaptor, ProviderCall, UpstreamRequest } from "./providers/types.ts";

export type ParamOverride = Record<string, unknown>;

/** The object with the override's keys on top (the object itself when there is none). */
export function withParamOverride<T extends object>(body: T, override: ParamOverride | null | undefined): T {
  return override ? { ...body, ...override } : body;
}

/** The built request with call.paramOverride merged into its JSON body; other bodies stay as they are. */
export function applyParamOverride(adaptor: ProviderAdaptor, call: ProviderCall, up: UpstreamRequest): UpstreamRequest {
  const override = call.paramOverride;
  if (!override || adaptor.appliesParamOverride || typeof up.body !== "string") return up;
  let body: unknown;
  try {
    body = JSON.parse(up.body);
  } catch {
    return up;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return up;
  return { ...up, body: JSON.stringify(withParamOverride(body, override)) };
}
