// The channel type catalogue (spec 000 §3.5, 001 §3): one row per type — id, name, the provider kind that
// serves it, its default base URL and default models. Pure data, read by the server and the console alike.
import { DEFAULT_CHANNEL_MODELS } from "./models.ts";

export type ChannelKind =
  | "openai" // speaks the OpenAI wire format (one shared adaptor)
  | "azure" | "claude" | "gemini" | "aws" | "vertex"
  | "midjourney" | "suno" | "other";

export interface ChannelTypeInfo {
  id: number;
  name: string;
  /** which provider adaptor (and endpoint kinds) serve it */
  kind: ChannelKind;
  /** the upstream used when a channel leaves its base URL empty */
  baseUrl: string;
  /** the models the channel form fills in by default */
  models: readonly string[];
}

/** Channel type catalogue (spec 000 §3.5). baseUrl is the default upstream when a channel leaves it empty. */
const ROWS: readonly Omit<ChannelTypeInfo, "models">[] = [
  { id: 1, name: "OpenAI", kind: "openai", baseUrl: "https://api.openai.com" },
  { id: 2, name: "Midjourney Proxy", kind: "midjourney", baseUrl: "" },
  { id: 3, name: "Azure OpenAI", kind: "azure", baseUrl: "" },
  { id: 4, name: "Ollama", kind: "openai", baseUrl: "http://localhost:11434" },
  { id: 5, name: "Midjourney Proxy Plus", kind: "midjourney", baseUrl: "" },
  { id: 8, name: "Custom", kind: "openai", baseUrl: "" },
  { id: 11, name: "PaLM2", kind: "other", baseUrl: "" },
  { id: 14, name: "Anthropic Claude", kind: "claude", baseUrl: "https://api.anthropic.com" },
  { id: 15, name: "Baidu Wenxin", kind: "other", baseUrl: "https://aip.baidubce.com" },
  { id: 16, name: "Zhipu", kind: "other", baseUrl: "https://open.bigmodel.cn" },
  { id: 17, name: "Alibaba Qwen", kind: "openai", baseUrl: "https://dashscope.aliyuncs.com/compatible-mode" },
  { id: 18, name: "iFlytek Spark", kind: "other", baseUrl: "" },
  { id: 19, name: "360", kind: "openai", baseUrl: "https://ai.360.cn" },
  { id: 20, name: "OpenRouter", kind: "openai", baseUrl: "https://openrouter.ai/api" },
  { id: 21, name: "AI Proxy Library", kind: "other", baseUrl: "https://api.aiproxy.io" },
  { id: 22, name: "FastGPT", kind: "openai", baseUrl: "https://fastgpt.run/api/openapi" },
  { id: 23, name: "Tencent Hunyuan", kind: "other", baseUrl: "https://hunyuan.tencentcloudapi.com" },
  { id: 24, name: "Google Gemini", kind: "gemini", baseUrl: "https://generativelanguage.googleapis.com" },
  { id: 25, name: "Moonshot", kind: "openai", baseUrl: "https://api.moonshot.cn" },
  { id: 26, name: "Zhipu V4", kind: "openai", baseUrl: "https://open.bigmodel.cn/api/paas/v4" },
  { id: 31, name: "01.AI", kind: "openai", baseUrl: "https://api.lingyiwanwu.com" },
  { id: 33, name: "AWS Claude", kind: "aws", baseUrl: "" },
  { id: 34, name: "Cohere", kind: "other", baseUrl: "https://api.cohere.ai" },
  { id: 35, name: "MiniMax", kind: "openai", baseUrl: "https://api.minimax.chat" },
  { id: 36, name: "Suno", kind: "suno", baseUrl: "" },
  { id: 37, name: "Dify", kind: "other", baseUrl: "" },
  { id: 38, name: "Jina", kind: "openai", baseUrl: "https://api.jina.ai" },
  { id: 39, name: "Cloudflare", kind: "other", baseUrl: "https://api.cloudflare.com" },
  { id: 40, name: "SiliconCloud", kind: "openai", baseUrl: "https://api.siliconflow.cn" },
  { id: 41, name: "Vertex AI", kind: "vertex", baseUrl: "" },
  { id: 42, name: "Mistral", kind: "openai", baseUrl: "https://api.mistral.ai" },
  { id: 43, name: "DeepSeek", kind: "openai", baseUrl: "https://api.deepseek.com" },
  { id: 44, name: "MokaAI M3E", kind: "openai", baseUrl: "" },
  { id: 45, name: "Volcengine Doubao", kind: "openai", baseUrl: "https://ark.cn-beijing.volces.com/api/v3" },
  { id: 46, name: "Baidu Wenxin V2", kind: "openai", baseUrl: "https://qianfan.baidubce.com/v2" },
  { id: 47, name: "Xinference", kind: "openai", baseUrl: "" },
  { id: 48, name: "xAI", kind: "openai", baseUrl: "https://api.x.ai" },
];

export const CHANNEL_TYPES: readonly ChannelTypeInfo[] = ROWS.map((t) => ({ ...t, models: DEFAULT_CHANNEL_MODELS[t.id] ?? [] }));

const byId = new Map(CHANNEL_TYPES.map((t) => [t.id, t]));
export function channelType(id: number): ChannelTypeInfo | undefined {
  return byId.get(id);
}

