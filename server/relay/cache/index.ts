// The response cache (ResponseCacheEnabled, off by default): an exact-match cache of successful, complete
// answers — JSON bodies, and streams as the SSE frames the client received — keyed by the caller's group,
// the model, the client's format and endpoint and the normalised body (key.ts), kept in Redis or the
// database (store.ts). A hit is admitted like any call (token, model limits, rate limits, balance), never
// reaches an upstream, is billed ResponseCacheBillingRatio × what the stored usage costs the caller, and is
// logged as a consume log with other.cache_hit. Every answer carries x-switchyard-cache: HIT or MISS.
// Off, the relay pays one option read for it.
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import type { RelayMode, Usage } from "../providers/types.ts";
import { admit, type RelayRequest } from "../core/admit.ts";
import { finish, type Served } from "../core/settle.ts";
import { relayState } from "../state.ts";
import { cacheKey, directivesOf, largerThan, MAX_KEYED_CHARS, type Directives } from "./key.ts";
import { answerStore, type AnswerStore, type CachedAnswer } from "./store.ts";

export const CACHE_HEADER = "x-switchyard-cache";
/** The entry's name (a SHA-256), as LiteLLM's x-litellm-cache-key: the same value means the same entry. */
export const KEY_HEADER = "x-switchyard-cache-key";

/** Endpoints whose answer is a function of the request. Images (expiring URLs), audio, the Responses API
 * (server-side state: previous_response_id) and tasks are never cached. */
const CACHEABLE: ReadonlySet<RelayMode> = new Set<RelayMode>([
  "chat",
  "completions",
  "embeddings",
  "rerank",
  "moderations",
]);

export const DEFAULT_TTL_SECONDS = 3600;
export const DEFAULT_MAX_ENTRY_BYTES = 1024 * 1024;

interface CacheState {
  store: AnswerStore;
  /** epoch milliseconds; tests move it forward to expire entries */
  now: () => number;
  /** the last time a store failure was reported (one line a minute at most) */
  reportedAt: number;
}

const states = new WeakMap<AppDeps, CacheState>();

export function responseCacheState(deps: AppDeps): CacheState {
  let st = states.get(deps);
  if (!st) states.set(deps, (st = { store: answerStore(deps), now: () => Date.now(), reportedAt: 0 }));
  return st;
}

/** The cache's part in one call, or null when the cache is off, the endpoint is not cacheable, or the
 * client said no-store. */
export function responseCache(deps: AppDeps, req: RelayRequest): ResponseCache | null {
  if (!deps.options.bool("ResponseCacheEnabled")) return null;
  if (!CACHEABLE.has(req.mode) || !req.body || typeof req.body !== "object" || req.body instanceof FormData)
    return null;
  // The console's playground is for trying models: a regenerated answer must be a new one.
  if (req.path.startsWith("/pg/")) return null;
  if (largerThan(req.body, MAX_KEYED_CHARS)) return null;
  const d = directivesOf(req);
  return d.lookup || d.store ? new ResponseCache(deps, req, d) : null;
}

/** The channel a hit names: none was called. */
const NO_CHANNEL = { id: 0, type: 0, name: "response cache" } as Channel;

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

export class ResponseCache {
  private st: CacheState;
  readonly key: string;

  constructor(
    private deps: AppDeps,
    private req: RelayRequest,
    private d: Directives,
  ) {
    this.st = responseCacheState(deps);
    this.key = cacheKey(
      req,
      deps.options.get("ResponseCacheGeneration"),
      deps.options.get("ResponseCacheScope"),
      d.namespace,
    );
  }

  /** A stored answer for this request, admitted and billed, or null (a miss, or the client asked to refresh). */
  async lookup(): Promise<Response | null> {
    if (!this.d.lookup) return null;
    const now = this.st.now();
    let entry: CachedAnswer | null;
    try {
      entry = await this.st.store.get(this.key, now);
    } catch (e) {
      this.report("read", e);
      return null;
    }
    if (!entry || (this.d.maxAge !== undefined && now - entry.at > this.d.maxAge * 1000)) return null;
    return this.serve(entry, now);
  }

  private async serve(entry: CachedAnswer, now: number): Promise<Response> {
    const adm = await admit(this.deps, this.req);
    const ratio = billingRatio(this.deps);
    const s: Served = {
      ...adm,
      channel: NO_CHANNEL,
      upstreamModel: this.req.model,
      usedChannels: [],
      firstByteMs: performance.now() - adm.started,
      costRatio: ratio,
    };
    const age = Math.max(0, Math.floor((now - entry.at) / 1000));
    finish(this.deps, s, entry.usage, undefined, {
      cache_hit: true,
      response_cache: {
        billing_ratio: ratio,
        age_seconds: age,
        channel_id: entry.channelId,
        upstream_model: entry.upstreamModel,
      },
    });
    const headers: Record<string, string> =
      entry.kind === "sse" ? { ...SSE_HEADERS } : { "content-type": entry.contentType };
    headers[CACHE_HEADER] = "HIT";
    headers[KEY_HEADER] = this.key;
    headers.age = String(age);
    return new Response(entry.body, { status: 200, headers });
  }

