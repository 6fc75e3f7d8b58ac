// Option writes reach every instance the way token and channel changes do: the writing instance announces
// the keys after the commit, and every instance sharing the cache (Redis pub/sub, or in-process) re-reads
// them from the database at once, instead of waiting for the SYNC_FREQUENCY re-read.
import type { AppDeps } from "../../deps.ts";
import { announcer, type Subscription } from "../../infra/announce.ts";

const changes = announcer<string[]>("options:changes", "option change");

/** Subscribes to option writes of this instance and, through the cache, of the others. */
export function onOptionsChanged(deps: AppDeps, listener: (keys: string[]) => void, resync?: () => void): Subscription {
  return changes.listen(
    deps,
    (keys) => {
      if (Array.isArray(keys)) listener(keys.filter((k): k is string => typeof k === "string"));
    },
    resync,
  );
}

const following = new WeakMap<AppDeps, Subscription>();

/**
 * Wires `deps.options` to the announcements, once per app: its writes are announced and announced keys
 * are reloaded. createApp calls it (through the option module); the subscription ends on shutdown.
 */
export function followOptionChanges(deps: AppDeps): Subscription {
  let sub = following.get(deps);
  if (sub) return sub;
  deps.options.announceWith((keys) => changes.announce(deps, keys));
  sub = onOptionsChanged(
    deps,
    (keys) => {
      deps.options.reload(keys).catch((e) => console.error("option reload failed:", e?.message ?? e));
    },
    () => void deps.options.load().catch((e) => console.error("option reload failed:", e?.message ?? e)),
  );
  following.set(deps, sub);
  const { unsubscribe } = sub;
  deps.shutdownHooks.push(() => unsubscribe());
  return sub;
}
