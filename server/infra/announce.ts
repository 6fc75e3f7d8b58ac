// Announcements of committed changes that in-memory views must hear at once: on this instance (its
// listeners run before announce() returns) and on every other instance sharing the cache, through the
// cache's pub/sub (Redis when several instances share state, in-process otherwise). An instance that
// misses a message (Redis down) still catches up when its view's TTL runs out.
import type { AppDeps } from "../deps.ts";
import { randomString } from "./random.ts";

export interface Subscription {
  /** Resolves once other instances' announcements are heard. */
  ready: Promise<void>;
  unsubscribe: () => Promise<void>;
}

export interface Announcer<T> {
  listen(deps: AppDeps, listener: (change: T) => void): Subscription;
  announce(deps: AppDeps, change: T): Promise<void>;
}

interface Hub<T> {
  /** Tells this instance's own messages, echoed back by the cache, from other instances'. */
  origin: string;
  listeners: Set<(change: T) => void>;
}

/** One announcement channel (`channel` in the cache's pub/sub); `what` names it in error logs. */
export function announcer<T>(channel: string, what: string): Announcer<T> {
  // Per app, so two apps in one process (tests, or an app on a cache of its own) hear only through the cache.
  const hubs = new WeakMap<AppDeps, Hub<T>>();
  const hub = (deps: AppDeps) => {
    let h = hubs.get(deps);
    if (!h) hubs.set(deps, (h = { origin: randomString(16), listeners: new Set() }));
    return h;
  };
  const call = (listeners: Iterable<(change: T) => void>, change: T) => {
    for (const l of listeners) {
      try {
        l(change);
      } catch (e) {
        console.error(`${what} listener failed:`, e);
      }
    }
  };

  return {
    listen(deps, listener) {
      const h = hub(deps);
      h.listeners.add(listener);
      const remote = deps.cache.subscribe(channel, (message) => {
        let m: { origin?: string; change?: T };
        try {
          m = JSON.parse(message);
        } catch {
          return;
        }
        if (m && m.origin !== h.origin && "change" in m) call([listener], m.change as T);
      }).catch((e) => {
        console.error(`${what} subscription failed (other instances' changes wait for the cache TTL):`, e?.message ?? e);
        return async () => {};
      });
      return {
        ready: remote.then(() => {}),
        unsubscribe: async () => {
          h.listeners.delete(listener);
          await (await remote)();
        },
      };
    },
    async announce(deps, change) {
      const h = hub(deps);
      call(h.listeners, change);
      try {
        await deps.cache.publish(channel, JSON.stringify({ origin: h.origin, change }));
      } catch (e: any) {
        console.error(`${what} not published (other instances wait for the cache TTL):`, e?.message ?? e);
      }
    },
  };
}
