// Announcements of committed changes that in-memory views must hear at once: on this instance (its
// listeners run before announce() returns) and on every other instance sharing the cache, through the
// cache's pub/sub (Redis when several instances share state, in-process otherwise). Redis down: an
// announcement this instance could not publish is published again once Redis answers, and an instance whose
// subscription was lost re-reads everything its listeners keep (their `resync`) once it is back; until then
// its views catch up when their TTL runs out.
import type { AppDeps } from "../deps.ts";
import { randomString } from "./random.ts";

export interface Subscription {
  /** Resolves once other instances' announcements are heard. */
  ready: Promise<void>;
  unsubscribe: () => Promise<void>;
}

export interface Announcer<T> {
  /** `resync`: what to do when announcements may have been missed (drop or re-read everything kept). */
  listen(deps: AppDeps, listener: (change: T) => void, resync?: () => void): Subscription;
  announce(deps: AppDeps, change: T): Promise<void>;
}

interface Hub<T> {
  /** Tells this instance's own messages, echoed back by the cache, from other instances'. */
  origin: string;
  listeners: Set<(change: T) => void>;
  /** Messages the cache refused (Redis down), sent again once it is back; the oldest go past UNSENT_MAX. */
  unsent: string[];
  retrying: ReturnType<typeof setTimeout> | null;
}

/** Announcements kept for a Redis that is down: past this many, the instances' TTLs are what catches them up. */
const UNSENT_MAX = 1000;
/** Pause between tries to publish what is unsent. */
const UNSENT_RETRY_MS = 500;

/** One announcement channel (`channel` in the cache's pub/sub); `what` names it in error logs. */
export function announcer<T>(channel: string, what: string): Announcer<T> {
  // Per app, so two apps in one process (tests, or an app on a cache of its own) hear only through the cache.
  const hubs = new WeakMap<AppDeps, Hub<T>>();
  const hub = (deps: AppDeps) => {
    let h = hubs.get(deps);
    if (!h) hubs.set(deps, (h = { origin: randomString(16), listeners: new Set(), unsent: [], retrying: null }));
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

  /** Queues `message` behind the unsent ones (in order) and retries until the cache takes them. */
  const keep = (deps: AppDeps, h: Hub<T>, message: string) => {
    h.unsent.push(message);
    if (h.unsent.length > UNSENT_MAX) h.unsent.splice(0, h.unsent.length - UNSENT_MAX);
    if (h.retrying) return;
    const retry = async () => {
      h.retrying = null;
      while (h.unsent.length > 0) {
        try {
          await deps.cache.publish(channel, h.unsent[0]);
        } catch {
          h.retrying = setTimeout(retry, UNSENT_RETRY_MS);
          h.retrying.unref?.();
          return;
        }
        h.unsent.shift();
      }
    };
    h.retrying = setTimeout(retry, UNSENT_RETRY_MS);
    h.retrying.unref?.();
  };

  return {
    listen(deps, listener, resync) {
      const h = hub(deps);
      h.listeners.add(listener);
      const stopResync = resync
        ? deps.cache.onReconnect(() => {
            try {
              resync();
            } catch (e) {
              console.error(`${what} resync failed:`, e);
            }
          })
        : () => {};
      const remote = deps.cache
        .subscribe(channel, (message) => {
          let m: { origin?: string; change?: T };
          try {
            m = JSON.parse(message);
          } catch {
            return;
          }
          if (m && m.origin !== h.origin && "change" in m) call([listener], m.change as T);
        })
        .catch((e) => {
          console.error(
            `${what} subscription failed (other instances' changes wait for the cache TTL):`,
            e?.message ?? e,
          );
          return async () => {};
        });
      return {
        ready: remote.then(() => {}),
        unsubscribe: async () => {
          h.listeners.delete(listener);
          stopResync();
          await (await remote)();
        },
      };
    },
    async announce(deps, change) {
      const h = hub(deps);
      call(h.listeners, change);
      const message = JSON.stringify({ origin: h.origin, change });
      if (h.unsent.length > 0) return keep(deps, h, message);
      try {
        await deps.cache.publish(channel, message);
      } catch (e: any) {
        console.error(`${what} not published yet (sent again once the cache answers):`, e?.message ?? e);
        keep(deps, h, message);
      }
    },
  };
}
