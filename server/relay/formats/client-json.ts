// The client's own JSON text sent upstream in place of JSON.stringify of its parse (hot-path rule 7). A chat
// request carries its whole conversation: re-serialising it on every call costs the event loop as much again as
// parsing it, for a text equal to what the client sent whenever the gateway changes nothing but what it can
// write into the text itself (the stream usage request, a mapped model).
import { stringEnd } from "../body.ts";
import { JoinedText } from "../../infra/stream-client.ts";

/** The client's JSON text and the object parsed from it, while nothing has changed that object: whoever changes
 * the request's body in place drops its RelayRequest.json (relay/cache/key.ts). */
export interface ClientJson {
  body: object;
  text: string;
}

/** What an upstream call sends for its body (ProviderCall.json): the client's text, or that text with the stream
 * usage request written in, kept as pieces when it is long (JoinedText). */
export interface SentJson {
  body: object;
  text: string | JoinedText;
}

/** A text this long gets the usage request as a JoinedText of its pieces instead of a joined string. */
const PIECES_FROM_CHARS = 16 * 1024;

const USAGE_REQUEST = '"stream_options":{"include_usage":true}';

/** Bodies up to this long are serialised rather than scanned for their model: below 1 KB serialising is as cheap,
 * above it the scan of the top-level keys is several times cheaper. */
const MAPPED_TEXT_CHARS = 1024;

/** withModel for a body over MAPPED_TEXT_CHARS; undefined (serialise it) for a smaller one. */
export function renamedText(text: string, model: string): string | undefined {
  return text.length > MAPPED_TEXT_CHARS ? withModel(text, model) : undefined;
}

/**
 * `text` (a JSON object's text) with its top-level "model" string replaced by `model`, or undefined when that
 * cannot be done safely: no such string, or a top-level key written with escapes (JSON.parse would read it as
 * a key this scan does not see). With the key twice, the last is the one JSON.parse keeps, and replaced.
 */
export function withModel(text: string, model: string): string | undefined {
  let depth = 0;
  let key = false;
  let value = -1;
  let valueEnd = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      if (end < 0) return undefined;
      if (depth === 1 && key) {
        key = false;
        for (let j = i + 1; j < end; j++) if (text.charCodeAt(j) === 0x5c) return undefined;
        if (end - i === 6 && text.startsWith('"model"', i)) {
          let j = end + 1;
          while (isSpace(text.charCodeAt(j))) j++;
          if (text.charCodeAt(j) !== 0x3a) return undefined;
          j++;
          while (isSpace(text.charCodeAt(j))) j++;
          if (text.charCodeAt(j) !== 0x22) return undefined;
          value = j;
          valueEnd = stringEnd(text, j);
          if (valueEnd < 0) return undefined;
          i = valueEnd;
          continue;
        }
      }
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      key = depth === 1 && c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && depth === 1) key = true;
  }
  if (value < 0) return undefined;
  return text.slice(0, value) + JSON.stringify(model) + text.slice(valueEnd + 1);
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The text of `body` with stream_options.include_usage set, written into the client's text, or undefined when
 * the body has stream_options of its own that lack it (then the body is serialised). `text` is the JSON text of
 * `body`, an object.
 */
export function withUsageRequest(text: string, body: Record<string, any>): string | JoinedText | undefined {
  const options = body.stream_options;
  if (options === undefined) {
    const close = text.lastIndexOf("}");
    let k = close - 1;
    while (k >= 0 && isSpace(text.charCodeAt(k))) k--;
    const insert = (text.charCodeAt(k) === 0x7b ? "" : ",") + USAGE_REQUEST;
    // Slices of the client's text share its memory; the joined string would be a copy of it all.
    if (text.length > PIECES_FROM_CHARS) return new JoinedText([text.slice(0, close), insert, text.slice(close)]);
    return text.slice(0, close) + insert + text.slice(close);
  }
  if (options && typeof options === "object" && options.include_usage === true) return text;
  return undefined;
}

/** The JSON text to send for `body`: the client's own when `body` is what the relay built from it unchanged. */
export function jsonText(sent: SentJson | undefined, body: unknown): string | JoinedText {
  return sent !== undefined && sent.body === body ? sent.text : JSON.stringify(body);
}
