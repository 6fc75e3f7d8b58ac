// Default pricing tables (1 ratio = $2 per 1M input tokens = 1 quota unit per token at ratio 1... see billing).
// ModelRatio: input price / $2 per 1M tokens. CompletionRatio: output price / input price.
// ModelPrice: fixed dollars per call. CacheRatio: cached-input price / input price.
// Every model of models.ts has an entry here (tests/relay/units.test.ts holds that).
import { DEFAULT_TASK_PRICES } from "./tasks.ts";

/** Yuan per dollar for providers that list prices in CNY (the rate new-api assumes). */
const CNY_PER_USD = 7.3;
/** Model ratio for a list price in USD per 1M input tokens. */
const usd = (perMillion: number): number => round(perMillion / 2);
/** Model ratio for a list price in CNY per 1M input tokens. */
const cny = (perMillion: number): number => round(perMillion / CNY_PER_USD / 2);
// Six significant digits keep the option JSON readable without moving any bill by a unit.
function round(n: number): number {
  return Number(n.toPrecision(6));
}

/**
 * What the coding agents send by default (Claude Code, Codex CLI, Gemini CLI): [model, USD per 1M input tokens,
 * per 1M output tokens, per 1M cached input tokens] from Anthropic's, OpenAI's and Google's price lists (the
 * standard tier, prompts up to 200K tokens). Turned into the ratio tables below, so each price is written once.
 */
const AGENT_MODELS: readonly [string, number, number, number][] = [
  ["claude-sonnet-4-0", 3, 15, 0.3],
  ["claude-sonnet-4-5", 3, 15, 0.3],
  ["claude-sonnet-4-6", 3, 15, 0.3],
  ["claude-haiku-4-5", 1, 5, 0.1],
  ["claude-opus-4-0", 15, 75, 1.5],
  ["claude-opus-4-1", 15, 75, 1.5],
  ["claude-opus-4-5", 5, 25, 0.5],
  ["claude-opus-4-5-20251101", 5, 25, 0.5],
  ["claude-opus-4-6", 5, 25, 0.5],
  ["claude-opus-4-7", 5, 25, 0.5],
  ["claude-opus-4-8", 5, 25, 0.5],
  ["claude-sonnet-5", 2, 10, 0.2],
  ["claude-sonnet-5-5", 2, 10, 0.1],
  ["claude-opus-5", 5, 25, 0.5],
  ["claude-opus-5-5", 4, 20, 0.2],
  ["claude-haiku-5-5", 0.1, 0.5, 0.01],
  ["gpt-5", 1.25, 10, 0.125],
  ["gpt-5-mini", 0.25, 2, 0.025],
  ["gpt-5-nano", 0.05, 0.4, 0.005],
  ["gpt-5-codex", 1.25, 10, 0.125],
  ["gpt-5.1", 1.25, 10, 0.125],
  ["gpt-5.1-codex", 1.25, 10, 0.125],
  ["gpt-5.1-codex-max", 1.25, 10, 0.125],
  ["gpt-5.1-codex-mini", 0.25, 2, 0.025],
  ["gpt-5.2", 1.75, 14, 0.175],
  ["gpt-5.2-codex", 1.75, 14, 0.175],
  ["gpt-5.3-codex", 1.75, 14, 0.175],
  ["gpt-5.4", 2.5, 15, 0.25],
  ["gpt-5.4-mini", 0.75, 4.5, 0.075],
  ["gpt-5.4-nano", 0.2, 1.25, 0.02],
  ["gpt-5.5", 5, 30, 0.5],
  ["gpt-6.2-sol", 2, 10, 0.1],
  ["gemini-3-pro-preview", 2, 12, 0.2],
  ["gemini-3-flash-preview", 0.5, 3, 0.05],
  ["gemini-3.1-pro-preview", 2, 12, 0.2],
  // Gemini CLI's pro model on an API key: an endpoint of gemini-3.1-pro-preview tuned for custom tools, which
  // Google lists under that model's price rather than on its own
  ["gemini-3.1-pro-preview-customtools", 2, 12, 0.2],
  ["gemini-3.5-flash-lite", 0.3, 2.5, 0.03],
  ["gemini-3.8-flash", 0.75, 3.75, 0.075],
];

