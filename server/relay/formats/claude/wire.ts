// Wire shapes of the two chat formats this folder translates between: OpenAI chat completions and
// Anthropic Messages. Only the fields the gateway reads or writes are typed; everything else passes
// through as unknown so a newer client field is never rejected here.

export interface OpenAIToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
  index?: number;
}

export type OpenAIContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: string } }
  | { type: string; [k: string]: unknown };

export interface OpenAIMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool" | string;
  content?: string | OpenAIContentPart[] | null;
  name?: string;
  tool_calls?: OpenAIToolCall[];
  tool_call_id?: string;
  reasoning_content?: string | null;
}

export interface OpenAITool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export type OpenAIToolChoice = "auto" | "none" | "required" | { type: "function"; function: { name: string } };

export interface OpenAIChatRequest {
  model: string;
  messages: OpenAIMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  n?: number;
  stop?: string | string[] | null;
  tools?: OpenAITool[];
  tool_choice?: OpenAIToolChoice;
  user?: string;
  reasoning_effort?: string;
  [k: string]: unknown;
}

export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number; cached_creation_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
  /** A Claude upstream's cache writes by TTL, under new-api's names (only when the upstream reported the split). */
  claude_cache_creation_5_m_tokens?: number;
  claude_cache_creation_1_h_tokens?: number;
}

export interface OpenAIChatResponse {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: {
    index: number;
    message: {
      role: "assistant";
      content: string | null;
      tool_calls?: OpenAIToolCall[];
      reasoning_content?: string;
      thinking_blocks?: unknown[];
    };
    finish_reason: string | null;
  }[];
  usage?: OpenAIUsage;
}

export interface OpenAIChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: {
      role?: "assistant";
      content?: string | null;
      reasoning_content?: string;
      tool_calls?: Partial<OpenAIToolCall>[];
    };
    finish_reason: string | null;
  }[];
  usage?: OpenAIUsage | null;
}

export type ClaudeImageSource = { type: "base64"; media_type: string; data: string } | { type: "url"; url: string };

export type ClaudeBlock =
  | { type: "text"; text: string; cache_control?: unknown }
  | { type: "image"; source: ClaudeImageSource }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content?: string | ClaudeBlock[]; is_error?: boolean }
  | { type: "thinking"; thinking: string; signature?: string }
  | { type: "redacted_thinking"; data: string }
  | { type: string; [k: string]: any };

export interface ClaudeMessage {
  /** "system": a mid-conversation system message; other roles are the upstream's to judge. */
  role: "user" | "assistant" | "system" | (string & {});
  content: string | ClaudeBlock[];
}

export interface ClaudeTool {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown>;
  type?: string;
  cache_control?: unknown;
}

export interface ClaudeRequest {
  model: string;
  max_tokens: number;
  messages: ClaudeMessage[];
  system?: string | { type: "text"; text: string; cache_control?: unknown }[];
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stream?: boolean;
  tools?: ClaudeTool[];
  tool_choice?: { type: "auto" | "any" | "tool" | "none"; name?: string; disable_parallel_tool_use?: boolean };
  thinking?:
    | { type: "enabled"; budget_tokens: number; display?: string }
    | { type: "disabled" }
    | { type: "adaptive"; display?: string };
  metadata?: { user_id?: string };
  [k: string]: unknown;
}

export interface ClaudeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** cache_creation_input_tokens by the TTL the writes were made with */
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null;
}

export interface ClaudeResponse {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: ClaudeBlock[];
  stop_reason: string | null;
  stop_sequence: string | null;
  usage: ClaudeUsage;
}

/** One server-sent event of a Claude stream: the `type` names the event. */
export type ClaudeStreamEvent = { type: string; [k: string]: any };
