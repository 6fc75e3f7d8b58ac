// The provider adaptor interface: everything the relay needs to know about one kind of upstream.
//
// How to add a provider (e.g. providers/claude/):
//  1. Make a folder providers/<kind>/ with an index.ts that exports one `ProviderAdaptor` object.
//     Keep wire shapes and pure mapping functions in their own files there; the adaptor object only
//     wires them together. The relay never learns a provider's quirks.
//  2. Register it with one line in providers/index.ts (`ADAPTORS[kind] = myAdaptor`). The channel type
//     ids map to a kind through CHANNEL_TYPES in server/catalogue/index.ts.
//  3. The relay calls, in order, for each attempt on a channel:
//       supports(mode)                    → false answers 501 "not supported by this channel type"
//       buildRequest(call, body)          → URL, method, headers (auth) and body for the upstream fetch.
//                                           `body` is the client's request in OpenAI format (already with
//                                           the upstream model name). For multipart modes (audio) body
//                                           is a FormData. The relay merges the channel's param_override
//                                           into the JSON body this returns (see relay/override.ts).
//       fetch(...) by the relay (timeouts, retries, status-code mapping are the relay's job), or
//       send(call, url, init) when the adaptor has it (one call as several upstream requests)
//       non-stream: parseResponse(call, res)  → OpenAI-format JSON body + usage (or null: the relay
//                                               then counts tokens itself, the completion from
//                                               generatedText(call, json) of the upstream's JSON)
//       stream:     streamMapper(call)        → a small state machine fed every upstream SSE event;
//                                               it returns the SSE text to send to the client (already
//                                               framed, "data: ...\n\n") and keeps the usage it saw.
//       binary (audio speech): the relay pipes the upstream body through untouched.
//  4. Errors: an upstream non-2xx is read by `errorMessage(status, text)` (optional) so the client gets
//     the provider's message without its URL or key. Throwing `AppError` from buildRequest aborts the
//     attempt with that status (not retried).
//  5. Formats: `call.format` is the wire format the client speaks. For every /v1 OpenAI route it is
//     "openai": the body is OpenAI-shaped and parseResponse/streamMapper must answer OpenAI-shaped.
//     Native routes (Claude /v1/messages, Gemini /v1beta/...) run the same pipeline with format
//     "claude"/"gemini": the body is the client's native body, and the adaptor whose native format it
//     is passes it through (still building URL + auth and extracting usage).
import type { Channel } from "../../../db/schema.ts";
import type { SentJson } from "../formats/client-json.ts";
import type { JoinedText } from "../../infra/stream-client.ts";

/** What kind of call this is; the route decides it. "task": a submit of the task endpoint (endpoints/task.ts),
 * served by task adaptors (providers/tasks.ts), never by an exchange adaptor. */
export type RelayMode =
  | "chat"
  | "completions"
  | "embeddings"
  | "moderations"
  | "images"
  | "image_edits"
  | "audio_speech"
  | "audio_transcription"
  | "audio_translation"
  | "rerank"
  | "responses"
  | "responses_compact"
  | "realtime"
  | "task";

/** The wire format the CLIENT speaks (and receives errors in). OpenAI for every /v1 route above. */
export type ClientFormat = "openai" | "claude" | "gemini";

/** Token counts of one call, in OpenAI terms. prompt_tokens includes cached_tokens. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** prompt tokens served from the provider's cache (billed at CacheRatio) */
  cached_tokens?: number;
  /** prompt tokens written to the provider's cache (Claude), billed at CreateCacheRatio; 1-hour writes included */
  cache_creation_tokens?: number;
  /** the part of cache_creation_tokens written with a 1-hour TTL (Claude's cache_creation.ephemeral_1h_input_tokens),
   * billed at the 1-hour write ratio; the rest are 5-minute writes. Absent: the upstream reported no TTL split */
  cache_creation_1h_tokens?: number;
  /** prompt tokens that were images (prompt_tokens_details.image_tokens), billed at ImageRatio */
  image_tokens?: number;
  /** prompt and completion tokens that were audio (…_tokens_details.audio_tokens), billed at AudioRatio (× AudioCompletionRatio) */
  audio_prompt_tokens?: number;
  audio_completion_tokens?: number;
}

