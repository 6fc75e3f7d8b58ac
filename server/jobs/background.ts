// One-off background work that a request starts and does not wait for (e.g. "update the balance of
// every channel", "test every channel"). At most one run per name at a time; a second start while it
// runs joins it. Graceful shutdown cancels every run (its AbortSignal fires) and waits for it to stop
// before the database closes.
import type { AppDeps } from "../deps.ts";

export interface BackgroundRun<P> {
  /** false when a run of that name was already going: this is the running one. */
  started: boolean;
  /** Live progress object, updated by the work as it goes. */
  progress: P;
  done: Promise<void>;
}

interface Job {
  controller: AbortController;
  progress: unknown;
  done: Promise<void>;
}

const registries = new WeakMap<AppDeps, Map<string, Job>>();

function jobsOf(deps: AppDeps): Map<string, Job> {
  let jobs = registries.get(deps);
  if (!jobs) {
    jobs = new Map();
    registries.set(deps, jobs);
    deps.shutdownHooks.push(() => stopBackgroundJobs(deps));
  }
  return jobs;
}

export function runInBackground<P>(
  deps: AppDeps,
  name: string,
  progress: P,
  work: (signal: AbortSignal, progress: P) => Promise<void>,
): BackgroundRun<P> {
  const jobs = jobsOf(deps);
  const running = jobs.get(name);
  if (running) return { started: false, progress: running.progress as P, done: running.done };
  const controller = new AbortController();
  // Started on the next microtask, so the job is registered before any of its code runs.
  const done = Promise.resolve()
    .then(() => work(controller.signal, progress))
    .catch((e) => {
      if (!controller.signal.aborted) console.error(`background job ${name} failed:`, (e as Error)?.message ?? e);
    })
    .finally(() => jobs.delete(name));
  jobs.set(name, { controller, progress, done });
  return { started: true, progress, done };
}

/** The run of that name while it is going, else null. */
export function backgroundRun<P>(deps: AppDeps, name: string): Omit<BackgroundRun<P>, "started"> | null {
  const job = registries.get(deps)?.get(name);
  return job ? { progress: job.progress as P, done: job.done } : null;
}

/** Cancels every run and resolves once all of them have stopped (a shutdown hook). */
export async function stopBackgroundJobs(deps: AppDeps): Promise<void> {
  const jobs = registries.get(deps);
  if (!jobs) return;
  const all = [...jobs.values()];
  for (const job of all) job.controller.abort(new Error("shutting down"));
  await Promise.all(all.map((job) => job.done));
}
