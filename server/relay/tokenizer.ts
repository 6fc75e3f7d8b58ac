// Token counting (o200k_base) for when an upstream reports no usage (streams without a usage chunk, cut
// streams, disconnected clients) and for the count_tokens endpoints. No input can make it slow:
//  - the encoder (bpe.ts) is linear on any text and exact: the same tokens as tiktoken;
//  - the work per call is capped in bpe.ts "steps", which cost about the same on any kind of text:
//    SYNC_STEPS on the event loop (~85,000 characters of English or code, ~30,000 of Chinese, ~22,000 of one
//    repeated letter), WORKER_STEPS in the counting worker that the async functions use
//    (about 128 times as much). Beyond the cap the rest of the text is extrapolated at the tokens per
//    character counted until then. The count of a text never depends on what was counted before.
// The rank tables are loaded on first use (slow, and ~30 MB): most calls never need them because upstreams
// report usage. The worker loads its own copy the first time an async count reaches it.
import { Bpe, type RankFile } from "./bpe.ts";

/** Work counted exactly per call by the synchronous functions, on the event loop (bpe.ts "steps"). */
export const SYNC_STEPS = 64 * 1024;
/** Work counted exactly per call by the async functions, in the counting worker. */
export const WORKER_STEPS = 8 * 1024 * 1024;
/** Texts up to this size are counted in place by the async functions once the tables are loaded here. */
const INLINE_CHARS = 4 * 1024;
/** Counts waiting for the worker beyond this are counted here, capped like the synchronous functions, once the
 * tables are loaded here; until then they wait for the worker too: loading them here would stall the event loop
 * (hot-path rule 3), as a burst of clients leaving their streams at once would otherwise cause. */
const MAX_WAITING = 64;

let o200k: Bpe | null = null;
let cl100k: Bpe | null = null;

export function o200kBase(): Bpe {
  return (o200k ??= new Bpe(require("js-tiktoken/ranks/o200k_base") as RankFile));
}

/** Whether this thread has loaded o200k_base (while the counting worker runs, the async counts never load it
 * on the event loop). */
export function o200kLoaded(): boolean {
  return o200k !== null;
}

export function cl100kBase(): Bpe {
  return (cl100k ??= new Bpe(require("js-tiktoken/ranks/cl100k_base") as RankFile));
}

/**
 * The text of token ids sent as embeddings input (number[] / number[][]). Clients tokenize for OpenAI's
 * embedding models, whose vocabulary is cl100k_base (tiktoken and LangChain do), not o200k. Null when an
 * id is not in it.
 */
export function decodeEmbeddingTokens(ids: number[]): string | null {
  return cl100kBase().decode(ids);
}

/**
 * The o200k_base token count of several texts as one call: counted exactly until `budget` steps of work
 * are spent (all texts together), the rest extrapolated at the tokens per character counted until then.
 */
export function countTextsNow(texts: readonly string[], budget = SYNC_STEPS): number {
  const bpe = o200kBase();
  const end = bpe.steps + budget;
  let exactChars = 0;
  let exactTokens = 0;
  let rest = 0;
  for (const text of texts) {
    if (!text) continue;
    const left = end - bpe.steps;
    const done = left > 0 ? bpe.countWithin(text, left) : { tokens: 0, chars: 0 };
    exactTokens += done.tokens;
    exactChars += done.chars;
    rest += text.length - done.chars;
  }
  if (rest === 0) return exactTokens;
  // Nothing counted exactly (a zero budget): one token per four characters.
  const rate = exactChars > 0 ? exactTokens / exactChars : 0.25;
  return exactTokens + Math.ceil(rest * rate);
}

/** The last long text counted: stream mappers ask for the same generated text more than once. */
let memo = { text: "", count: 0 };

/** The o200k_base token count of a text, counted now (exactly within SYNC_STEPS). */
export function countTokensNow(text: string): number {
  if (!text) return 0;
  if (text.length < 1024) return countTextsNow([text]);
  if (text === memo.text) return memo.count;
  const count = countTextsNow([text]);
  memo = { text, count };
  return count;
}

/** The o200k_base token count of a text, exactly within WORKER_STEPS, counted off the event loop. */
export function countTokens(text: string): Promise<number> {
  return countOffLoop([text], 0);
}

/** countTextsNow with WORKER_STEPS, counted off the event loop. */
export function countTexts(texts: string[]): Promise<number> {
  return countOffLoop(texts, 0);
}

/** The texts a prompt is counted from, plus the tokens of its framing. */
function promptParts(body: any): { texts: string[]; framing: number } {
  if (!Array.isArray(body?.messages)) return { texts: [promptText(body)], framing: 0 };
  // OpenAI's chat framing: 3 tokens per message and 3 to prime the reply.
  const texts: string[] = [];
  for (const m of body.messages) {
    texts.push(textOf(m?.content));
    if (typeof m?.name === "string") texts.push(m.name);
  }
  if (Array.isArray(body.tools)) texts.push(jsonText(body.tools));
  return { texts, framing: 3 + 3 * body.messages.length };
}

/** Chat prompts: the text of every message plus OpenAI's framing overhead (3 per message, 3 to prime the reply). */
export function countPromptTokensNow(body: any): number {
  const { texts, framing } = promptParts(body);
  return framing + countTextsNow(texts);
}

/** countPromptTokensNow, exactly within WORKER_STEPS, counted off the event loop. */
export function countPromptTokens(body: any): Promise<number> {
  const { texts, framing } = promptParts(body);
  return countOffLoop(texts, framing);
}