/** One upstream attempt: everything an adaptor may read. Built by the relay, never mutated by adaptors. */
export interface ProviderCall {
  mode: RelayMode;
  format: ClientFormat;
  channel: Channel;
  /** The API key chosen for this attempt (one line of a multi-key channel). */
  key: string;
  /** Index of that key among the channel's keys (0 for single-key channels): failures are reported for it. */
  keyIndex?: number;
  /** channel.base_url or the type's default base URL, without a trailing slash. */
  baseUrl: string;
  /** The model name the client asked for. */
  requestModel: string;
  /** The model name sent upstream (after the channel's model_mapping). */
  upstreamModel: string;
  stream: boolean;
  /** The client asked for stream usage (stream_options.include_usage): forward the usage chunk. */
  clientWantsUsage: boolean;
  /** Path of the client request, e.g. "/v1/chat/completions" (pass-through providers reuse it). */
  path: string;
  /** Original query string including "?" or "" */
  search: string;
  /** Channel `setting` / `other` parsed once per channel (provider-specific knobs such as api version). */
  options: Record<string, unknown>;
  /** Site options (deps.options). Providers with option-driven behaviour (claude.*, gemini.*) read them
   *  here; when absent (unit tests) they fall back to the option defaults. */
  site?: SiteOptions;
  /** The client request headers this attempt forwards (lower-case names; relay/forward.ts): set for calls the
   *  channel's upstream serves in the client's own format. The relay adds them to the adaptor's headers where the
   *  adaptor set none of that name; an adaptor that merges one (anthropic-beta) reads it here. */
  clientHeaders?: Record<string, string>;
  /** The channel's param_override, merged into the built JSON body by the relay (relay/override.ts). */
  paramOverride?: Record<string, unknown> | null;
  /** The client's body goes upstream as sent: no model mapping, system prompt, usage request or overrides
   *  (global.pass_through_request_enabled, or the channel's setting.pass_through_body_enabled). */
  passThroughBody?: boolean;
  /** The gateway user making the call (providers that keep per-user state upstream, e.g. Dify conversations). */
  userId?: number;
  /** The body the relay hands the adaptor and its JSON text, when that text is the client's own
   * (formats/client-json.ts): an adaptor sending that very object sends the text (jsonText). */
  json?: SentJson;
}

/** The read side of the option store, as providers need it. */
export interface SiteOptions {
  get(key: string): string;
  bool(key: string): boolean;
  number(key: string, fallback?: number): number;
  json<T>(key: string, fallback: T): T;
}

export interface UpstreamRequest {
  url: string;
  method?: string;
  headers: Record<string, string>;
  /** A JoinedText only from jsonText() (a long client text with the stream usage request written in). */
  body?: BodyInit | JoinedText | null;
}

/** Where a realtime session connects: a ws(s) URL and the headers that authorise it. */
export interface RealtimeTarget {
  url: string;
  headers: Record<string, string>;
}

export interface SseEvent {
  event?: string;
  data: string;
  /** The event exactly as received, including its trailing blank line (for verbatim pass-through). */
  raw: string;
}

export interface StreamMapper {
  /** One upstream event in, the SSE text for the client out ("" to send nothing). */
  event(ev: SseEvent): string;
  /** Called once when the upstream stream ends normally; returns the closing frames (e.g. "data: [DONE]\n\n").
   *  `counted` is the relay's count of the prompt and generatedText(): a usage frame the gateway writes
   *  (the client asked for usage) shows it when the upstream reported none, so the client sees what is billed. */
  end(counted?: () => Usage): string;
  /** The usage reported by the upstream, if any was seen. */
  usage(): Usage | null;
  /** Text generated so far (content, reasoning, tool arguments), for counting when no usage came. */
  generatedText(): string;
  /** usage() would count generatedText() (a report without its final output count, and no count handed over for
   *  the text as it is): the relay counts it in the tokenizer's worker first and hands the count over
   *  (textCounted()), so that usage() and end() use it instead of counting on the event loop. */
  countsText?(): boolean;
  /** The count of generatedText() as it is now (a later text is counted again). */
  textCounted?(tokens: number): void;
  /** The upstream ended its answer properly (or sent an error the client has already been given). A stream
   *  that ends otherwise was cut: the relay ends it with an error event instead of end()'s closing frames. */
  complete(): boolean;
}

