// Upstream messages may echo the key or the upstream address; neither reaches a client. Used for
// upstream error answers (pipeline) and for errors an upstream sends inside a stream (stream mappers).
import type { ProviderCall, SseEvent } from "../providers/types.ts";

export function scrub(message: string, call: Pick<ProviderCall, "key" | "baseUrl">): string {
  let m = message.slice(0, 1000);
  if (call.key) m = m.split(call.key).join("***");
  if (call.baseUrl) m = m.split(call.baseUrl).join("[upstream]");
  return m.replace(/https?:\/\/[^\s"')]+/g, "[upstream]").replace(/\bsk-[A-Za-z0-9_-]{8,}/g, "sk-***");
}

/** An upstream's error type or status name, when it is a plain name; anything else is not forwarded. */
export function plainName(value: unknown, fallback: string): string {
  return typeof value === "string" && /^[A-Za-z_.-]{1,64}$/.test(value) ? value : fallback;
}

/** An upstream SSE frame the gateway cannot read, passed on to a native client scrubbed like a message. */
export function scrubFrame(ev: SseEvent, call: Pick<ProviderCall, "key" | "baseUrl">): string {
  const data = scrub(ev.data, call)
    .split("\n")
    .map((line) => `data: ${line}\n`)
    .join("");
  return (ev.event ? `event: ${plainName(ev.event, "message")}\n` : "") + data + "\n";
}
