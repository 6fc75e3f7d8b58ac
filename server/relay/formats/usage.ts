// Usage as every wire format reports it, and the one rule for reports that are not final: a stream cut
// before its last usage frame, or an answer without an output count, bills what was generated whenever
// counting it gives more. Providers and the relay core both apply it from here.
import type { Usage } from "../providers/types.ts";
import { countTokensNow } from "../tokenizer.ts";

/** `tokens`: the count of `generated` when already made (in the tokenizer's worker). */
export function withCountedCompletion(u: Usage, generated: string, tokens?: number): Usage {
  const counted = tokens ?? countTokensNow(generated);
  if (counted <= u.completion_tokens) return u;
  return { ...u, completion_tokens: counted, total_tokens: u.prompt_tokens + counted };
}

/** A stream's generated text counted by the relay (in the tokenizer's worker): valid while the text has the length
 * it had when counted (a longer text is counted again). */
export class TextCount {
  private chars = -1;
  private tokens = 0;

  set(text: string, tokens: number): void {
    this.chars = text.length;
    this.tokens = tokens;
  }

  /** The count of `text`, if it is the text counted. */
  of(text: string): number | undefined {
    return text.length === this.chars ? this.tokens : undefined;
  }
}
