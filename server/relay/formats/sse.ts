// Server-sent events, read incrementally: bytes in, whole events out, never holding more than the
// unfinished tail of the current event.
import type { SseEvent } from "../providers/types.ts";

export class SseReader {
  private decoder = new TextDecoder();
  private buf = "";

  /** Feeds a chunk and returns every event it completed. */
  push(chunk: Uint8Array): SseEvent[] {
    this.buf += this.decoder.decode(chunk, { stream: true });
    return this.drain(false);
  }

  /** Returns what is left when the stream ends (an event without its closing blank line). */
  finish(): SseEvent[] {
    this.buf += this.decoder.decode();
    return this.drain(true);
  }

  private drain(final: boolean): SseEvent[] {
    const out: SseEvent[] = [];
    if (this.buf.includes("\r")) this.buf = this.buf.replace(/\r\n?/g, "\n");
    let at: number;
    while ((at = this.buf.indexOf("\n\n")) !== -1) {
      const block = this.buf.slice(0, at);
      this.buf = this.buf.slice(at + 2);
      const ev = parseBlock(block);
      if (ev) out.push(ev);
    }
    if (final && this.buf.trim() !== "") {
      const ev = parseBlock(this.buf);
      this.buf = "";
      if (ev) out.push(ev);
    }
    return out;
  }
}

function parseBlock(block: string): SseEvent | null {
  let event: string | undefined;
  let data: string | null = null;
  for (const line of block.split("\n")) {
    if (line.startsWith("data:")) {
      const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === null ? v : data + "\n" + v;
    } else if (line.startsWith("event:")) {
      event = line.slice(6).trim();
    }
  }
  if (data === null && event === undefined) return null;
  return { event, data: data ?? "", raw: block + "\n\n" };
}

/** Frames one data payload (and optional event name) as SSE text. */
export function sseFrame(data: string, event?: string): string {
  return (event ? `event: ${event}\n` : "") + `data: ${data}\n\n`;
}

export const SSE_DONE = "data: [DONE]\n\n";
