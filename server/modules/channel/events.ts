// Channels or abilities changed: the relay's routing table (relay/state.ts) must reload, on this instance
// at once and on the others through the shared cache's pub/sub, instead of after its TTL.
import type { AppDeps } from "../../deps.ts";
import { announcer, type Subscription } from "../../infra/announce.ts";

const changes = announcer<null>("relay:channel-changes", "channel change");

/** Subscribes to channel/ability changes of this instance and, through the cache, of the others. */
export function onChannelsChanged(deps: AppDeps, listener: () => void): Subscription {
  return changes.listen(deps, () => listener(), listener);
}

/** Call after every committed change to channels or abilities. */
export function notifyChannelsChanged(deps: AppDeps): Promise<void> {
  return changes.announce(deps, null);
}
