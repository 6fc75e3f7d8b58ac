// Reads the playground's server-sent events as they arrive: each `data:` line is a chat-completion
// chunk whose choices[0].delta.content is appended; `[DONE]` ends the answer.

export interface StreamHandlers {
  onDelta: (text: string) => void;
  onDone: () => void;
  onError: (message: string) => void;
}

/** Feeds SSE text into the handlers; returns the unconsumed tail (a partial line) for the next call. */
export function consumeSse(buffer: string, h: StreamHandlers): { rest: string; done: boolean } {
  const lines = buffer.split("\n");
  const rest = lines.pop() ?? "";
  for (const raw of lines) {
    const line = raw.trim();
    if (!line.startsWith("data:")) continue;
    const data = line.slice(5).trim();
    if (data === "[DONE]") {
      h.onDone();
      return { rest: "", done: true };
    }
    try {
      const chunk = JSON.parse(data);
      if (chunk?.error) {
        h.onError(String(chunk.error.message ?? chunk.error));
        return { rest: "", done: true };
      }
      const delta = chunk?.choices?.[0]?.delta;
      const text = (delta?.content ?? "") + "";
      if (text) h.onDelta(text);
    } catch {
      // A malformed frame is skipped; the stream continues.
    }
  }
  return { rest, done: false };
}

export async function streamChat(url: string, init: RequestInit, h: StreamHandlers): Promise<void> {
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if ((e as Error)?.name === "AbortError") return h.onDone();
    return h.onError((e as Error)?.message || "network error");
  }
  if (!res.ok || !res.body) {
    let message = `HTTP ${res.status}`;
    try {
      const body = await res.json();
      message = body?.error?.message ?? body?.message ?? message;
    } catch {
      // keep the status text
    }
    return h.onError(message);
  }
  const reader = res.body.getReader();
  // Stop: the reader ends at once (whatever the fetch does with the signal) and what arrived is the answer.
  const signal = init.signal;
  if (signal?.aborted) await reader.cancel().catch(() => {});
  else signal?.addEventListener("abort", () => void reader.cancel().catch(() => {}), { once: true });
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const r = consumeSse(buffer, h);
      buffer = r.rest;
      if (r.done) {
        await reader.cancel().catch(() => {});
        return;
      }
    }
  } catch (e) {
    if ((e as Error)?.name === "AbortError") return h.onDone();
    return h.onError((e as Error)?.message || "stream error");
  }
  // The stream closed without an end marker: what arrived is the answer.
  consumeSse(buffer + "\n", h);
  h.onDone();
}