  /** Delivers a served call's answer and, when it ends whole and successful, keeps it for later calls. */
  async keep(s: Served, deliver: () => Promise<Response>): Promise<Response> {
    // An answer from a fallback model (another request, another price) is not this request's to keep.
    const ttl = this.ttl();
    const storing = this.d.store && ttl > 0 && s.req.model === this.req.model;
    let usage: Usage | null = null;
    let body: string | null = null;
    let kind: CachedAnswer["kind"] = "body";
    let contentType = "";
    let kept = false;
    const maybeStore = () => {
      if (kept || !usage || body === null || s.interrupted || !complete(this.req.format, kind, body)) return;
      kept = true;
      // Tracked by the write-behind: its flush (and a graceful shutdown) waits for the entry to be written.
      relayState(this.deps).writer.track(this.store(kind, contentType, body, usage, s, ttl));
    };
    if (storing) s.onSettled = (u) => ((usage = u), maybeStore());
    const res = await deliver();
    if (!storing || res.status !== 200 || !res.body) return marked(res, res.body, this.key);
    contentType = res.headers.get("content-type") ?? "";
    kind = contentType.includes("text/event-stream") ? "sse" : "body";
    const cap =
      Math.max(1, this.deps.options.number("ResponseCacheMaxEntryBytes", DEFAULT_MAX_ENTRY_BYTES))
      || DEFAULT_MAX_ENTRY_BYTES;
    return marked(
      res,
      recorded(res.body, cap, (text) => ((body = text), maybeStore())),
      this.key,
    );
  }

  private ttl(): number {
    if (this.d.ttl !== undefined) return this.d.ttl;
    const perModel = this.deps.options.json<Record<string, unknown>>("ResponseCacheModelTTL", {})[this.req.model];
    if (typeof perModel === "number" && perModel >= 0) return Math.floor(perModel);
    return Math.max(0, Math.floor(this.deps.options.number("ResponseCacheTTLSeconds", DEFAULT_TTL_SECONDS)));
  }

  private async store(
    kind: CachedAnswer["kind"],
    contentType: string,
    body: string,
    usage: Usage,
    s: Served,
    ttl: number,
  ): Promise<void> {
    const at = this.st.now();
    const entry: CachedAnswer = {
      v: 1,
      kind,
      contentType,
      body,
      usage,
      upstreamModel: s.upstreamModel,
      channelId: s.channel.id,
      at,
      exp: at + ttl * 1000,
    };
    try {
      await this.st.store.put(this.key, this.req.model, entry);
    } catch (e) {
      this.report("write", e);
    }
  }

  private report(what: string, e: unknown): void {
    const now = Date.now();
    if (now - this.st.reportedAt < 60_000) return;
    this.st.reportedAt = now;
    console.error(`response cache ${what} failed (${this.st.store.kind}):`, (e as Error)?.message ?? e);
  }
}

function billingRatio(deps: AppDeps): number {
  const r = deps.options.number("ResponseCacheBillingRatio", 0);
  return r > 0 ? r : 0;
}

/** The answer with x-switchyard-cache: MISS and its key, over `body`. */
function marked(res: Response, body: ReadableStream<Uint8Array> | null, key: string): Response {
  if (body === res.body) {
    // The relay's own answers have mutable headers: no second Response around the same body.
    try {
      res.headers.set(CACHE_HEADER, "MISS");
      res.headers.set(KEY_HEADER, key);
      return res;
    } catch {}
  }
  const headers = new Headers(res.headers);
  headers.set(CACHE_HEADER, "MISS");
  headers.set(KEY_HEADER, key);
  return new Response(body, { status: res.status, statusText: res.statusText, headers });
}

/** `body` passed through chunk by chunk as the client reads it; `done` hears the whole text when it ended
 * normally within `cap` bytes (never when it broke off, the client left, or it grew past the cap). */
function recorded(
  body: ReadableStream<Uint8Array>,
  cap: number,
  done: (text: string) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let parts: Uint8Array[] | null = [];
  let size = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (e) {
          parts = null;
          controller.error(e);
          return;
        }
        if (chunk.done) {
          controller.close();
          if (parts) done(Buffer.concat(parts, size).toString("utf8"));
          parts = null;
          return;
        }
        // A Bun "direct" stream (the relay's SSE answers) may hand over strings.
        const value: Uint8Array =
          typeof (chunk.value as unknown) === "string"
            ? new TextEncoder().encode(chunk.value as unknown as string)
            : chunk.value;
        if (parts) {
          size += value.byteLength;
          if (size > cap) parts = null;
          else parts.push(value);
        }
        controller.enqueue(value);
      },
      cancel(reason) {
        parts = null;
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** Error answers sent with status 200, error events in a stream, and tool calls cut off by the token limit
 * are not answers to replay. A linear scan of the text, no parse. */
function complete(format: RelayRequest["format"], kind: CachedAnswer["kind"], text: string): boolean {
  if (kind === "body" && /^\s*\{\s*"error"\s*:/.test(text.slice(0, 64))) return false;
  if (kind === "sse" && (/(^|\n)event: ?error\n/.test(text) || /(^|\n)data: ?\{\s*"error"\s*:/.test(text)))
    return false;
  if (format === "claude") return !(/"stop_reason":\s*"max_tokens"/.test(text) && text.includes('"tool_use"'));
  if (format === "gemini") return !(/"finishReason":\s*"MAX_TOKENS"/.test(text) && text.includes('"functionCall"'));
  return !(/"finish_reason":\s*"length"/.test(text) && text.includes('"tool_calls"'));
}
