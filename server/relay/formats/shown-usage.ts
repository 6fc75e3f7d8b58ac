// The usage a client is shown when the gateway, not the upstream, had the numbers (the upstream
// reported none, or only part): the billed counts, in the client's own format. A converted answer
// otherwise shows the zeros its converter filled in while billing charged the counted tokens.
import type { ClientFormat, Usage } from "../providers/types.ts";
import type { OpenAIUsage } from "./claude/wire.ts";
import { claudeUsageOf } from "./claude/client.ts";
import { geminiUsageOf } from "./gemini/client.ts";

/** The billed usage in OpenAI's shape; whatever else the upstream reported (reasoning tokens) is kept. */
export function shownUsage(billed: Usage, reported?: OpenAIUsage | null): OpenAIUsage {
  const details: NonNullable<OpenAIUsage["prompt_tokens_details"]> = {
    ...reported?.prompt_tokens_details,
    cached_tokens: billed.cached_tokens ?? 0,
  };
  if (billed.cache_creation_tokens) details.cached_creation_tokens = billed.cache_creation_tokens;
  return {
    ...reported,
    prompt_tokens: billed.prompt_tokens,
    completion_tokens: billed.completion_tokens,
    total_tokens: billed.total_tokens,
    prompt_tokens_details: details,
  };
}

/** A converted non-stream answer (already in the client's format) with the billed usage in place of its own. */
export function withBilledUsage(format: ClientFormat, body: any, billed: Usage): any {
  if (format === "claude") return { ...body, usage: { ...body?.usage, ...claudeUsageOf(shownUsage(billed)) } };
  if (format === "gemini") return { ...body, usageMetadata: geminiUsageOf(shownUsage(billed)) };
  return { ...body, usage: shownUsage(billed, body?.usage) };
}