export const DEFAULT_MODEL_RATIO: Record<string, number> = {
  "gpt-3.5-turbo": 0.25,
  "gpt-4": 15,
  "gpt-4-turbo": 5,
  "gpt-4o": 1.25,
  "gpt-4o-mini": 0.075,
  "gpt-4.1": 1,
  "gpt-4.1-mini": 0.2,
  "gpt-4.1-nano": 0.05,
  "o1": 7.5,
  "o1-mini": 0.55,
  "o3": 1,
  "o3-mini": 0.55,
  "o4-mini": 0.55,
  "text-embedding-3-small": 0.01,
  "text-embedding-3-large": 0.065,
  "text-embedding-ada-002": 0.05,
  "omni-moderation-latest": 0,
  "text-moderation-latest": 0,
  "whisper-1": 15,
  "tts-1": 7.5,
  "tts-1-hd": 15,
  "claude-3-5-haiku-20241022": 0.4,
  "claude-3-5-sonnet-20241022": 1.5,
  "claude-3-7-sonnet-20250219": 1.5,
  "claude-sonnet-4-20250514": 1.5,
  "claude-opus-4-20250514": 7.5,
  "claude-3-haiku-20240307": 0.125,
  "claude-3-opus-20240229": 7.5,
  "claude-opus-4-1-20250805": 7.5,
  "claude-sonnet-4-5-20250929": 1.5,
  "claude-haiku-4-5-20251001": 0.5,
  "gemini-1.5-flash": 0.0375,
  "gemini-1.5-pro": 0.625,
  "gemini-2.0-flash": 0.05,
  "gemini-2.5-flash": 0.15,
  "gemini-2.5-pro": 0.625,
  "gemini-2.5-flash-lite": 0.05,
  "gemini-2.0-flash-lite": 0.0375,
  // Experimental, free on AI Studio's free tier; paid use is billed as gemini-2.0-flash.
  "gemini-2.0-flash-exp-image-generation": 0.05,
  "text-embedding-004": 0.01,
  "gemini-embedding-001": 0.075,
  "deepseek-chat": 0.135,
  "deepseek-reasoner": 0.275,
  // OpenRouter passes the provider's own price through.
  "openai/gpt-4o": 1.25,
  "anthropic/claude-3.5-sonnet": 1.5,
  "google/gemini-2.5-flash": 0.15,
  "grok-3": usd(3),
  "grok-3-mini": usd(0.3),
  "grok-2": usd(2),
  "mistral-large-latest": usd(2),
  "mistral-small-latest": usd(0.1),
  "open-mistral-nemo": usd(0.15),
  "mistral-embed": usd(0.1),
  "command-r": usd(0.15),
  "command-r-plus": usd(2.5),
  "jina-embeddings-v3": usd(0.05),
  "jina-reranker-v2-base-multilingual": usd(0.05),
  "@cf/meta/llama-3.1-8b-instruct": usd(0.282),
  // Self-hosted (Ollama, M3E) models have no list price: they are priced as the same or a like open
  // model on a public host, so a default install never serves them for free by accident.
  "llama3.1": usd(0.05), // Llama 3.1 8B on Groq
  "qwen2.5": cny(0.35), // Qwen2.5-7B-Instruct on SiliconCloud (paid tier)
  "mistral": usd(0.25), // open-mistral-7b on Mistral's API
  "m3e-base": usd(0.02), // text-embedding-3-small
  "m3e-large": usd(0.02),
  "m3e-small": usd(0.02),
  // Prices in CNY per 1M input tokens, from each provider's price list.
  "ERNIE-4.0-8K": cny(30),
  "ERNIE-3.5-8K": cny(0.8),
  "ERNIE-Speed-128K": 0, // free on Qianfan
  "ernie-4.0-8k-latest": cny(30),
  "ernie-3.5-8k": cny(0.8),
  "glm-4": cny(100),
  "glm-4v": cny(50),
  "glm-3-turbo": cny(1),
  "glm-4-plus": cny(5),
  "glm-4-air": cny(0.5),
  "glm-4-flash": 0, // free on BigModel
  "embedding-3": cny(0.5),
  "qwen-turbo": cny(0.3),
  "qwen-plus": cny(0.8),
  "qwen-max": cny(2.4),
  "text-embedding-v1": cny(0.7),
  // iFlytek sells token packages rather than a per-token list price: one-api's default (¥18 per 1M).
  "SparkDesk-v3.5": cny(18),
  "SparkDesk-v4.0": cny(18),
  "360GPT_S2_V9": cny(12),
  "embedding-bert-512-v1": cny(1),
  "hunyuan-lite": 0, // free on Tencent Cloud
  "hunyuan-standard": cny(0.8),
  "hunyuan-pro": cny(30),
  "moonshot-v1-8k": cny(2),
  "moonshot-v1-32k": cny(5),
  "moonshot-v1-128k": cny(10),
  "yi-large": cny(20),
  "yi-medium": cny(2.5),
  "yi-lightning": cny(0.99),
  "abab6.5s-chat": cny(10),
  "abab6.5-chat": cny(30),
  "deepseek-ai/DeepSeek-V3": cny(2),
  "Qwen/Qwen2.5-72B-Instruct": cny(4.13),
  "BAAI/bge-m3": 0, // free on SiliconCloud
  "doubao-pro-32k": cny(0.8),
  "doubao-lite-32k": cny(0.3),
  "ERNIE-Lite-8K": 0, // free on Qianfan
  "Embedding-V1": cny(0.5),
  // Zhipu's legacy v3 models (one-api's prices: ¥0.005, 0.01, 0.005 and 0.002 per 1K tokens)
  "chatglm_turbo": cny(5),
  "chatglm_pro": cny(10),
  "chatglm_std": cny(5),
  "chatglm_lite": cny(2),
  "text-embedding-v3": cny(0.5),
  "gte-rerank": cny(0.8),
  "qwen-tts": cny(1.6), // billed on the input text
  "SparkDesk": cny(18),
  "SparkDesk-v1.1": 0, // Spark Lite is free
  "SparkDesk-v2.1": cny(18),
  "SparkDesk-v3.1": cny(18),
  "360gpt-pro": cny(12),
  "360gpt-turbo": cny(2),
  "hunyuan-turbo": cny(15),
  "hunyuan-embedding": cny(0.7),
  "command-a-03-2025": usd(2.5),
  "command-r7b-12-2024": usd(0.0375),
  "embed-english-v3.0": usd(0.1),
  "embed-multilingual-v3.0": usd(0.1),
  "MiniMax-M1": cny(0.8),
  "MiniMax-Text-01": cny(1),
  // A Dify app's own model decides what it really costs: priced as a small model until you set your own.
  "dify": usd(0.15),
  "@cf/meta/llama-3.3-70b-instruct-fp8-fast": usd(0.293),
  "@cf/baai/bge-m3": usd(0.012),
  ...Object.fromEntries(AGENT_MODELS.map(([m, input]) => [m, usd(input)])),
};

