// Token counting for when an upstream reports no usage (streams without a usage chunk, cut streams,
// disconnected clients). o200k_base is loaded on first use: the rank table costs ~300 ms to parse,
// and most calls never need it because upstreams report usage. Loading is synchronous so a stream
// mapper can count while it reports usage (StreamMapper.usage() is not async).
import { Tiktoken } from "js-tiktoken/lite";

let encoder: Tiktoken | null = null;

function load(): Tiktoken {
  if (!encoder) encoder = new Tiktoken(require("js-tiktoken/ranks/o200k_base"));
  return encoder;
}

let cl100k: Tiktoken | null = null;

/**
 * The text of token ids sent as embeddings input (number[] / number[][]). Clients tokenize for OpenAI's
 * embedding models, whose vocabulary is cl100k_base (tiktoken and LangChain do), not o200k. Null when an
 * id is not in it: decode() would drop the id silently.
 */
export function decodeEmbeddingTokens(ids: number[]): string | null {
  if (!cl100k) cl100k = new Tiktoken(require("js-tiktoken/ranks/cl100k_base"));
  for (const id of ids) if (!Number.isInteger(id) || cl100k.decode([id]) === "") return null;
  return cl100k.decode(ids);
}

/** The o200k_base token count of a text, counted now. */
export function countTokensNow(text: string): number {
  if (!text) return 0;
  return load().encode(text, [], []).length;
}

export async function countTokens(text: string): Promise<number> {
  return countTokensNow(text);
}

/** Chat prompts: the text of every message plus OpenAI's framing overhead (3 per message, 3 to prime the reply). */
export function countPromptTokensNow(body: any): number {
  if (Array.isArray(body?.messages)) {
    let n = 3;
    for (const m of body.messages) n += 3 + countTokensNow(textOf(m?.content)) + countTokensNow(typeof m?.name === "string" ? m.name : "");
    if (Array.isArray(body.tools)) n += countTokensNow(JSON.stringify(body.tools));
    return n;
  }
  return countTokensNow(promptText(body));
}

export async function countPromptTokens(body: any): Promise<number> {
  return countPromptTokensNow(body);
}

/** Every piece of text a request sends to the model (for counting and the sensitive-word check). */
export function promptText(body: any): string {
  if (!body || typeof body !== "object" || body instanceof FormData) return "";
  let out = "";
  if (Array.isArray(body.messages)) for (const m of body.messages) out += textOf(m?.content) + "\n";
  for (const k of ["prompt", "input", "query", "instructions", "system"]) {
    const v = body[k];
    if (typeof v === "string") out += v + "\n";
    else if (Array.isArray(v)) for (const x of v) out += (typeof x === "string" ? x : textOf(x?.content ?? x?.text ?? "")) + "\n";
  }
  if (Array.isArray(body.documents)) for (const d of body.documents) out += (typeof d === "string" ? d : textOf(d?.text)) + "\n";
  // Gemini: systemInstruction (the REST API also takes system_instruction) and contents[].parts[].text.
  const system = body.systemInstruction ?? body.system_instruction;
  if (Array.isArray(system?.parts)) out += textOf(system.parts) + "\n";
  if (Array.isArray(body.contents)) for (const c of body.contents) if (Array.isArray(c?.parts)) out += textOf(c.parts) + "\n";
  return out;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p: any) => (typeof p === "string" ? p : typeof p?.text === "string" ? p.text : "")).join("\n");
  return "";
}

/** A cheap upper-leaning estimate for pre-consumption (no tokenizer on the hot path): one token per 3 bytes. */
export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") / 3);
}
