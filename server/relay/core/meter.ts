// Metering: the usage a call is billed for. Upstreams report usage; where they report none, the gateway
// counts the prompt and the generated text. (A partial report is completed by formats/usage.ts.) Settlement
// counts exactly in the tokenizer's worker; the synchronous form (capped, the rest estimated) is for the few
// places that must answer at once.
import type { ParsedResponse, Usage } from "../providers/types.ts";
import { withCountedCompletion } from "../formats/usage.ts";
import { countPromptTokens, countPromptTokensNow, countTokens, countTokensNow } from "../tokenizer.ts";

/** Usage counted by the gateway itself: the request's prompt and the text the answer generated. */
export function countedUsage(body: unknown, generated: string): Usage {
  const prompt = body instanceof FormData ? 0 : countPromptTokensNow(body);
  const completion = countTokensNow(generated);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** A generated text's token count, made off the event loop (the tokenizer's worker). */
export function countGenerated(text: string): Promise<number> {
  return countTokens(text);
}

/** countedUsage, counted exactly off the event loop (the tokenizer's worker) for texts past its inline cap. */
export async function countedUsageExact(body: unknown, generated: string): Promise<Usage> {
  const [prompt, completion] = await Promise.all([
    body instanceof FormData ? 0 : countPromptTokens(body),
    countTokens(generated),
  ]);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** A parsed answer's usage, its output counted off the event loop when the upstream left that count out. */
export async function answerUsage(parsed: ParsedResponse): Promise<Usage | null> {
  if (parsed.uncountedOutput === undefined || !parsed.usage) return parsed.usage;
  return withCountedCompletion(parsed.usage, parsed.uncountedOutput, await countTokens(parsed.uncountedOutput));
}