export const DEFAULT_COMPLETION_RATIO: Record<string, number> = {
  "gpt-3.5-turbo": 3,
  "gpt-4": 2,
  "gpt-4-turbo": 3,
  "gpt-4o": 4,
  "gpt-4o-mini": 4,
  "gpt-4.1": 4,
  "gpt-4.1-mini": 4,
  "gpt-4.1-nano": 4,
  "o1": 4,
  "o1-mini": 4,
  "o3": 4,
  "o3-mini": 4,
  "o4-mini": 4,
  "claude-3-5-haiku-20241022": 5,
  "claude-3-5-sonnet-20241022": 5,
  "claude-3-7-sonnet-20250219": 5,
  "claude-sonnet-4-20250514": 5,
  "claude-opus-4-20250514": 5,
  "claude-3-haiku-20240307": 5,
  "claude-3-opus-20240229": 5,
  "claude-opus-4-1-20250805": 5,
  "claude-sonnet-4-5-20250929": 5,
  "claude-haiku-4-5-20251001": 5,
  "gemini-1.5-flash": 4,
  "gemini-1.5-pro": 4,
  "gemini-2.0-flash": 4,
  "gemini-2.5-flash": round(2.5 / 0.3),
  "gemini-2.5-pro": 8,
  "gemini-2.5-flash-lite": 4,
  "gemini-2.0-flash-lite": 4,
  "gemini-2.0-flash-exp-image-generation": 4,
  "deepseek-chat": 4,
  "deepseek-reasoner": 4,
  "openai/gpt-4o": 4,
  "anthropic/claude-3.5-sonnet": 5,
  "google/gemini-2.5-flash": round(2.5 / 0.3),
  "grok-3": 5,
  "grok-3-mini": round(0.5 / 0.3),
  "grok-2": 5,
  "mistral-large-latest": 3,
  "mistral-small-latest": 3,
  "command-r": 4,
  "command-r-plus": 4,
  "@cf/meta/llama-3.1-8b-instruct": round(0.827 / 0.282),
  "llama3.1": round(0.08 / 0.05),
  "ERNIE-4.0-8K": 3,
  "ERNIE-3.5-8K": 2.5,
  "ernie-4.0-8k-latest": 3,
  "ernie-3.5-8k": 2.5,
  "qwen-turbo": 2,
  "qwen-plus": 2.5,
  "qwen-max": 4,
  "hunyuan-standard": 2.5,
  "hunyuan-pro": round(100 / 30),
  "moonshot-v1-8k": 5,
  "moonshot-v1-32k": 4,
  "moonshot-v1-128k": 3,
  "deepseek-ai/DeepSeek-V3": 4,
  "doubao-pro-32k": 2.5,
  "doubao-lite-32k": 2,
  "hunyuan-turbo": round(50 / 15),
  "command-a-03-2025": 4,
  "command-r7b-12-2024": 4,
  "MiniMax-M1": 10,
  "MiniMax-Text-01": 8,
  "dify": 4,
  "@cf/meta/llama-3.3-70b-instruct-fp8-fast": round(2.253 / 0.293),
  ...Object.fromEntries(AGENT_MODELS.map(([m, input, output]) => [m, round(output / input)])),
};

