// Token and user changes the relay's token cache must hear about at once (a ban, a deleted or disabled
// token, a new quota or expiry), on this instance and on every other one sharing the cache: this
// instance's listeners are called before notify returns, the others hear it through the cache's
// pub/sub (Redis when several instances share state).
import type { AppDeps } from "../../deps.ts";
import { randomString } from "../../infra/random.ts";

/** A token by its stored key (without sk-), or every token of a user. */
export type TokenChange = { key: string } | { userId: number };
type Listener = (change: TokenChange) => void;

const CHANNEL = "relay:token-changes";

interface Hub {
  /** Tells this instance's own messages, echoed back by the cache, from other instances'. */
  origin: string;
  listeners: Set<Listener>;
}

const hubs = new WeakMap<AppDeps, Hub>();

function hub(deps: AppDeps): Hub {
  let h = hubs.get(deps);
  if (!h) hubs.set(deps, (h = { origin: randomString(16), listeners: new Set() }));
  return h;
}

function call(listeners: Iterable<Listener>, change: TokenChange) {
  for (const l of listeners) {
    try {
      l(change);
    } catch (e) {
      console.error("token change listener failed:", e);
    }
  }
}

/**
 * Subscribes to token changes of this instance and, through the cache, of the others. Returns the
 * unsubscribe function; `ready` resolves once the cross-instance subscription listens.
 */
export function onTokenChanged(deps: AppDeps, listener: Listener): { ready: Promise<void>; unsubscribe: () => Promise<void> } {
  const h = hub(deps);
  h.listeners.add(listener);
  const remote = deps.cache.subscribe(CHANNEL, (message) => {
    let m: { origin?: string; change?: TokenChange };
    try {
      m = JSON.parse(message);
    } catch {
      return;
    }
    if (m.origin !== h.origin && m.change) call([listener], m.change);
  }).catch((e) => {
    console.error("token change subscription failed (other instances' changes wait for the cache TTL):", e?.message ?? e);
    return async () => {};
  });
  return {
    ready: remote.then(() => {}),
    unsubscribe: async () => {
      h.listeners.delete(listener);
      await (await remote)();
    },
  };
}

/** Call after a committed change to a token or to a user (status, deletion, group, settings). */
export async function notifyTokenChanged(deps: AppDeps, change: TokenChange): Promise<void> {
  const h = hub(deps);
  call(h.listeners, change);
  try {
    await deps.cache.publish(CHANNEL, JSON.stringify({ origin: h.origin, change }));
  } catch (e: any) {
    console.error("token change not published (other instances wait for the cache TTL):", e?.message ?? e);
  }
}
