// Usage objects as OpenAI-style upstreams send them: chat/completions/embeddings use prompt_tokens and
// completion_tokens, the Responses API uses input_tokens and output_tokens.
import type { Usage } from "../types.ts";

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

export function usageFrom(obj: any): Usage | null {
  const u = obj?.usage ?? obj?.response?.usage;
  if (!u || typeof u !== "object") return null;
  const prompt = num(u.prompt_tokens ?? u.input_tokens);
  const completion = num(u.completion_tokens ?? u.output_tokens);
  const total = num(u.total_tokens) || prompt + completion;
  // Rerank upstreams often report only a total: it is all input.
  const promptTokens = prompt || (completion === 0 ? total : 0);
  // DeepSeek reports its cache hits as prompt_cache_hit_tokens (with the misses beside them), not in the details.
  const cached = num(
    u.prompt_tokens_details?.cached_tokens ?? u.input_tokens_details?.cached_tokens ?? u.prompt_cache_hit_tokens,
  );
  const out: Usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: Math.max(total, promptTokens + completion),
    cached_tokens: cached,
  };
  // Image and audio parts are priced by ImageRatio / AudioRatio (relay/billing.ts quotaFor).
  const image = num(u.prompt_tokens_details?.image_tokens ?? u.input_tokens_details?.image_tokens);
  const audioIn = num(u.prompt_tokens_details?.audio_tokens ?? u.input_tokens_details?.audio_tokens);
  const audioOut = num(u.completion_tokens_details?.audio_tokens ?? u.output_tokens_details?.audio_tokens);
  if (image) out.image_tokens = image;
  if (audioIn) out.audio_prompt_tokens = audioIn;
  if (audioOut) out.audio_completion_tokens = audioOut;
  return out;
}

/** Text a model generated inside one chunk or body of any OpenAI-style endpoint. */
export function generatedTextOf(obj: any): string {
  let out = "";
  if (typeof obj?.delta === "string") out += obj.delta; // Responses API *.delta events
  const choices = Array.isArray(obj?.choices) ? obj.choices : [];
  for (const c of choices) {
    const d = c.delta ?? c.message ?? {};
    if (typeof d.content === "string") out += d.content;
    if (typeof d.reasoning_content === "string") out += d.reasoning_content;
    if (Array.isArray(d.tool_calls))
      for (const t of d.tool_calls) out += (t?.function?.name ?? "") + (t?.function?.arguments ?? "");
    if (typeof c.text === "string") out += c.text;
  }
  return out;
}

/**
 * The usage of an answer known only by its tail (a large answer streamed through unparsed): the last
 * `"usage": {...}` object in the text, read by matching its braces. Null when there is none.
 */
export function usageFromTail(tail: string): Usage | null {
  return usageAt(tail, usageSpan(tail));
}

/**
 * The usage of a whole answer whose last member is its `"usage": {...}` and nothing but the object's closing
 * brace follows (as OpenAI writes it), or null — then the answer has to be parsed to be read.
 */
export function closingUsage(text: string): Usage | null {
  const span = usageSpan(text);
  return span && /^\s*\}\s*$/.test(text.slice(span.close + 1)) ? usageAt(text, span) : null;
}

/** Where the last `"usage": {...}` object of `text` opens and closes (its braces matched). */
function usageSpan(text: string): { open: number; close: number } | null {
  const at = text.lastIndexOf('"usage"');
  if (at < 0) return null;
  const open = text.indexOf("{", at);
  if (open < 0 || text.slice(at + 7, open).replace(/[\s:]/g, "") !== "") return null;
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
    } else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return { open, close: i };
  }
  return null;
}

function usageAt(text: string, span: { open: number; close: number } | null): Usage | null {
  if (!span) return null;
  try {
    return usageFrom({ usage: JSON.parse(text.slice(span.open, span.close + 1)) });
  } catch {
    return null;
  }
}

const USAGE_OBJECT = /"usage"\s*:\s*\{/;
/** Cheap test before parsing a chunk: most stream chunks carry no usage (or "usage":null). */
export const mayCarryUsage = (data: string) => USAGE_OBJECT.test(data);