export const DEFAULT_CACHE_RATIO: Record<string, number> = {
  "gpt-4o": 0.5,
  "gpt-4o-mini": 0.5,
  "gpt-4.1": 0.25,
  "gpt-4.1-mini": 0.25,
  "gpt-4.1-nano": 0.25,
  "o1": 0.5,
  "o3": 0.25,
  "o3-mini": 0.5,
  "o4-mini": 0.25,
  "claude-3-5-haiku-20241022": 0.1,
  "claude-3-5-sonnet-20241022": 0.1,
  "claude-3-7-sonnet-20250219": 0.1,
  "claude-sonnet-4-20250514": 0.1,
  "claude-opus-4-20250514": 0.1,
  "claude-3-haiku-20240307": 0.12,
  "claude-3-opus-20240229": 0.1,
  "claude-opus-4-1-20250805": 0.1,
  "claude-sonnet-4-5-20250929": 0.1,
  "claude-haiku-4-5-20251001": 0.1,
  "deepseek-chat": 0.25,
  "deepseek-reasoner": 0.25,
  // Gemini 2.5 reads its implicit cache at a tenth of the input price.
  "gemini-2.5-pro": 0.1,
  "gemini-2.5-flash": 0.1,
  "gemini-2.5-flash-lite": 0.1,
  ...Object.fromEntries(AGENT_MODELS.map(([m, input, , cached]) => [m, round(cached / input)])),
};

