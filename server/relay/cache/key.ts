// The response cache's two questions about a request, answered before anything is looked up: what the
// client asked of the cache (headers, LiteLLM's body field), and which answers are the same answer (the key).
import type { RelayRequest } from "../core/admit.ts";

/** What the request asks of the cache. */
export interface Directives {
  /** look for a stored answer (false: Cache-Control: no-cache, force-refresh) */
  lookup: boolean;
  /** keep this call's answer (false: Cache-Control: no-store) */
  store: boolean;
  /** seconds to keep this call's answer; undefined: the model's or the site's TTL */
  ttl?: number;
  /** the oldest stored answer (seconds) the client accepts; undefined: any live one */
  maxAge?: number;
  /** a client-chosen partition of the cache (x-switchyard-cache-namespace, LiteLLM's `namespace`) */
  namespace?: string;
}

const NONE: Directives = { lookup: false, store: false };

/** A whole number of seconds from a header or body value, else undefined. */
function seconds(v: unknown): number | undefined {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * Headers understood (case-insensitive):
 *   Cache-Control: no-store | no-cache | max-age=N        (the HTTP request directives)
 *   x-switchyard-cache: no-store | off | bypass           (neither look up nor keep)
 *                       no-cache | force-refresh | refresh (do not look up; keep the fresh answer)
 *   x-switchyard-cache-ttl: N                              (keep the answer N seconds)
 *   x-switchyard-cache-namespace: NAME                     (answers are shared only within NAME)
 *   x-portkey-cache-force-refresh: true                    (Portkey's refresh)
 * and LiteLLM's body field `cache: {"no-cache": true, "no-store": true, "ttl": N, "s-maxage": N, "namespace": NAME}`, which is
 * taken out of the body so it never reaches the upstream.
 */
export function directivesOf(req: RelayRequest): Directives {
  const d: Directives = { lookup: true, store: true };
  const h = req.httpHeaders;
  if (h) {
    const cc = h.get("cache-control");
    if (cc) {
      for (const part of cc.toLowerCase().split(",")) {
        const [name, value] = part.trim().split("=");
        if (name === "no-store") return NONE;
        if (name === "no-cache") d.lookup = false;
        if (name === "max-age") {
          const n = seconds(value?.replace(/"/g, ""));
          if (n !== undefined) {
            d.maxAge = n;
            d.ttl = n;
          }
        }
      }
    }
    const own = h.get("x-switchyard-cache")?.trim().toLowerCase();
    if (own === "no-store" || own === "off" || own === "bypass") return NONE;
    if (own === "no-cache" || own === "force-refresh" || own === "refresh") d.lookup = false;
    const ttl = seconds(h.get("x-switchyard-cache-ttl") ?? undefined);
    if (ttl !== undefined) d.ttl = ttl;
    const ns = h.get("x-switchyard-cache-namespace");
    if (ns) d.namespace = ns.slice(0, 256);
    if (h.get("x-portkey-cache-force-refresh")?.trim().toLowerCase() === "true") d.lookup = false;
  }
  const body = req.body;
  const lite = body && typeof body === "object" && !(body instanceof FormData) ? body.cache : undefined;
  if (lite && typeof lite === "object" && !Array.isArray(lite)) {
    delete body.cache;
    // The client's text still has it: the body is serialised from here on.
    req.json = undefined;
    if (lite["no-store"] === true) return NONE;
    if (lite["no-cache"] === true) d.lookup = false;
    const ttl = seconds(lite.ttl);
    if (ttl !== undefined) d.ttl = ttl;
    const maxAge = seconds(lite["s-maxage"]);
    if (maxAge !== undefined) d.maxAge = maxAge;
    if (typeof lite.namespace === "string" && lite.namespace) d.namespace = lite.namespace.slice(0, 256);
  }
  if (d.ttl === 0) d.store = false;
  return d;
}

/** Body fields that do not change the answer: who asked, how it is delivered (the stream flag is part of
 * the key on its own), and bookkeeping the provider keeps for itself. */
const IGNORED = new Set([
  "user",
  "stream",
  "stream_options",
  "metadata",
  "store",
  "safety_identifier",
  "prompt_cache_key",
  "cache",
]);

/** Requests whose strings add up to more than this are not cached: their key alone (SHA-256 over the text)
 * would hold the event loop for more than about a millisecond. */
export const MAX_KEYED_CHARS = 1024 * 1024;

/** Whether the strings (keys and values) of `v` add up to more than `limit` characters; stops as soon as
 * they do. One pass over the nodes, not the characters. */
export function largerThan(v: unknown, limit: number): boolean {
  let left = limit;
  const walk = (x: unknown): boolean => {
    if (typeof x === "string") return (left -= x.length) < 0;
    if (!x || typeof x !== "object") return false;
    if (Array.isArray(x)) return x.some(walk);
    for (const k in x as Record<string, unknown>)
      if ((left -= k.length) < 0 || walk((x as Record<string, unknown>)[k])) return true;
    return false;
  };
  return walk(v);
}

type Hasher = InstanceType<typeof Bun.CryptoHasher>;

/** Feeds `v` to the hasher in canonical JSON form — object keys sorted at every depth, arrays in order
 * (message order is meaning) — without building the JSON text; a long string goes in as its length and its
 * raw characters, unescaped (a prefix no JSON value starts with, so no two values read the same). */
function feed(h: Hasher, v: unknown): void {
  if (typeof v === "string") {
    if (v.length > 256) h.update(`s${v.length}:`).update(v);
    else h.update(JSON.stringify(v));
  } else if (v === null || typeof v !== "object") {
    h.update(JSON.stringify(v) ?? "null");
  } else if (Array.isArray(v)) {
    h.update("[");
    v.forEach((x, i) => {
      if (i) h.update(",");
      feed(h, x);
    });
    h.update("]");
  } else {
    h.update("{");
    let first = true;
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x === undefined) continue;
      if (!first) h.update(",");
      first = false;
      h.update(JSON.stringify(k)).update(":");
      feed(h, x);
    }
    h.update("}");
  }
}

/**
 * The hash naming one answer: the caller's group (answers never cross groups) — and with ResponseCacheScope
 * "user" or "token" the caller's user or token —, the model, the client's
 * format, endpoint and stream shape (a stream and a JSON answer are kept apart), the channel a token pins,
 * the client headers an adaptor forwards (anthropic-beta), the body in canonical form, the client's
 * namespace, and the cache's generation (ResponseCacheGeneration: a new one clears the cache).
 */
export function cacheKey(req: RelayRequest, generation: string, scope: string, namespace = ""): string {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(req.body as Record<string, unknown>)) if (!IGNORED.has(k)) body[k] = v;
  // The usage frame is sent only to a client that asked for it: a stream replayed must match the ask.
  const usageFrame = req.stream && req.body?.stream_options?.include_usage === true;
  // Gemini's ?alt=sse changes the framing; ?key= is a secret and never part of the key.
  const alt = req.search ? (new URLSearchParams(req.search).get("alt") ?? "") : "";
  const parts = {
    // A token of group "auto" is routed to one of its user's groups at admission: the user's group names the choice.
    v: 1,
    generation,
    namespace,
    owner:
      scope === "user"
        ? `u${req.caller.userId}`
        : scope === "token"
          ? `t${req.caller.userId}.${req.caller.tokenId}`
          : "",
    group: req.caller.group,
    userGroup: req.caller.group === "auto" ? (req.caller.userGroup ?? "") : "",
    model: req.model,
    mode: req.mode,
    format: req.format,
    stream: req.stream,
    usageFrame,
    alt,
    pinned: req.caller.pinnedChannel,
    headers: req.headers ?? null,
    body,
  };
  const h = new Bun.CryptoHasher("sha256");
  feed(h, parts);
  return h.digest("hex");
}
