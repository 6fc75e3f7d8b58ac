// Server-sent events, read incrementally: bytes in, whole events out, never holding more than the
// unfinished tail of the current event.
import type { SseEvent } from "../providers/types.ts";

/** decode()'s options for a piece of a stream, made once instead of for every chunk. */
const STREAMING: TextDecodeOptions = { stream: true };

export class SseReader {
  private decoder = new TextDecoder();
  /** The unfinished event, in the pieces it arrived in: each new piece is scanned once, and the pieces are
   * joined only when the event completes (appending to one string made every scan flatten and rescan the
   * whole unfinished event, quadratic for a huge event arriving in small pieces). */
  private parts: string[] = [];
  /** The unfinished event ends in "\n": a next piece starting with "\n" completes it. */
  private endsNL = false;
  /** A piece ended in "\r": held back in case the next one starts with "\n" (one CRLF, not two breaks). */
  private cr = false;

  /** Feeds a chunk and returns every event it completed. */
  push(chunk: Uint8Array): SseEvent[] {
    return this.add(this.decoder.decode(chunk, STREAMING), false);
  }

  /** Returns what is left when the stream ends (an event without its closing blank line). */
  finish(): SseEvent[] {
    return this.add(this.decoder.decode(), true);
  }

  private add(text: string, final: boolean): SseEvent[] {
    // The usual chunk is one whole `data:` line and its blank line, with nothing unfinished before it: its event
    // is that text, without splitting it into lines and joining it back (streams pass hundreds of these).
    if (
      !this.cr
      && this.parts.length === 0
      && text.startsWith("data:")
      && text.indexOf("\n") === text.length - 2
      && text.endsWith("\n\n")
      && !text.includes("\r")
    ) {
      this.endsNL = false;
      return [{ event: undefined, data: text.slice(text.charCodeAt(5) === 32 ? 6 : 5, -2), raw: text }];
    }
    if (this.cr) {
      text = "\r" + text;
      this.cr = false;
    }
    if (!final && text.endsWith("\r")) {
      this.cr = true;
      text = text.slice(0, -1);
    }
    if (text.includes("\r")) text = text.replace(/\r\n?/g, "\n");
    const out: SseEvent[] = [];
    const emit = (block: string) => {
      const ev = parseBlock(block);
      if (ev) out.push(ev);
    };
    let start = 0;
    if (this.endsNL && text.startsWith("\n")) {
      emit(this.parts.join("").slice(0, -1));
      this.parts = [];
      start = 1;
    }
    let at: number;
    while ((at = text.indexOf("\n\n", start)) !== -1) {
      emit(this.parts.length ? this.parts.join("") + text.slice(start, at) : text.slice(start, at));
      this.parts = [];
      start = at + 2;
    }
    const rest = start ? text.slice(start) : text;
    if (rest) this.parts.push(rest);
    this.endsNL = rest ? rest.endsWith("\n") : this.endsNL && this.parts.length > 0;
    if (final && this.parts.length) {
      const block = this.parts.join("");
      this.parts = [];
      this.endsNL = false;
      if (block.trim() !== "") emit(block);
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