export const DEFAULT_MODEL_PRICE: Record<string, number> = {
  "dall-e-3": 0.04,
  "dall-e-2": 0.02,
  "gpt-image-1": 0.04,
  // Cohere bills reranking per search: $2 per 1,000.
  "rerank-english-v3.0": 0.002,
  "rerank-multilingual-v3.0": 0.002,
  "rerank-v3.5": 0.002,
  // Tongyi Wanxiang: ¥0.16 per image
  "wanx-v1": round(0.16 / CNY_PER_USD),
  // Drawing actions, Suno tasks and video seconds (server/catalogue/tasks.ts).
  ...DEFAULT_TASK_PRICES,
};

export const DEFAULT_GROUP_RATIO: Record<string, number> = { default: 1, vip: 1, svip: 1 };
export const DEFAULT_USER_USABLE_GROUPS: Record<string, string> = { default: "default group", vip: "vip group" };

/**
 * The model a thinking-adapter name ("-thinking", "-thinking-<budget>", "-nothinking") is priced as:
 * the suffix only switches the upstream's thinking on or off, the upstream bills the base model.
 */
export function thinkingBaseModel(model: string): string {
  const m = /^(.+)-(?:thinking(?:-\d+)?|nothinking)$/.exec(model);
  return m ? m[1]! : model;
}

/**
 * new-api's built-in completion ratios, applied when CompletionRatio has no entry for the model (so a database
 * moved from new-api bills the same): its rules by model family, or undefined when it has none (then 1).
 */
export function builtinCompletionRatio(model: string): number | undefined {
  const m = model;
  const starts = (p: string) => m.startsWith(p);
  if (m.endsWith("-all") || m.endsWith("-gizmo-*")) return 2;
  if (starts("gpt-3.5")) {
    if (m === "gpt-3.5-turbo" || m.endsWith("0125")) return 3;
    if (m.endsWith("1106")) return 2;
    return 4 / 3;
  }
  if (starts("gpt-4o")) {
    if (m === "gpt-4o-2024-05-13") return 3;
    if (starts("gpt-4o-mini-tts")) return 20;
    return 4;
  }
  if (starts("gpt-5")) return 8;
  if (starts("gpt-4.5-preview")) return 2;
  if (starts("gpt-4-turbo") || m.endsWith("gpt-4-1106") || m.endsWith("gpt-4-1105")) return 3;
  if (starts("gpt-4")) return 2;
  if (starts("o1") || starts("o3")) return 4;
  if (m === "chatgpt-4o-latest") return 3;
  if (m.includes("claude-instant-1") || m.includes("claude-2")) return 3;
  if (
    m.includes("claude-3")
    || m.includes("claude-sonnet-4")
    || m.includes("claude-opus-4")
    || m.includes("claude-haiku-4")
  )
    return 5;
  if (starts("mistral-")) return 3;
  if (starts("gemini-")) {
    if (starts("gemini-1.5") || starts("gemini-2.0")) return 4;
    if (starts("gemini-2.5-pro")) return 8;
    if (starts("gemini-2.5-flash-lite")) return 4;
    if (starts("gemini-2.5-flash-preview")) return m.endsWith("-nothinking") ? 4 : 3.5 / 0.15;
    if (starts("gemini-2.5-flash")) return 2.5 / 0.3;
    if (starts("gemini-3-pro-image")) return 60;
    if (starts("gemini-3-pro") || starts("gemini-3.1-pro")) return 6;
    return 4;
  }
  if (starts("command")) return ({ "command-r": 3, "command-r-plus": 5 } as Record<string, number>)[m] ?? 4;
  if (starts("ERNIE-Speed-") || starts("ERNIE-Lite-") || starts("ERNIE-Character") || starts("ERNIE-Functions"))
    return 2;
  return (
    { "llama2-70b-4096": 0.8 / 0.64, "llama3-8b-8192": 2, "llama3-70b-8192": 0.79 / 0.59 } as Record<string, number>
  )[m];
}
