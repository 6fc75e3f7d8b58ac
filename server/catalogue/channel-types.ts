// The channel type catalogue (spec 000 §3.5, 001 §3): one row per type — id, name, the provider kind that
// serves it, its default base URL and default models. Pure data, read by the server and the console alike.
import { DEFAULT_CHANNEL_MODELS } from "./models.ts";

export type ChannelKind =
  | "openai" // speaks the OpenAI wire format (one shared adaptor, quirks per type in providers/openai/quirks.ts)
  | "azure"
  | "claude"
  | "gemini"
  | "aws"
  | "vertex"
  | "ali"
  | "baidu"
  | "zhipu"
  | "spark"
  | "aiproxy"
  | "tencent"
  | "cohere"
  | "dify"
  | "midjourney"
  | "suno"
  | "retired"; // the upstream is gone: calls are answered with which type to use instead

/** One extra field of the channel form (labels and hints are console i18n keys under ops.ch.*, or literal text). */
export interface ChannelFormField {
  label: string;
  placeholder: string;
  required?: boolean;
  /** filled in when the field is empty (the spec's type 18 version) */
  defaultValue?: string;
  /** values offered for the field (a select that also accepts other text) */
  options?: readonly string[];
  /** a line of help under the field (i18n key) */
  help?: string;
}

/** What the channel form asks for a type beyond the common fields (spec 001 §3 Channel, "types with special form fields"). */
export interface ChannelForm {
  /** the `other` column: API version, region, knowledge base, account ID ... */
  other?: ChannelFormField;
  /** the base URL field's label and hint, when the type needs its own address */
  baseUrl?: ChannelFormField;
  /** shows the OpenAI organization field */
  organization?: boolean;
  /** hint for the key box (credential formats) */
  keyHint?: string;
  /** the key is one JSON document (cloud credentials): batch splitting by line does not apply */
  jsonKey?: boolean;
}

export interface ChannelTypeInfo {
  id: number;
  name: string;
  /** which provider adaptor (and endpoint kinds) serve it */
  kind: ChannelKind;
  /** the upstream used when a channel leaves its base URL empty */
  baseUrl: string;
  /** the models the channel form fills in by default */
  models: readonly string[];
  /** extra fields of the channel form */
  form?: ChannelForm;
  /** the upstream was shut down: the type to use instead (kind "retired") */
  replacedBy?: number;
  /**
   * The OpenAI endpoints without a chat-completions twin that the upstream serves itself. A call to one it
   * lacks is answered through the channel's chat completions; a channel's `responses_api` setting overrides
   * this per channel (an upstream that gained the Responses API, or a proxy in front of OpenAI).
   */
  nativeEndpoints?: readonly NativeEndpoint[];
}

/** The relay endpoints whose native service the catalogue states per type (the rest follow the type's kind). */
export type NativeEndpoint = "/v1/responses" | "/v1/responses/compact";

/** The values of a channel's `responses_api` setting: the upstream serves the Responses API itself, or not. */
export const RESPONSES_API_SETTINGS = ["native", "chat"] as const;
export type ResponsesApiSetting = (typeof RESPONSES_API_SETTINGS)[number];
/** The channel kinds whose adaptor can send a Responses call upstream as it is (the others always convert). */
export const RESPONSES_CAPABLE_KINDS: readonly ChannelKind[] = ["openai", "azure"];

const MJ_FORM: ChannelForm = { baseUrl: { label: "ops.ch.mjUrl", placeholder: "ops.ch.mjUrlHint", required: true } };

