// The counting worker (tokenizer.ts): counts texts exactly within WORKER_STEPS of work per call, off the
// main event loop. It holds its own copy of the o200k_base tables, loaded on its first message.
// `bun build --compile` needs this file as an entry point of its own (scripts/build.ts lists it).
import { countTextsNow, WORKER_STEPS } from "./tokenizer.ts";

declare const self: Worker;

self.onmessage = (e: MessageEvent<{ id: number; texts: string[] }>) => {
  let count = -1;
  try {
    count = countTextsNow(e.data.texts, WORKER_STEPS);
  } catch {}
  self.postMessage({ id: e.data.id, count });
};
