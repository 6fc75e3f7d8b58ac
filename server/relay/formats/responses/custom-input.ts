// A free-form custom tool travels through chat as a function whose arguments are {"input": "<text>"}. While
// the arguments stream in as JSON fragments, this decodes the text of `input` piece by piece, so the client
// gets response.custom_tool_call_input.delta events with the text itself as the model writes it. One pass
// over each fragment; nothing is re-read.

const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/** How much of the arguments may come before the value of `input` (`{"input": "` and some spacing). */
const MAX_PREFIX = 256;

const KEY = /"input"\s*:\s*"/;
const SPECIAL = /["\\]/g;

export class CustomInputStream {
  /** seek: before the value; text: inside it; done: after it (or given up: the arguments are not that shape) */
  private state: "seek" | "text" | "done" = "seek";
  private prefix = "";
  /** an escape sequence cut by a fragment boundary (a backslash, or "\u" and some hex digits) */
  private escape = "";
  /** a high surrogate waiting for its low half (emitting it alone would make invalid text) */
  private high = "";
  /** whether any text was emitted: a caller that got none sends the whole input at the end instead */
  emitted = false;
  /** true once the arguments turned out not to start with the input value */
  gaveUp = false;

  /** One fragment of the arguments in, the decoded input text it completes out. */
  push(fragment: string): string {
    if (this.state === "done") return "";
    let from = 0;
    if (this.state === "seek") {
      this.prefix += fragment;
      const m = KEY.exec(this.prefix);
      if (!m) {
        if (this.prefix.length > MAX_PREFIX) this.stop();
        return "";
      }
      this.state = "text";
      fragment = this.prefix;
      from = m.index + m[0].length;
      this.prefix = "";
    }
    let out = "";
    let i = from;
    while (i < fragment.length) {
      if (this.escape) {
        // An escape sequence, one character at a time (it may be cut by the fragment's end).
        this.escape += fragment[i++];
        const e = this.escape;
        if (e.length === 2 && e[1] !== "u") {
          out += this.char(ESCAPES[e[1]!] ?? e[1]!);
          this.escape = "";
        } else if (e.length === 6) {
          out += this.char(String.fromCharCode(parseInt(e.slice(2), 16) || 0));
          this.escape = "";
        }
        continue;
      }
      // Plain text up to the next quote or backslash, found natively.
      SPECIAL.lastIndex = i;
      const m = SPECIAL.exec(fragment);
      const at = m ? m.index : fragment.length;
      if (at > i) out += this.char(fragment.slice(i, at));
      if (!m) break;
      i = at + 1;
      if (fragment[at] === '"') {
        this.state = "done";
        return this.finish(out);
      }
      this.escape = "\\";
    }
    return this.finish(out);
  }

  private stop() {
    this.state = "done";
    this.gaveUp = true;
    this.prefix = "";
  }

  /** Text out, keeping a trailing high surrogate back until its pair arrives. */
  private char(text: string): string {
    if (!text) return "";
    let t = this.high + text;
    this.high = "";
    const last = t.charCodeAt(t.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      this.high = t.slice(-1);
      t = t.slice(0, -1);
    }
    return t;
  }

  private finish(out: string): string {
    if (this.state === "done" && this.high) {
      out += this.high;
      this.high = "";
    }
    if (out) this.emitted = true;
    return out;
  }
}
