// Metering: the usage a call is billed for. Upstreams report usage; where they report none, the gateway
// counts the prompt and the generated text. (A partial report is completed by formats/usage.ts.)
import type { Usage } from "../providers/types.ts";
import { countPromptTokensNow, countTokensNow } from "../tokenizer.ts";

/** Usage counted by the gateway itself: the request's prompt and the text the answer generated. */
export function countedUsage(body: unknown, generated: string): Usage {
  const prompt = body instanceof FormData ? 0 : countPromptTokensNow(body);
  const completion = countTokensNow(generated);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
