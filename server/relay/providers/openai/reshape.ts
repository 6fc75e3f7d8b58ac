// Two channel settings of new-api that reshape what an OpenAI-compatible upstream answers:
//   force_format         only the fields of OpenAI's chat completion schema reach the client (upstreams that
//                        add their own fields break strict clients)
//   thinking_to_content  reasoning_content is moved into content, wrapped in <think>...</think>, for clients
//                        that show only content
import type { SseEvent, StreamMapper, Usage } from "../types.ts";
import { SseReader, sseFrame } from "../../formats/sse.ts";

export interface Reshape {
  forceFormat: boolean;
  thinkingToContent: boolean;
}

const pick = (o: any, keys: readonly string[]) => {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (o?.[k] !== undefined) out[k] = o[k];
  return out;
};

const TOP = [
  "id",
  "object",
  "created",
  "model",
  "system_fingerprint",
  "service_tier",
  "choices",
  "usage",
  "error",
] as const;
const CHOICE = ["index", "message", "delta", "finish_reason", "logprobs", "text"] as const;
const MESSAGE = [
  "role",
  "content",
  "reasoning_content",
  "tool_calls",
  "function_call",
  "refusal",
  "annotations",
  "audio",
] as const;

/** An OpenAI chat completion or chunk with only the schema's fields. */
export function standardShape(obj: any): any {
  if (!obj || typeof obj !== "object" || !Array.isArray(obj.choices)) return obj;
  const out: any = pick(obj, TOP);
  out.choices = obj.choices.map((c: any) => {
    const choice: any = pick(c, CHOICE);
    if (c?.message) choice.message = pick(c.message, MESSAGE);
    if (c?.delta) choice.delta = pick(c.delta, MESSAGE);
    return choice;
  });
  return out;
}

/** A non-stream completion with its reasoning in front of the content, in <think> tags. */
export function thinkingInContent(obj: any): any {
  if (!obj || !Array.isArray(obj.choices)) return obj;
  return {
    ...obj,
    choices: obj.choices.map((c: any) => {
      const m = c?.message;
      const reasoning = typeof m?.reasoning_content === "string" ? m.reasoning_content : "";
      if (!reasoning) return c;
      const { reasoning_content: _r, ...rest } = m;
      return {
        ...c,
        message: {
          ...rest,
          content: `<think>\n${reasoning}\n</think>\n${typeof m.content === "string" ? m.content : ""}`,
        },
      };
    }),
  };
}

export function reshapeBody(obj: any, r: Reshape): any {
  let out = obj;
  if (r.thinkingToContent) out = thinkingInContent(out);
  if (r.forceFormat) out = standardShape(out);
  return out;
}

/**
 * Re-reads the SSE text another mapper produced and reshapes each chunk: reasoning deltas become content
 * opened by "<think>\n", closed by "\n</think>\n" when the first content (or the finish) arrives.
 */
export class ReshapingMapper implements StreamMapper {
  private reader = new SseReader();
  private enc = new TextEncoder();
  private thinking = false;

  constructor(
    private inner: StreamMapper,
    private r: Reshape,
  ) {}

  private chunk(obj: any): any {
    if (this.r.thinkingToContent && Array.isArray(obj?.choices)) {
      obj = {
        ...obj,
        choices: obj.choices.map((c: any) => {
          const d = c?.delta;
          if (!d) return c;
          const reasoning = typeof d.reasoning_content === "string" ? d.reasoning_content : "";
          const content = typeof d.content === "string" ? d.content : "";
          const { reasoning_content: _r, ...delta } = d;
          let text = "";
          if (reasoning) {
            if (!this.thinking) text += "<think>\n";
            this.thinking = true;
            text += reasoning;
          }
          if (this.thinking && (content || c.finish_reason || Array.isArray(d.tool_calls))) {
            text += "\n</think>\n";
            this.thinking = false;
          }
          text += content;
          if (!reasoning && !text && d.content === undefined) return { ...c, delta };
          return { ...c, delta: { ...delta, content: text } };
        }),
      };
    }
    return this.r.forceFormat ? standardShape(obj) : obj;
  }

  private reshape(sse: string): string {
    if (!sse) return "";
    let out = "";
    for (const ev of this.reader.push(this.enc.encode(sse))) {
      if (!ev.data || ev.data === "[DONE]") {
        out += ev.raw;
        continue;
      }
      let obj: any;
      try {
        obj = JSON.parse(ev.data);
      } catch {
        out += ev.raw;
        continue;
      }
      out += sseFrame(JSON.stringify(this.chunk(obj)), ev.event);
    }
    return out;
  }

  event(ev: SseEvent): string {
    return this.reshape(this.inner.event(ev));
  }
  end(counted?: () => Usage): string {
    return this.reshape(this.inner.end(counted));
  }
  usage(): Usage | null {
    return this.inner.usage();
  }
  generatedText(): string {
    return this.inner.generatedText();
  }
  complete(): boolean {
    return this.inner.complete();
  }
}
