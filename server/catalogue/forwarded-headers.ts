// Which client request headers go with a call to an upstream of the client's own wire format: the headers
// that mean something to that API (feature flags, versions, session and conversation ids the provider uses
// for caching and routing). One list per wire format; a channel's `forward_headers` setting adds to its list.
// A name ending in "*" stands for every header that starts with what comes before it.
import type { ChannelKind } from "./channel-types.ts";

export type WireFormat = "openai" | "claude" | "gemini";

export const FORWARDED_HEADERS: Readonly<Record<WireFormat, readonly string[]>> = {
  // Codex CLI's session and turn headers, and the header that goes with its additional_tools body form.
  openai: [
    "openai-beta",
    "session_id",
    "session-id",
    "thread-id",
    "conversation_id",
    "x-codex-*",
    "x-openai-internal-codex-responses-lite",
  ],
  claude: ["anthropic-beta", "anthropic-version", "x-claude-code-session-id"],
  gemini: ["x-goog-api-client"],
};

/**
 * Never forwarded, whatever a channel's setting says: the client's own credentials (the gateway's key, not
 * the upstream's), the gateway's own user header, and the headers of the connection itself (hop-by-hop, and
 * the framing the gateway writes anew for the upstream request).
 */
export const NEVER_FORWARDED: readonly string[] = [
  "authorization",
  "proxy-authorization",
  "x-api-key",
  "x-goog-api-key",
  "api-key",
  "mj-api-secret",
  "cookie",
  "set-cookie",
  "new-api-user",
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "content-type",
  "content-encoding",
  "accept-encoding",
  "expect",
];

/** The wire formats a channel kind's upstream speaks itself: a client of one of them is served natively there
 * (Vertex: Claude or Gemini, by model). Other kinds convert every call, so nothing is forwarded to them. */
export const KIND_WIRE_FORMATS: Readonly<Partial<Record<ChannelKind, readonly WireFormat[]>>> = {
  openai: ["openai"],
  azure: ["openai"],
  claude: ["claude"],
  aws: ["claude"],
  gemini: ["gemini"],
  vertex: ["claude", "gemini"],
};

/** A channel's `forward_headers` setting as header names: a list, or one string of names apart by commas or spaces. */
export function forwardHeaderNames(value: unknown): string[] {
  const raw = Array.isArray(value)
    ? value.filter((v): v is string => typeof v === "string")
    : typeof value === "string"
      ? value.split(/[\s,]+/)
      : [];
  return raw.map((s) => s.trim().toLowerCase()).filter(Boolean);
}
