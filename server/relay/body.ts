// Relay request bodies, read within bounds: every route has a byte cap (the media routes the server-wide
// MAX_BODY_BYTES, text-only routes less), checked against Content-Length before anything is read and
// while a chunked body streams in; a JSON body's shape is checked in one linear pass before JSON.parse,
// so nesting that would overflow the stack later (JSON.stringify to the upstream, deep copies) and
// arrays of millions of values are refused with a 400 before they cost anything.
import { AppError } from "../http/errors.ts";
import type { RelayMode } from "./providers/types.ts";

const MiB = 1024 * 1024;

/** Routes whose requests carry text only: their cap is this or MAX_BODY_BYTES, whichever is lower. */
const TEXT_ROUTE_BYTES: Partial<Record<RelayMode, number>> = {
  completions: 8 * MiB,
  embeddings: 8 * MiB,
  rerank: 8 * MiB,
  images: 1 * MiB,
  audio_speech: 1 * MiB,
};

/** The byte cap of a relay route: chat, responses, moderations, audio uploads and the native routes take images and files. */
export function bodyLimit(mode: RelayMode | "native", maxBodyBytes: number): number {
  const cap = mode === "native" ? undefined : TEXT_ROUTE_BYTES[mode];
  return cap === undefined ? maxBodyBytes : Math.min(cap, maxBodyBytes);
}

/** Deeper JSON is refused: requests nest a few levels, tool schemas a few dozen. */
export const MAX_JSON_DEPTH = 128;
/** More JSON values (objects, arrays and list items) are refused: 300,000 token ids of embeddings input fit. */
export const MAX_JSON_VALUES = 500_000;

function tooLarge(limit: number): AppError {
  return new AppError(413, `request body too large (limit ${limit} bytes)`, "request_too_large");
}

/** The body as text, refused (413) as soon as it is known to exceed `limit` bytes. */
export async function readBodyText(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > limit) throw tooLarge(limit);
  // A declared length within the cap cannot be exceeded: read it natively (a stream reader per request
  // was about a tenth of the relay's CPU).
  if (declared <= limit) return request.text();
  if (!request.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/**
 * Why a JSON text is refused, or null. One pass over the text: strings are skipped with indexOf, and the
 * pass stops at the first bracket past MAX_JSON_DEPTH or value past MAX_JSON_VALUES. It does not
 * validate: malformed text is left for JSON.parse to refuse.
 */
export function jsonShapeError(text: string, maxDepth = MAX_JSON_DEPTH, maxValues = MAX_JSON_VALUES): string | null {
  // The usual request cannot break either cap: every value counted is a character of its own, and every level
  // of nesting an opening bracket. Counting brackets by indexOf (strings' included) is a fraction of the pass
  // below, which visits each string (hot-path rule 6).
  if (text.length <= maxValues && bracketsAtMost(text, maxDepth)) return null;
  let depth = 0;
  let values = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = stringEnd(text, i);
      if (i < 0) return null;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return `the request body nests deeper than ${maxDepth} levels`;
      if (++values > maxValues) return `the request body holds more than ${maxValues} JSON values`;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    } else if (c === 0x2c) {
      if (++values > maxValues) return `the request body holds more than ${maxValues} JSON values`;
    }
  }
  return null;
}

/** Whether `text` holds at most `max` opening brackets, inside strings or not (stops counting past `max`). */
function bracketsAtMost(text: string, max: number): boolean {
  let n = 0;
  for (let i = text.indexOf("{"); i >= 0; i = text.indexOf("{", i + 1)) if (++n > max) return false;
  for (let i = text.indexOf("["); i >= 0; i = text.indexOf("[", i + 1)) if (++n > max) return false;
  return true;
}

/** The index of the quote closing the string opened at `open`, or -1. Backslashes are counted only
 * in the run right before each quote, so the whole scan stays linear. */
export function stringEnd(text: string, open: number): number {
  let j = open + 1;
  for (;;) {
    j = text.indexOf('"', j);
    if (j < 0) return -1;
    let k = j - 1;
    while (text.charCodeAt(k) === 0x5c) k--;
    if ((j - 1 - k) % 2 === 0) return j;
    j++;
  }
}

/** A relay request's JSON object: shape checked, then parsed; a 400 for anything else. */
export function parseJsonObject(raw: unknown): Record<string, any> {
  let body: any = raw;
  if (typeof raw === "string") {
    const refused = jsonShapeError(raw);
    if (refused) throw new AppError(400, refused);
    try {
      body = JSON.parse(raw);
    } catch {
      throw new AppError(400, "malformed request body: expected valid JSON");
    }
  }
  if (!body || typeof body !== "object" || Array.isArray(body))
    throw new AppError(400, "the request body must be a JSON object");
  return body;
}

/** An Elysia route parser: the body as text within `limit` bytes (parseJsonObject reads it afterwards). */
export function textWithin(limit: number) {
  return ({ request }: { request: Request }) => readBodyText(request, limit);
}
