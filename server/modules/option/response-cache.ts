// The ResponseCache* site options (server/relay/cache) with their defaults and validation.
import { badRequest } from "../../http/errors.ts";

export const RESPONSE_CACHE_DEFAULTS: Record<string, string> = {
  /** off by default: the relay then pays one option read for the cache */
  ResponseCacheEnabled: "false",
  /** how long an answer is kept when neither the request nor ResponseCacheModelTTL says */
  ResponseCacheTTLSeconds: "3600",
  /** seconds per model, {"gpt-4o": 3600}; 0 never keeps that model's answers */
  ResponseCacheModelTTL: "{}",
  /** a hit costs this fraction of what the stored usage costs the caller (0: free) */
  ResponseCacheBillingRatio: "0",
  /** answers larger than this (bytes, as sent to the client) are not kept */
  ResponseCacheMaxEntryBytes: String(1024 * 1024),
  /** who shares answers: "group" (every caller of the group), "user" (each user its own) or "token" */
  ResponseCacheScope: "group",
  /** part of every key: a new value (the console's "Clear cache") leaves every stored answer unreachable */
  ResponseCacheGeneration: "0",
};

export const isResponseCacheOption = (key: string) => key in RESPONSE_CACHE_DEFAULTS;

/** Returns the value to store for a ResponseCache* key, or throws a 400 naming the problem. */
export function validateResponseCacheOption(key: string, value: string): string {
  if (key === "ResponseCacheEnabled") {
    if (value !== "true" && value !== "false") throw badRequest(`${key} must be "true" or "false"`);
    return value;
  }
  if (key === "ResponseCacheScope") {
    if (!["group", "user", "token"].includes(value)) throw badRequest(`${key} must be group, user or token`);
    return value;
  }
  if (key === "ResponseCacheModelTTL") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value.trim() || "{}");
    } catch {
      throw badRequest(`${key} is not a valid JSON string`);
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
      throw badRequest(`${key} must be a JSON object of model → seconds`);
    for (const [model, v] of Object.entries(parsed)) {
      if (!Number.isSafeInteger(v) || (v as number) < 0)
        throw badRequest(`${key}: the TTL of "${model}" must be a whole number of seconds >= 0`);
    }
    return JSON.stringify(parsed);
  }
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw badRequest(`${key} must be a number`);
  if (key === "ResponseCacheBillingRatio") {
    if (n < 0 || n > 1) throw badRequest(`${key} must be between 0 and 1`);
    return String(n);
  }
  if (!Number.isSafeInteger(n)) throw badRequest(`${key} must be a whole number`);
  if ((key === "ResponseCacheTTLSeconds" || key === "ResponseCacheGeneration") && n < 0)
    throw badRequest(`${key} must not be negative`);
  if (key === "ResponseCacheMaxEntryBytes" && n < 1) throw badRequest(`${key} must be at least 1`);
  return String(n);
}
