// Per-user model request limits (ModelRequestRateLimit* options, overridable per group) and the
// sensitive-word filter on prompts. Counters live in deps.cache, so Redis makes them cluster-wide.
import type { AppDeps } from "../deps.ts";
import { AppError } from "../http/errors.ts";
import { WordScan } from "./wordscan.ts";
import { promptText } from "./tokenizer.ts";

export interface RateTicket {
  /** Counts a successful call toward the success limit. */
  succeeded(): void;
}

export const NO_RATE_LIMIT: RateTicket = { succeeded() {} };

/** Whether takeRateLimit has anything to count (ModelRequestRateLimitEnabled); when not, its ticket is NO_RATE_LIMIT. */
export function rateLimitOn(deps: AppDeps): boolean {
  return deps.options.bool("ModelRequestRateLimitEnabled");
}

/** Refuses with 429 when the user's total or successful requests in the current window reach the limit. */
export async function takeRateLimit(deps: AppDeps, userId: number, group: string): Promise<RateTicket> {
  const o = deps.options;
  if (!rateLimitOn(deps)) return NO_RATE_LIMIT;
  const minutes = Math.max(1, o.number("ModelRequestRateLimitDurationMinutes", 1));
  let total = o.number("ModelRequestRateLimitCount", 0);
  let success = o.number("ModelRequestRateLimitSuccessCount", 1000);
  const perGroup = o.json<Record<string, unknown>>("ModelRequestRateLimitGroup", {})[group];
  if (Array.isArray(perGroup) && perGroup.length >= 2) {
    total = Number(perGroup[0]) || 0;
    success = Number(perGroup[1]) || 0;
  }
  const windowSeconds = minutes * 60;
  const slot = Math.floor(Date.now() / 1000 / windowSeconds);
  const successKey = `mrl:s:${userId}:${slot}`;
  if (success > 0) {
    const done = await deps.cache.count(successKey);
    if (done >= success) throw limitError(success, minutes, "successful ");
  }
  if (total > 0) {
    const n = await deps.cache.incr(`mrl:t:${userId}:${slot}`, windowSeconds);
    if (n > total) throw limitError(total, minutes, "");
  }
  if (success <= 0) return NO_RATE_LIMIT;
  return { succeeded: () => void deps.cache.incr(successKey, windowSeconds).catch(() => {}) };
}

function limitError(limit: number, minutes: number, kind: string) {
  return new AppError(
    429,
    `rate limit reached: at most ${limit} ${kind}requests per ${minutes} minute(s), try again later`,
    "rate_limit_exceeded",
  );
}

let memo: { raw: string; scan: WordScan } = { raw: "", scan: new WordScan([]) };

/** A configured sensitive word the request's prompt contains (the one ending first), or null. One pass over
 * the prompt's text, joined only when prompts are checked (joining a long conversation is not free). */
export function findSensitive(deps: AppDeps, body: unknown): string | null {
  const o = deps.options;
  if (!o.bool("CheckSensitiveEnabled") || !o.bool("CheckSensitiveOnPromptEnabled")) return null;
  const text = promptText(body);
  if (!text) return null;
  const raw = o.get("SensitiveWords");
  if (raw !== memo.raw)
    memo = {
      raw,
      scan: new WordScan(
        raw
          .split(/\r?\n/)
          .map((w) => w.trim().toLowerCase())
          .filter(Boolean),
      ),
    };
  if (memo.scan.empty) return null;
  return memo.scan.find(text.toLowerCase());
}
