// Graceful shutdown, in the order that loses nothing: stop accepting connections, let in-flight requests
// (streaming relay calls included) finish within the grace period, then run the shutdown hooks (the
// write-behind flush of logs and quota) and close the cache and the database.
import type { AppDeps } from "./deps.ts";
import { closeDeps } from "./bootstrap.ts";
import { shutdownTracing } from "./infra/tracing.ts";

/** The part of Bun's Server used here: stop(false) stops listening and resolves once in-flight requests end. */
export interface StoppableServer {
  stop(closeActiveConnections?: boolean): Promise<void> | void;
  readonly pendingRequests?: number;
}

export interface ShutdownResult {
  /** false when the grace period ran out and the remaining requests were cut. */
  drained: boolean;
}

export async function gracefulShutdown(server: StoppableServer | null | undefined, deps: AppDeps, opts: { graceMs: number; log?: (message: string) => void }): Promise<ShutdownResult> {
  const log = opts.log ?? ((m: string) => console.log(m));
  let drained = true;
  if (server) {
    const pending = server.pendingRequests ?? 0;
    if (pending > 0) log(`waiting up to ${Math.round(opts.graceMs / 1000)} s for ${pending} in-flight request(s)`);
    const finished = Promise.resolve(server.stop(false)).then(() => true, () => true);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), opts.graceMs)));
    drained = await Promise.race([finished, expired]);
    clearTimeout(timer);
    if (!drained) {
      log(`grace period of ${opts.graceMs} ms is over: closing ${server.pendingRequests ?? "the remaining"} request(s)`);
      await Promise.resolve(server.stop(true)).catch(() => {});
    }
  }
  // Requests that ran to the end have queued their usage; the hooks write it before the database closes.
  await closeDeps(deps);
  // Spans still in the batch (settlements the flush above completed included) go out before exit.
  await shutdownTracing();
  return { drained };
}
