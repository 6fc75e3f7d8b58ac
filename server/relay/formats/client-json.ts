// The client's own JSON text sent upstream in place of JSON.stringify of its parse. A chat request carries its
// whole conversation: re-serialising it cost the event loop ~4 µs at 2 KB, ~45 µs at 20 KB and ~160 µs at
// 100 KB on every call (as much again as parsing it), for a text equal to what the client sent whenever the
// gateway changes nothing but what it can write into the text itself (the stream usage request).

/** The client's JSON text and the object parsed from it, while nothing has changed that object: whoever changes
 * the request's body in place drops its RelayRequest.json (relay/cache/key.ts). */
export interface ClientJson {
  body: object;
  text: string;
}

const USAGE_REQUEST = '"stream_options":{"include_usage":true}';

/**
 * The text of `body` with stream_options.include_usage set, written into the client's text, or undefined when
 * the body has stream_options of its own that lack it (then the body is serialised). `text` is the JSON text of
 * `body`, an object.
 */
export function withUsageRequest(text: string, body: Record<string, any>): string | undefined {
  const options = body.stream_options;
  if (options === undefined) {
    const close = text.lastIndexOf("}");
    let k = close - 1;
    while (k >= 0 && (text.charCodeAt(k) === 0x20 || text.charCodeAt(k) === 0x0a || text.charCodeAt(k) === 0x0d || text.charCodeAt(k) === 0x09)) k--;
    return text.slice(0, close) + (text.charCodeAt(k) === 0x7b ? "" : ",") + USAGE_REQUEST + text.slice(close);
  }
  if (options && typeof options === "object" && options.include_usage === true) return text;
  return undefined;
}

/** The JSON text to send for `body`: the client's own when `body` is what the relay built from it unchanged. */
export function jsonText(sent: ClientJson | undefined, body: unknown): string {
  return sent !== undefined && sent.body === body ? sent.text : JSON.stringify(body);
}
