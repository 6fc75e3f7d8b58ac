// Token and user changes the relay's token cache must hear about at once (a ban, a deleted or disabled
// token, a new quota or expiry), on this instance and on every other one sharing the cache.
import type { AppDeps } from "../../deps.ts";
import { announcer, type Subscription } from "../../infra/announce.ts";

/** A token by its stored key (without sk-), every token of a user, or every token (changes may have been missed). */
export type TokenChange = { key: string } | { userId: number } | { all: true };

const changes = announcer<TokenChange>("relay:token-changes", "token change");

/** Subscribes to token changes of this instance and, through the cache, of the others. */
export function onTokenChanged(deps: AppDeps, listener: (change: TokenChange) => void): Subscription {
  return changes.listen(
    deps,
    (change) => {
      if (change) listener(change);
    },
    () => listener({ all: true }),
  );
}

/** Call after a committed change to a token or to a user (status, deletion, group, settings). */
export function notifyTokenChanged(deps: AppDeps, change: TokenChange): Promise<void> {
  return changes.announce(deps, change);
}
