// Options of the relay's routing beyond one-api/new-api: fallbacks across models and the way a
// channel is chosen inside a priority tier. Read by server/relay/core/fallback.ts and server/relay/select.ts.
import { badRequest } from "../../http/errors.ts";

export const CHANNEL_SELECTION_STRATEGIES = ["weighted", "latency"] as const;

export const ROUTING_OPTION_DEFAULTS: Record<string, string> = {
  /** {"gpt-4o": ["gpt-4o-mini", "claude-3-5-sonnet"]}: where a call for a model goes when the model cannot serve it */
  ModelFallbacks: "{}",
  /** {"vip": {"gpt-4o": [...]}}: per token group; a group's entry for a model wins over ModelFallbacks */
  GroupModelFallbacks: "{}",
  /** "weighted" (random by weight, one-api's) or "latency" (fastest healthy channel, server/relay/channel-stats.ts) */
  ChannelSelectionStrategy: "weighted",
  /** "latency": seconds a channel that failed is tried only when no other channel is left */
  ChannelCooldownSeconds: "30",
};

/** Most fallback models one rule may list. */
export const MAX_FALLBACKS = 10;

/** One model → fallbacks table: names are non-empty strings, lists short. Returns the table trimmed. */
function fallbackTable(value: unknown, where: string): Record<string, string[]> {
  if (!value || typeof value !== "object" || Array.isArray(value))
    throw badRequest(
      `${where} must be a JSON object of model → list of fallback models, e.g. {"gpt-4o": ["gpt-4o-mini"]}`,
    );
  const out: Record<string, string[]> = {};
  for (const [model, list] of Object.entries(value)) {
    if (!model.trim()) throw badRequest(`${where}: a model name must not be empty`);
    if (!Array.isArray(list))
      throw badRequest(`${where}: the fallbacks of "${model}" must be a list of model names, e.g. ["gpt-4o-mini"]`);
    if (list.length > MAX_FALLBACKS)
      throw badRequest(`${where}: "${model}" lists ${list.length} fallbacks; at most ${MAX_FALLBACKS}`);
    for (const m of list) {
      if (typeof m !== "string" || !m.trim())
        throw badRequest(`${where}: the fallbacks of "${model}" must be non-empty model names`);
    }
    out[model.trim()] = list.map((m: string) => m.trim());
  }
  return out;
}

/** The value to store for a routing option, or a 400 naming the problem. A rule that names its own model or
 * forms a cycle with another is harmless (a call never tries a model twice), so it is accepted. */
export function validateRoutingOption(key: string, value: string): string {
  if (key === "ChannelSelectionStrategy") {
    const v = value.trim();
    if (!(CHANNEL_SELECTION_STRATEGIES as readonly string[]).includes(v))
      throw badRequest(`ChannelSelectionStrategy must be one of ${CHANNEL_SELECTION_STRATEGIES.join(", ")}`);
    return v;
  }
  if (key === "ChannelCooldownSeconds") {
    const n = Number(value);
    if (value.trim() === "" || !Number.isInteger(n) || n < 0 || n > 3600)
      throw badRequest("ChannelCooldownSeconds must be a whole number of seconds from 0 to 3600");
    return String(n);
  }
  if (value.trim() === "") return "{}";
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    throw badRequest(`${key} is not valid JSON: ${(e as Error).message}`);
  }
  if (key === "ModelFallbacks") return JSON.stringify(fallbackTable(parsed, key), null, 2);
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw badRequest(
      `${key} must be a JSON object of group → {model: [fallback models]}, e.g. {"vip": {"gpt-4o": ["gpt-4o-mini"]}}`,
    );
  const out: Record<string, Record<string, string[]>> = {};
  for (const [group, table] of Object.entries(parsed)) {
    if (!group.trim()) throw badRequest(`${key}: a group name must not be empty`);
    out[group.trim()] = fallbackTable(table, `${key}.${group}`);
  }
  return JSON.stringify(out, null, 2);
}