export interface ParsedResponse {
  /** The body to send to the client (already in the client's format). */
  body: unknown;
  usage: Usage | null;
  /** `usage` lacks the upstream's output count: the text the answer generated, which the relay counts off the
   * event loop (the tokenizer's worker) to complete it (formats/usage.ts withCountedCompletion). */
  uncountedOutput?: string;
}

export interface ProviderAdaptor {
  /** Matches ChannelKind in the catalogue (e.g. "openai", "claude"). */
  kind: string;
  supports(mode: RelayMode): boolean;
  buildRequest(call: ProviderCall, body: any): UpstreamRequest | Promise<UpstreamRequest>;
  /** Sends the built request in place of the relay's single fetch, for calls the upstream takes in
   *  several requests (Gemini's batchEmbedContents: at most 100 inputs). Answers as one upstream call
   *  would: the merged success, or a failing part's own response (the relay maps and retries it). */
  send?(call: ProviderCall, url: string, init: RequestInit): Promise<Response>;
  parseResponse(call: ProviderCall, json: any): ParsedResponse;
  /** The text a non-stream answer generated (content, reasoning, tool calls), read from the upstream's
   *  own JSON, whatever format the client speaks. Asked only when parseResponse found no usage; without
   *  it the relay reads OpenAI shapes. */
  generatedText?(call: ProviderCall, json: any): string;
  streamMapper(call: ProviderCall): StreamMapper;
  /** The wire format this adaptor natively speaks for the call (default "openai"). Native routes
   *  (format "claude"/"gemini") pass bodies through to an adaptor that speaks their format and convert
   *  through OpenAI otherwise (server/relay/formats/bridge.ts). Vertex answers per model. */
  nativeFormat?(call: ProviderCall): ClientFormat;
  /** Whether the channel serves this /v1/responses (or /v1/responses/compact) call itself (default: when it supports the mode).
   *  Otherwise the bridge answers it through chat completions (formats/responses/). */
  nativeResponses?(call: ProviderCall): boolean;
  /** Upstreams whose stream is not SSE (Bedrock's binary event stream) re-frame it as SSE here; the
   *  relay then reads the result like any other stream. */
  decodeStream?(call: ProviderCall, body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array>;
  /** The adaptor merges call.paramOverride into its body itself: it signs the body (Bedrock's SigV4),
   *  so the relay may not change it after buildRequest. */
  appliesParamOverride?: boolean;
  /** The non-stream JSON answer goes to the client unchanged (parseResponse returns it as it is): a large one
   *  may then be streamed through instead of held in memory, its usage read from its tail. */
  passThroughJson?(call: ProviderCall): boolean;
  /** The upstream websocket of a realtime session (GET /v1/realtime, endpoints/realtime.ts), for kinds with one. */
  realtime?(call: ProviderCall): RealtimeTarget;
  /** Extracts a readable message from an upstream error body (never include keys or URLs). */
  errorMessage?(status: number, text: string): string;
  /** Model names this kind offers by default (the channel form's "fill default models"). */
  defaultModels?: readonly string[];
  /** Lists models live from the upstream (channel "fetch models"). */
  fetchModels?(baseUrl: string, key: string, channel?: Channel): Promise<string[]>;
  /** Reads the account balance in dollars (channel "update balance"). */
  balance?(baseUrl: string, key: string, channel?: Channel): Promise<number>;
}
