// Channel affinity's settings (new-api's channel_affinity_setting, stored under its option keys so a new-api
// site's settings carry over): which calls belong to a conversation (rules: model and path patterns, where the
// conversation's key is read), how long a conversation stays on its channel, and how the pin moves. Shared by
// the server (server/relay/affinity.ts) and the console's settings form; no Node or Bun APIs here.

export const AFFINITY_OPTIONS = {
  enabled: "channel_affinity_setting.enabled",
  switchOnSuccess: "channel_affinity_setting.switch_on_success",
  keepOnChannelDisabled: "channel_affinity_setting.keep_on_channel_disabled",
  maxEntries: "channel_affinity_setting.max_entries",
  defaultTtlSeconds: "channel_affinity_setting.default_ttl_seconds",
  rules: "channel_affinity_setting.rules",
} as const;

/** Where a rule reads a call's conversation key: a request header, a body field (a dotted path, as new-api's
 * gjson paths), or a fact of the caller (new-api's context keys: id, token_id, token_name, group, username). */
export interface AffinityKeySource {
  type: "request_header" | "gjson" | "context_int" | "context_string";
  key?: string;
  path?: string;
}

export interface AffinityRule {
  name: string;
  /** the rule applies to models matching any of these (none: to no model, as in new-api) */
  model_regex: string[];
  /** and to request paths matching any of these (none: every path) */
  path_regex: string[];
  /** and, when given, to User-Agents containing any of these (case-insensitive) */
  user_agent_include?: string[];
  /** the first source that gives a value is the conversation's key */
  key_sources: AffinityKeySource[];
  /** a key must match this to count (empty: any) */
  value_regex: string;
  /** how long the pin lasts after the conversation's last served call (0: default_ttl_seconds) */
  ttl_seconds: number;
  /** new-api applies this to the channel's param_override on pinned calls; kept for its settings, not applied */
  param_override_template?: Record<string, unknown>;
  /** a failure of the pinned channel ends the call there instead of trying other channels */
  skip_retry_on_failure: boolean;
  /** the pin is per group, per model, and named by the rule (a rule's pins can be cleared by its name) */
  include_using_group: boolean;
  include_model_name: boolean;
  include_rule_name: boolean;
}

const rule = (name: string, paths: string[], key_sources: AffinityKeySource[]): AffinityRule => ({
  name,
  model_regex: [".*"],
  path_regex: paths,
  key_sources,
  value_regex: "",
  ttl_seconds: 0,
  skip_retry_on_failure: false,
  include_using_group: true,
  include_model_name: true,
  include_rule_name: true,
});

/**
 * The conversations agents mark: OpenAI's prompt_cache_key (Codex, the Responses API and chat completions),
 * Claude Code's session (its x-claude-code-session-id header, else the metadata.user_id it sends), and a Gemini
 * call naming a context cache (cachedContent, which exists only on the key that created it). Any model (a
 * gateway maps model names freely), each pinned apart: a provider caches per model, and an agent that asks a
 * small model for side tasks in the same session keeps both its pins. A failing pinned channel falls back as
 * any call does.
 */
export const DEFAULT_AFFINITY_RULES: AffinityRule[] = [
  rule("prompt cache key", ["^/v1/responses", "^/v1/chat/completions"], [{ type: "gjson", path: "prompt_cache_key" }]),
  rule(
    "claude cli trace",
    ["^/v1/messages"],
    [
      { type: "request_header", key: "X-Claude-Code-Session-Id" },
      { type: "gjson", path: "metadata.user_id" },
    ],
  ),
  rule("gemini context cache", ["^/v1(beta)?/models/"], [{ type: "gjson", path: "cachedContent" }]),
];

export const AFFINITY_DEFAULTS: Record<string, string> = {
  [AFFINITY_OPTIONS.enabled]: "true",
  [AFFINITY_OPTIONS.switchOnSuccess]: "true",
  [AFFINITY_OPTIONS.keepOnChannelDisabled]: "false",
  [AFFINITY_OPTIONS.maxEntries]: "100000",
  [AFFINITY_OPTIONS.defaultTtlSeconds]: "3600",
  [AFFINITY_OPTIONS.rules]: JSON.stringify(DEFAULT_AFFINITY_RULES),
};

const SOURCE_TYPES = ["request_header", "gjson", "context_int", "context_string"];
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === "string");

function regexProblem(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return false;
  } catch {
    return true;
  }
}

/** What is wrong with a rules value (English, naming the rule and field), or null. Empty means no rules. */
export function affinityRulesProblem(value: string): string | null {
  if (value.trim() === "") return null;
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    return "rules must be a JSON array";
  }
  if (!Array.isArray(v)) return "rules must be a JSON array";
  const names = new Set<string>();
  for (const [i, r] of v.entries()) {
    const at = `rules[${i}]`;
    if (!r || typeof r !== "object" || Array.isArray(r)) return `${at} must be an object`;
    const x = r as Record<string, unknown>;
    if (typeof x.name !== "string" || !x.name.trim()) return `${at}.name is required`;
    if (x.name.includes(":")) return `${at}.name may not contain ":"`;
    if (names.has(x.name)) return `${at}.name "${x.name}" is used twice`;
    names.add(x.name);
    for (const f of ["model_regex", "path_regex", "user_agent_include"]) {
      if (x[f] !== undefined && x[f] !== null && !isStrings(x[f])) return `${at}.${f} must be an array of strings`;
    }
    for (const f of ["model_regex", "path_regex"]) {
      const bad = ((x[f] as string[] | undefined) ?? []).find(regexProblem);
      if (bad !== undefined) return `${at}.${f}: "${bad}" is not a valid regular expression`;
    }
    if (
      x.value_regex !== undefined
      && x.value_regex !== null
      && (typeof x.value_regex !== "string" || regexProblem(x.value_regex))
    ) {
      return `${at}.value_regex is not a valid regular expression`;
    }
    if (!Array.isArray(x.key_sources) || x.key_sources.length === 0)
      return `${at}.key_sources must be a non-empty array`;
    for (const [j, s] of (x.key_sources as unknown[]).entries()) {
      const src = s as Record<string, unknown> | null;
      if (!src || typeof src !== "object" || !SOURCE_TYPES.includes(String(src.type)))
        return `${at}.key_sources[${j}].type must be one of ${SOURCE_TYPES.join(", ")}`;
      const field = src.type === "gjson" ? "path" : "key";
      if (typeof src[field] !== "string" || !(src[field] as string).trim())
        return `${at}.key_sources[${j}].${field} is required`;
    }
    if (
      x.ttl_seconds !== undefined
      && x.ttl_seconds !== null
      && (!Number.isInteger(x.ttl_seconds) || (x.ttl_seconds as number) < 0)
    )
      return `${at}.ttl_seconds must be a whole number >= 0`;
    for (const f of ["skip_retry_on_failure", "include_using_group", "include_model_name", "include_rule_name"]) {
      if (x[f] !== undefined && x[f] !== null && typeof x[f] !== "boolean") return `${at}.${f} must be true or false`;
    }
  }
  return null;
}
