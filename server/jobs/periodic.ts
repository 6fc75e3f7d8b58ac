// A background job that runs now and then on every instance: first after `firstMs`, then every `everyMs`,
// never two runs at once. Graceful shutdown cancels a run (its AbortSignal fires) and waits for it to stop.
import type { AppDeps } from "../deps.ts";

export function startPeriodicJob(
  deps: AppDeps,
  name: string,
  firstMs: number,
  everyMs: number,
  work: (cancel: AbortSignal) => Promise<unknown>,
): () => void {
  const stop = new AbortController();
  let running: Promise<unknown> | null = null;
  const run = () => {
    if (running) return;
    running = work(stop.signal)
      .catch((e) => console.error(`${name} failed:`, (e as Error).message))
      .finally(() => (running = null));
  };
  const first = setTimeout(run, firstMs);
  const timer = setInterval(run, everyMs);
  first.unref?.();
  timer.unref?.();
  const halt = () => {
    clearTimeout(first);
    clearInterval(timer);
    stop.abort();
  };
  deps.shutdownHooks.push(async () => {
    halt();
    await running;
  });
  return halt;
}
