// AWS's binary event-stream framing (application/vnd.amazon.eventstream), used by Bedrock's
// InvokeModelWithResponseStream. Each message: total length (u32 BE), headers length (u32 BE),
// prelude CRC32, headers, payload, message CRC32. Header: name length (u8), name, value type (u8),
// value. Decoded incrementally; never buffers more than one unfinished message.

export interface EventStreamMessage {
  headers: Record<string, string | number | boolean | Uint8Array>;
  payload: Uint8Array;
}

const PRELUDE = 12;
const MIN_MESSAGE = 16;
const MAX_MESSAGE = 24 * 1024 * 1024;

const crc32 = (b: Uint8Array) => Bun.hash.crc32(b) >>> 0;

function readHeaders(b: Uint8Array): EventStreamMessage["headers"] {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out: EventStreamMessage["headers"] = {};
  const dec = new TextDecoder();
  let at = 0;
  while (at < b.length) {
    const nameLen = b[at]!;
    const name = dec.decode(b.subarray(at + 1, at + 1 + nameLen));
    at += 1 + nameLen;
    const type = b[at++]!;
    switch (type) {
      case 0:
        out[name] = true;
        break;
      case 1:
        out[name] = false;
        break;
      case 2:
        out[name] = view.getInt8(at);
        at += 1;
        break;
      case 3:
        out[name] = view.getInt16(at);
        at += 2;
        break;
      case 4:
        out[name] = view.getInt32(at);
        at += 4;
        break;
      case 5:
        out[name] = Number(view.getBigInt64(at));
        at += 8;
        break;
      case 6:
      case 7: {
        const len = view.getUint16(at);
        const v = b.subarray(at + 2, at + 2 + len);
        out[name] = type === 7 ? dec.decode(v) : v.slice();
        at += 2 + len;
        break;
      }
      case 8:
        out[name] = Number(view.getBigInt64(at));
        at += 8;
        break; // timestamp, ms since epoch
      case 9:
        out[name] = b.slice(at, at + 16);
        at += 16;
        break; // uuid
      default:
        throw new Error(`event stream: unknown header value type ${type}`);
    }
  }
  return out;
}

export class EventStreamDecoder {
  private buf = new Uint8Array(0);

  /** Feeds bytes; returns every message they completed. Throws on a corrupt frame. */
  push(chunk: Uint8Array): EventStreamMessage[] {
    const joined = new Uint8Array(this.buf.length + chunk.length);
    joined.set(this.buf);
    joined.set(chunk, this.buf.length);
    this.buf = joined;
    const out: EventStreamMessage[] = [];
    while (this.buf.length >= PRELUDE) {
      const view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
      const total = view.getUint32(0);
      const headersLen = view.getUint32(4);
      if (total < MIN_MESSAGE || total > MAX_MESSAGE || headersLen > total - MIN_MESSAGE)
        throw new Error("event stream: bad message length");
      if (view.getUint32(8) !== crc32(this.buf.subarray(0, 8)))
        throw new Error("event stream: prelude checksum mismatch");
      if (this.buf.length < total) break;
      if (view.getUint32(total - 4) !== crc32(this.buf.subarray(0, total - 4)))
        throw new Error("event stream: message checksum mismatch");
      out.push({
        headers: readHeaders(this.buf.subarray(PRELUDE, PRELUDE + headersLen)),
        payload: this.buf.slice(PRELUDE + headersLen, total - 4),
      });
      this.buf = this.buf.slice(total);
    }
    return out;
  }

  /** True when bytes of an unfinished message are left over. */
  get pending(): boolean {
    return this.buf.length > 0;
  }
}

/** Encodes one message with string headers (the mock upstream and tests use it). */
export function encodeEventStreamMessage(headers: Record<string, string>, payload: Uint8Array | string): Uint8Array {
  const enc = new TextEncoder();
  const body = typeof payload === "string" ? enc.encode(payload) : payload;
  const parts: Uint8Array[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = enc.encode(name);
    const v = enc.encode(value);
    const h = new Uint8Array(1 + n.length + 1 + 2 + v.length);
    h[0] = n.length;
    h.set(n, 1);
    h[1 + n.length] = 7;
    new DataView(h.buffer).setUint16(2 + n.length, v.length);
    h.set(v, 4 + n.length);
    parts.push(h);
  }
  const headersLen = parts.reduce((s, p) => s + p.length, 0);
  const total = PRELUDE + headersLen + body.length + 4;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, total);
  view.setUint32(4, headersLen);
  view.setUint32(8, crc32(out.subarray(0, 8)));
  let at = PRELUDE;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  out.set(body, at);
  view.setUint32(total - 4, crc32(out.subarray(0, total - 4)));
  return out;
}