// The counting worker: started on the first async count that needs it, never keeps the process alive.
// If it cannot start or fails, counts are made here with the synchronous cap instead.
let worker: Worker | null = null;
let workerFailed = false;
let seq = 0;
const waiting = new Map<number, { texts: string[]; resolve: (n: number) => void }>();

function countOffLoop(texts: string[], framing: number): Promise<number> {
  let chars = 0;
  for (const t of texts) chars += t.length;
  if (chars === 0) return Promise.resolve(framing);
  if ((o200k && (chars <= INLINE_CHARS || waiting.size >= MAX_WAITING)) || workerFailed) {
    return Promise.resolve(framing + countTextsNow(texts));
  }
  const w = counter();
  if (!w) return Promise.resolve(framing + countTextsNow(texts));
  const id = ++seq;
  return new Promise((resolve) => {
    waiting.set(id, { texts, resolve: (n) => resolve(framing + n) });
    w.postMessage({ id, texts });
  });
}

function counter(): Worker | null {
  if (worker) return worker;
  try {
    const w = new Worker(workerUrl());
    w.onmessage = (e: MessageEvent<{ id: number; count: number }>) => {
      const job = waiting.get(e.data.id);
      if (!job) return;
      waiting.delete(e.data.id);
      job.resolve(e.data.count >= 0 ? e.data.count : countTextsNow(job.texts));
    };
    w.onerror = () => failWorker();
    (w as unknown as { unref(): void }).unref();
    worker = w;
    return w;
  } catch {
    failWorker();
    return null;
  }
}

/** From source the worker sits next to this file. In the compiled binary every module's import.meta.url
 * is the entry point's, and scripts/build.ts embeds the entry points under their paths below server/. */
function workerUrl(): string {
  const compiled = /\$bunfs|~BUN/.test(import.meta.url);
  return new URL(compiled ? "./relay/tokenizer-worker.ts" : "./tokenizer-worker.ts", import.meta.url).href;
}

function failWorker(): void {
  workerFailed = true;
  worker?.terminate();
  worker = null;
  for (const [id, job] of waiting) {
    waiting.delete(id);
    job.resolve(countTextsNow(job.texts));
  }
}

/** The body's keys whose strings or arrays are prompt text (one array for every call, not one per call). */
const PROMPT_KEYS = ["prompt", "input", "query", "instructions", "system"] as const;

/** Every piece of text a request sends to the model (for counting and the sensitive-word check). */
export function promptText(body: any): string {
  let out = "";
  eachPromptPiece(body, (piece) => (out += piece));
  return out;
}

/** The UTF-8 length of promptText(body), without joining the text: a 20 KB conversation's joined copy was a
 * fifth of what a call allocated, made only to be measured for the hold's estimate. */
export function promptBytes(body: any): number {
  let n = 0;
  eachPromptPiece(body, (piece) => (n += piece === "\n" ? 1 : Buffer.byteLength(piece, "utf8")));
  return n;
}

/** Calls `add` with the pieces promptText(body) is, in order: each text, and a line end after each. */
function eachPromptPiece(body: any, add: (piece: string) => void): void {
  if (!body || typeof body !== "object" || body instanceof FormData) return;
  if (Array.isArray(body.messages)) for (const m of body.messages) contentPieces(m?.content, add);
  for (const k of PROMPT_KEYS) {
    const v = body[k];
    if (typeof v === "string") contentPieces(v, add);
    else if (Array.isArray(v))
      for (const x of v) contentPieces(typeof x === "string" ? x : (x?.content ?? x?.text ?? ""), add);
  }
  if (Array.isArray(body.documents))
    for (const d of body.documents) contentPieces(typeof d === "string" ? d : d?.text, add);
  // Gemini: systemInstruction (the REST API also takes system_instruction) and contents[].parts[].text.
  const system = body.systemInstruction ?? body.system_instruction;
  if (Array.isArray(system?.parts)) contentPieces(system.parts, add);
  if (Array.isArray(body.contents))
    for (const c of body.contents) if (Array.isArray(c?.parts)) contentPieces(c.parts, add);
}

/** textOf(content) as pieces (an array's parts a line apart), then a line end. */
function contentPieces(content: unknown, add: (piece: string) => void): void {
  if (typeof content === "string") add(content);
  else if (Array.isArray(content)) {
    for (let i = 0; i < content.length; i++) {
      if (i > 0) add("\n");
      add(partText(content[i]));
    }
  }
  add("\n");
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map(partText).join("\n");
  return "";
}

/** The text of one part of a message's content: a string, or a part's `text`; anything else counts as none. */
function partText(p: any): string {
  return typeof p === "string" ? p : typeof p?.text === "string" ? p.text : "";
}

/** Tool definitions as counted text; a structure JSON cannot write (too deep) counts as nothing. */
function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v) ?? "";
  } catch {
    return "";
  }
}

/** A cheap upper-leaning estimate for pre-consumption (no tokenizer on the hot path): one token per 3 bytes. */
export function estimateTokens(text: string): number {
  return tokensOfBytes(Buffer.byteLength(text, "utf8"));
}

/** estimateTokens(promptText(body)), without joining the text (promptBytes). */
export function estimatePromptTokens(body: any): number {
  return tokensOfBytes(promptBytes(body));
}

function tokensOfBytes(bytes: number): number {
  return Math.ceil(bytes / 3);
}
