// The most output tokens a model can generate in one answer. A call that names no max-tokens field is held
// (and, when its payer cannot pay that much, capped) as if it asked for this many. Pure data: the console
// may show it. The option ModelOutputLimit (model → tokens) overrides it per model.

/** A model the table does not know: large enough for the usual answer, small enough that a short balance is
 * capped rather than refused. */
export const DEFAULT_OUTPUT_LIMIT = 8192;

/** Model name prefixes and their output limits, longest prefix first where two overlap. */
const OUTPUT_LIMITS: readonly (readonly [string, number])[] = [
  ["gpt-4o-mini", 16_384],
  ["gpt-4o", 16_384],
  ["chatgpt-4o", 16_384],
  ["gpt-4.1", 32_768],
  ["gpt-4-turbo", 4096],
  ["gpt-4.5", 16_384],
  ["gpt-4", 8192],
  ["gpt-3.5", 4096],
  ["gpt-5", 128_000],
  ["o1-mini", 65_536],
  ["o1", 100_000],
  ["o3", 100_000],
  ["o4", 100_000],
  ["claude-3-7-sonnet", 64_000],
  ["claude-sonnet-4", 64_000],
  ["claude-opus-4", 32_000],
  ["claude-haiku-4", 64_000],
  ["claude-3-5", 8192],
  ["claude-3", 4096],
  ["gemini-2.5", 65_536],
  ["gemini-3", 65_536],
  ["gemini-2.0", 8192],
  ["gemini-1.5", 8192],
  ["deepseek-reasoner", 65_536],
  ["deepseek", 8192],
];

/** The catalogue's output limit of `model` (a thinking-adapter suffix is part of the name and does not matter). */
export function catalogueOutputLimit(model: string): number {
  for (const [prefix, limit] of OUTPUT_LIMITS) if (model.startsWith(prefix)) return limit;
  return DEFAULT_OUTPUT_LIMIT;
}
