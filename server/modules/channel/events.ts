// Channels or abilities changed: the relay's in-memory routing cache subscribes and reloads.
type Listener = () => void;
const listeners = new Set<Listener>();

/** Subscribes to channel/ability changes; returns the unsubscribe function. */
export function onChannelsChanged(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Called after every committed change to channels or abilities. */
export function notifyChannelsChanged(): void {
  for (const l of listeners) {
    try {
      l();
    } catch (e) {
      console.error("channel change listener failed:", e);
    }
  }
}