/** Channel type catalogue (spec 000 §3.5). baseUrl is the default upstream when a channel leaves it empty. */
const ROWS: readonly Omit<ChannelTypeInfo, "models">[] = [
  {
    id: 1,
    name: "OpenAI",
    kind: "openai",
    baseUrl: "https://api.openai.com",
    form: { organization: true },
    nativeEndpoints: ["/v1/responses", "/v1/responses/compact"],
  },
  { id: 2, name: "Midjourney Proxy", kind: "midjourney", baseUrl: "", form: MJ_FORM },
  {
    id: 3,
    name: "Azure OpenAI",
    kind: "azure",
    baseUrl: "",
    form: {
      baseUrl: { label: "ops.ch.azureEndpoint", placeholder: "https://your-resource.openai.azure.com", required: true },
      other: { label: "ops.ch.apiVersion", placeholder: "2024-10-21", defaultValue: "2024-10-21" },
    },
    // from API version 2025-03-01-preview on (providers/azure: older versions go through chat)
    nativeEndpoints: ["/v1/responses"],
  },
  { id: 4, name: "Ollama", kind: "openai", baseUrl: "http://localhost:11434" },
  { id: 5, name: "Midjourney Proxy Plus", kind: "midjourney", baseUrl: "", form: MJ_FORM },
  // one-api / new-api store a custom channel's base URL as the full request URL, {model} standing for the model
  {
    id: 8,
    name: "Custom",
    kind: "openai",
    baseUrl: "",
    form: {
      baseUrl: {
        label: "ops.ch.fullUrl",
        placeholder: "https://example.com/v1/chat/completions",
        required: true,
        help: "ops.ch.fullUrlHelp",
      },
    },
  },
  // Google shut the PaLM API down (Gemini replaced it)
  { id: 11, name: "PaLM2", kind: "retired", baseUrl: "", replacedBy: 24 },
  { id: 14, name: "Anthropic Claude", kind: "claude", baseUrl: "https://api.anthropic.com" },
  {
    id: 15,
    name: "Baidu Wenxin",
    kind: "baidu",
    baseUrl: "https://aip.baidubce.com",
    form: { keyHint: "ops.ch.keyBaidu" },
  },
  { id: 16, name: "Zhipu", kind: "zhipu", baseUrl: "https://open.bigmodel.cn", form: { keyHint: "ops.ch.keyZhipu" } },
  { id: 17, name: "Alibaba Qwen", kind: "ali", baseUrl: "https://dashscope.aliyuncs.com" },
  {
    id: 18,
    name: "iFlytek Spark",
    kind: "spark",
    baseUrl: "wss://spark-api.xf-yun.com",
    form: {
      other: {
        label: "ops.ch.sparkVersion",
        placeholder: "v2.1",
        defaultValue: "v2.1",
        options: ["v1.1", "v2.1", "v3.1", "v3.5", "v4.0", "pro-128k", "max-32k"],
      },
      keyHint: "ops.ch.keySpark",
    },
  },
  { id: 19, name: "360", kind: "openai", baseUrl: "https://api.360.cn" },
  { id: 20, name: "OpenRouter", kind: "openai", baseUrl: "https://openrouter.ai/api" },
  {
    id: 21,
    name: "AI Proxy Library",
    kind: "aiproxy",
    baseUrl: "https://api.aiproxy.io",
    form: { other: { label: "ops.ch.knowledgeId", placeholder: "ops.ch.knowledgeIdHint", required: true } },
  },
  {
    id: 22,
    name: "FastGPT",
    kind: "openai",
    baseUrl: "https://api.fastgpt.in/api",
    form: {
      baseUrl: { label: "ops.ch.privateUrl", placeholder: "https://api.fastgpt.in/api" },
      keyHint: "ops.ch.keyFastgpt",
    },
  },
  {
    id: 23,
    name: "Tencent Hunyuan",
    kind: "tencent",
    baseUrl: "https://api.hunyuan.cloud.tencent.com",
    form: { keyHint: "ops.ch.keyTencent" },
  },
  { id: 24, name: "Google Gemini", kind: "gemini", baseUrl: "https://generativelanguage.googleapis.com" },
  { id: 25, name: "Moonshot", kind: "openai", baseUrl: "https://api.moonshot.cn" },
  { id: 26, name: "Zhipu V4", kind: "openai", baseUrl: "https://open.bigmodel.cn/api/paas/v4" },
  { id: 31, name: "01.AI", kind: "openai", baseUrl: "https://api.lingyiwanwu.com" },
  { id: 33, name: "AWS Claude", kind: "aws", baseUrl: "", form: { keyHint: "ops.ch.keyAws" } },
  { id: 34, name: "Cohere", kind: "cohere", baseUrl: "https://api.cohere.com" },
  { id: 35, name: "MiniMax", kind: "openai", baseUrl: "https://api.minimaxi.com" },
  {
    id: 36,
    name: "Suno",
    kind: "suno",
    baseUrl: "",
    form: { baseUrl: { label: "ops.ch.sunoUrl", placeholder: "ops.ch.sunoUrlHint", required: true } },
  },
  {
    id: 37,
    name: "Dify",
    kind: "dify",
    baseUrl: "https://api.dify.ai",
    form: { baseUrl: { label: "ops.ch.difyUrl", placeholder: "https://api.dify.ai" }, keyHint: "ops.ch.keyDify" },
  },
  { id: 38, name: "Jina", kind: "openai", baseUrl: "https://api.jina.ai" },
  {
    id: 39,
    name: "Cloudflare",
    kind: "openai",
    baseUrl: "https://api.cloudflare.com",
    form: { other: { label: "ops.ch.accountId", placeholder: "d6b5da8hk1awo8nap34ube6gh", required: true } },
  },
  {
    id: 40,
    name: "SiliconCloud",
    kind: "openai",
    baseUrl: "https://api.siliconflow.cn",
    form: {
      baseUrl: {
        label: "ops.ch.baseUrl",
        placeholder: "https://api.siliconflow.cn",
        options: ["https://api.siliconflow.cn", "https://api.siliconflow.com"],
      },
    },
  },
  {
    id: 41,
    name: "Vertex AI",
    kind: "vertex",
    baseUrl: "",
    form: { other: { label: "ops.ch.region", placeholder: "us-central1" }, keyHint: "ops.ch.keyVertex", jsonKey: true },
  },
  { id: 42, name: "Mistral", kind: "openai", baseUrl: "https://api.mistral.ai" },
  { id: 43, name: "DeepSeek", kind: "openai", baseUrl: "https://api.deepseek.com" },
  { id: 44, name: "MokaAI M3E", kind: "openai", baseUrl: "" },
  {
    id: 45,
    name: "Volcengine Doubao",
    kind: "openai",
    baseUrl: "https://ark.cn-beijing.volces.com/api/v3",
    form: {
      baseUrl: {
        label: "ops.ch.region",
        placeholder: "https://ark.cn-beijing.volces.com/api/v3",
        options: ["https://ark.cn-beijing.volces.com/api/v3", "https://ark.ap-southeast.bytepluses.com/api/v3"],
      },
    },
  },
  {
    id: 46,
    name: "Baidu Wenxin V2",
    kind: "openai",
    baseUrl: "https://qianfan.baidubce.com/v2",
    form: { keyHint: "ops.ch.keyQianfan" },
  },
  { id: 47, name: "Xinference", kind: "openai", baseUrl: "" },
  { id: 48, name: "xAI", kind: "openai", baseUrl: "https://api.x.ai" },
];

export const CHANNEL_TYPES: readonly ChannelTypeInfo[] = ROWS.map((t) => ({
  ...t,
  models: DEFAULT_CHANNEL_MODELS[t.id] ?? [],
}));

const byId = new Map(CHANNEL_TYPES.map((t) => [t.id, t]));
export function channelType(id: number): ChannelTypeInfo | undefined {
  return byId.get(id);
}

/** Whether a channel type's upstream serves the endpoint itself (see ChannelTypeInfo.nativeEndpoints). */
export function servesNatively(type: number, endpoint: NativeEndpoint): boolean {
  return byId.get(type)?.nativeEndpoints?.includes(endpoint) ?? false;
}
