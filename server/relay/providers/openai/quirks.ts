// The OpenAI-compatible channel types differ only in where their API sits and a few small habits: this
// table holds those differences, per channel type, so the shared adaptor never grows an `if` per provider.
import type { ProviderCall, RelayMode } from "../types.ts";
import { AppError } from "../../../http/errors.ts";

/** Endpoint paths under an OpenAI-style API root ("/v1" included). */
export const PATHS: Record<string, string> = {
  chat: "/v1/chat/completions",
  completions: "/v1/completions",
  embeddings: "/v1/embeddings",
  moderations: "/v1/moderations",
  images: "/v1/images/generations",
  image_edits: "/v1/images/edits",
  audio_speech: "/v1/audio/speech",
  audio_transcription: "/v1/audio/transcriptions",
  audio_translation: "/v1/audio/translations",
  rerank: "/v1/rerank",
  responses: "/v1/responses",
  responses_compact: "/v1/responses/compact",
};

export interface OpenAIQuirks {
  /** Where the API sits on the provider's host, for base URLs imported as a bare host ("https://open.bigmodel.cn"). */
  apiPath?: string;
  /** Hosts the provider retired, and where the API moved (a stored base URL on the old host keeps working). */
  moved?: Record<string, string>;
  /** The whole request URL, for types whose address is not base + path (custom full URLs, Cloudflare accounts). */
  url?(call: ProviderCall, base: string): string;
  /** The auth headers, when the key is not simply a bearer token. */
  auth?(call: ProviderCall): Record<string, string>;
  /** What the upstream serves (default: every endpoint of PATHS). */
  modes?: readonly RelayMode[];
}

/** Base URLs that already end in a version segment (Zhipu v4, Doubao v3, Qianfan v2) take the path without /v1. */
export function upstreamUrl(baseUrl: string, mode: string): string {
  const path = PATHS[mode] ?? PATHS.chat!;
  return /\/v\d+$/.test(baseUrl) ? baseUrl + path.slice(3) : baseUrl + path;
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname.replace(/\/+$/, "");
  } catch {
    return "";
  }
}

/** The base URL after the type's quirks: moved hosts replaced, the API path added to a bare host. */
export function quirkBase(type: number, baseUrl: string): string {
  const q = QUIRKS[type];
  if (!q) return baseUrl;
  let base = baseUrl;
  for (const [from, to] of Object.entries(q.moved ?? {})) {
    if (base === from || base.startsWith(from + "/")) base = to + base.slice(from.length);
  }
  if (q.apiPath && pathOf(base) === "") base += q.apiPath;
  return base;
}

/** The endpoint a full custom URL names, matched at its end so the other endpoints can be derived from it. */
const ENDPOINT_TAIL =
  /\/(chat\/completions|completions|embeddings|moderations|images\/generations|images\/edits|audio\/speech|audio\/transcriptions|audio\/translations|rerank|responses\/compact|responses)$/;

/**
 * Custom channels (type 8): one-api and new-api store the full request URL, `{model}` standing for the
 * upstream model. Chat calls go to it as it is; other endpoints swap its endpoint path when it ends in
 * one. A base URL that is only a host (or host/v1) is an API root, as Switchyard's earlier versions
 * and one-api's custom channels kept it, and gets the usual paths.
 */
export function customUrl(call: Pick<ProviderCall, "mode" | "upstreamModel">, base: string): string {
  const [address, query = ""] = base.split(/\?(.*)/s);
  const path = pathOf(address!);
  if (!address!.includes("{model}") && (path === "" || /^\/v\d+$/.test(path)))
    return upstreamUrl(address!, call.mode) + (query ? `?${query}` : "");
  let url = address!.split("{model}").join(encodeURIComponent(call.upstreamModel));
  if (call.mode !== "chat" && ENDPOINT_TAIL.test(url))
    url = url.replace(ENDPOINT_TAIL, (PATHS[call.mode] ?? PATHS.chat!).slice(3));
  return url + (query ? `?${query}` : "");
}

/** The API root of a base URL: a custom channel's full URL without its endpoint (and {model}) part. */
export function apiRoot(type: number, base: string): string {
  const b = quirkBase(type, base).split("?")[0]!;
  if (type !== 8) return b;
  return b.replace(ENDPOINT_TAIL, "").replace(/\/[^/]*\{model\}.*$/, "");
}

/**
 * Cloudflare Workers AI (type 39): the OpenAI-compatible API of an account,
 * https://api.cloudflare.com/client/v4/accounts/{account}/ai/v1, the account ID in the channel's `other`.
 * A base URL that already names the account's AI path, or an AI Gateway's workers-ai address, is used as given.
 */
export function cloudflareUrl(call: Pick<ProviderCall, "mode" | "channel">, base: string): string {
  const path = (PATHS[call.mode] ?? PATHS.chat!).slice(3);
  if (/\/ai\/v1$/.test(base)) return base + path;
  if (/\/ai$/.test(base) || /\/workers-ai$/.test(base)) return base + "/v1" + path;
  const account = (call.channel.other ?? "").trim();
  if (!account)
    throw new AppError(
      500,
      "the Cloudflare channel has no account ID (the channel's Account ID field)",
      "channel_misconfigured",
    );
  return `${base}/client/v4/accounts/${encodeURIComponent(account)}/ai/v1${path}`;
}

const QUIRKS: Record<number, OpenAIQuirks> = {
  8: { url: (call, base) => customUrl(call, base) },
  // ai.360.cn was one-api's default; the API answers at api.360.cn
  19: { moved: { "https://ai.360.cn": "https://api.360.cn" }, modes: ["chat", "embeddings", "images"] },
  22: { modes: ["chat"] },
  26: { apiPath: "/api/paas/v4", modes: ["chat", "embeddings", "images"] },
  35: { moved: { "https://api.minimax.chat": "https://api.minimaxi.com" }, modes: ["chat"] },
  39: { url: (call, base) => cloudflareUrl(call, base), modes: ["chat", "embeddings"] },
  45: { apiPath: "/api/v3", modes: ["chat", "embeddings", "images"] },
  // Qianfan v2: a bearer key ("bce-v3/ALTAK-..."), optionally followed by "|appid" (new-api's layout)
  46: {
    apiPath: "/v2",
    modes: ["chat", "embeddings", "images", "rerank"],
    auth(call) {
      const [key, appid] = call.key.split("|").map((s) => s.trim());
      const h: Record<string, string> = { authorization: `Bearer ${key}` };
      if (appid) h.appid = appid;
      return h;
    },
  },
};

export function quirksFor(type: number): OpenAIQuirks {
  return QUIRKS[type] ?? {};
}

/** The request URL of an OpenAI-compatible call on its channel type. */
export function openaiUrl(call: ProviderCall): string {
  const q = quirksFor(call.channel.type);
  const base = quirkBase(call.channel.type, call.baseUrl);
  return q.url ? q.url(call, base) : upstreamUrl(base, call.mode);
}
