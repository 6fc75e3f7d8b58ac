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

/** The part of the grace period kept for writing what the requests left (at most this long, and at most a third). */
export const CLOSE_RESERVE_MS = 5_000;

/** How long in-flight requests may run on after a signal: the grace period less what closing needs. */
export function requestWindowMs(graceMs: number): number {
  return graceMs - Math.min(CLOSE_RESERVE_MS, Math.floor(graceMs / 3));
}

export async function gracefulShutdown(
  server: StoppableServer | null | undefined,
  deps: AppDeps,
  opts: { graceMs: number; log?: (message: string) => void },
): Promise<ShutdownResult> {
  const log = opts.log ?? ((m: string) => console.log(m));
  const deadline = performance.now() + opts.graceMs;
  const requestsMs = requestWindowMs(opts.graceMs);
  let drained = true;
  if (server) {
    const pending = server.pendingRequests ?? 0;
    if (pending > 0) log(`waiting up to ${Math.round(requestsMs / 1000)} s for ${pending} in-flight request(s)`);
    const finished = Promise.resolve(server.stop(false)).then(
      () => true,
      () => true,
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), requestsMs)));
    drained = await Promise.race([finished, expired]);
    clearTimeout(timer);
    if (!drained) {
      log(
        `grace period of ${requestsMs} ms for requests is over: closing ${server.pendingRequests ?? "the remaining"} request(s)`,
      );
      await Promise.resolve(server.stop(true)).catch(() => {});
    }
  }
  // Requests that ran to the end have queued their usage; the hooks write it before the database closes. A
  // database that does not answer must not hold the process past its grace period.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const closed = await Promise.race([
    closeDeps(deps).then(
      () => true,
      (e) => (log(`closing failed: ${(e as Error)?.message ?? e}`), true),
    ),
    new Promise<boolean>(
      (resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - performance.now()))),
    ),
  ]);
  clearTimeout(timer);
  if (!closed) log("the grace period ran out before the pending writes reached the database");
  // Spans still in the batch (settlements the flush above completed included) go out before exit.
  await shutdownTracing();
  return { drained };
}
