// Registers a DOM for component tests and keeps Bun's own network classes, so server tests (app.handle,
// real sockets, SSE) work in the same run. Must be the first preload (see STACK.md §5).
import { GlobalRegistrator } from "@happy-dom/global-registrator";

const NATIVE = [
  "fetch",
  "Request",
  "Response",
  "Headers",
  "FormData",
  "Blob",
  "File",
  "URL",
  "URLSearchParams",
  "AbortController",
  "AbortSignal",
  "TransformStream",
  "ReadableStream",
  "WritableStream",
  "TextEncoder",
  "TextDecoder",
  "WebSocket",
  "setTimeout",
  "clearTimeout",
  "setInterval",
  "clearInterval",
];
const saved = Object.fromEntries(NATIVE.map((k) => [k, (globalThis as any)[k]]));
GlobalRegistrator.register({ url: "http://localhost:3000/" });
for (const k of NATIVE) Object.defineProperty(globalThis, k, { value: saved[k], writable: true, configurable: true });
