// Reasoning across formats: OpenAI's reasoning_effort (a level), Anthropic's thinking (a token budget) and
// Gemini's thinkingConfig (a budget or a level) are mapped onto one another here, so each conversion asks
// the same questions. Budgets derived from a level use the thinking-adapter percentages of the options
// (claude.* / gemini.thinking_adapter_budget_tokens_percentage) as the share of max tokens a "high"
// level may think with.

/** OpenAI's levels, plus Claude's output_config.effort extremes. */
export type Effort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

const EFFORTS = new Set<string>(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);

export function effortOf(v: unknown): Effort | null {
  return typeof v === "string" && EFFORTS.has(v.toLowerCase()) ? (v.toLowerCase() as Effort) : null;
}

/**
 * What a Claude or Gemini client asked for, carried on the OpenAI-shaped body the bridge builds, beside
 * reasoning_effort. A symbol key: JSON.stringify never writes it, so an OpenAI upstream never sees it,
 * while the Claude and Gemini converters read the exact budget instead of a level rounded from it.
 */
export const THINKING = Symbol.for("switchyard.thinking");

export interface ThinkingRequest {
  /** Token budget; -1 = the model decides (Claude adaptive, Gemini dynamic); 0 = off. */
  budget: number;
  /** The client wants the reasoning text back (Gemini includeThoughts; Claude unless display "omitted"). */
  include: boolean;
}

export function thinkingOf(body: unknown): ThinkingRequest | undefined {
  return body && typeof body === "object" ? ((body as any)[THINKING] as ThinkingRequest | undefined) : undefined;
}

/** A budget → the nearest OpenAI level; null for "off" and "model decides", which leave the model's default. */
export function effortFromBudget(budget: number): Effort | null {
  if (!(budget > 0)) return null;
  if (budget < 4096) return "low";
  if (budget < 16384) return "medium";
  return "high";
}

const SHARE: Record<Effort, number> = { none: 0, minimal: 0, low: 0.25, medium: 0.5, high: 1, xhigh: 1, max: 1 };

/** Claude rejects budgets below this. */
export const CLAUDE_MIN_BUDGET = 1024;

/** A level → Claude's budget_tokens: the share of max_tokens × percentage ("high" = all of it), at least 1024; null = no thinking. */
export function claudeBudget(effort: Effort, maxTokens: number, percentage: number): number | null {
  if (effort === "none") return null;
  return Math.max(CLAUDE_MIN_BUDGET, Math.floor(maxTokens * percentage * SHARE[effort]));
}

/** Gemini ignores budgets above this. */
export const GEMINI_BUDGET_CAP = 24576;
/** The smallest budget every Gemini thinking model takes (2.5 Flash-Lite's floor). */
const GEMINI_MIN_BUDGET = 512;

/** A level → Gemini's thinkingBudget: the share of (max tokens × percentage, or the 24576 cap without max tokens); 0 = off. */
export function geminiBudget(effort: Effort, maxTokens: number | undefined, percentage: number): number {
  if (effort === "none") return 0;
  const base = maxTokens ? Math.min(GEMINI_BUDGET_CAP, maxTokens * percentage) : GEMINI_BUDGET_CAP;
  return Math.max(GEMINI_MIN_BUDGET, Math.floor(base * SHARE[effort]));
}

/** Gemini 3's thinkingLevel → an OpenAI level. */
export function effortFromLevel(level: unknown): Effort | null {
  const l = typeof level === "string" ? level.toLowerCase() : "";
  return l === "minimal" || l === "low" || l === "medium" || l === "high" ? l : null;
}

/** OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 and its variants; also behind a vendor prefix, "openai/o3"):
 * they refuse max_tokens and take max_completion_tokens. */
export const REASONING_MODEL = /(?:^|\/)(?:o\d|gpt-5)/i;

/**
 * A chat body's max_tokens as max_completion_tokens where the upstream wants that: a reasoning model, or
 * OpenAI's own API (`openaiApi`: official and Azure) asked for reasoning_effort. Other OpenAI-compatible APIs
 * document max_tokens and keep it. The body is copied only when it changes.
 */
export function withCompletionTokens<T extends Record<string, any>>(body: T, model: string, openaiApi: boolean): T {
  if (body.max_tokens == null) return body;
  if (!REASONING_MODEL.test(model) && !(openaiApi && body.reasoning_effort != null)) return body;
  const { max_tokens, ...rest } = body;
  return { ...rest, max_completion_tokens: body.max_completion_tokens ?? max_tokens } as unknown as T;
}

/**
 * A converted chat body for a reasoning model without the sampling settings those models refuse (temperature
 * and top_p other than their default): a Claude, Gemini or Responses client's own defaults (Gemini CLI sends
 * temperature 0) would otherwise fail the call. An OpenAI client's own call is sent as it asked.
 */
export function withoutSampling<T extends Record<string, any>>(body: T, model: string): T {
  if (!REASONING_MODEL.test(model) || (body.temperature === undefined && body.top_p === undefined)) return body;
  const { temperature: _t, top_p: _p, ...rest } = body;
  return rest as T;
}
