// Token changes the relay's token cache must hear about (by stored key, without the sk- prefix).
type Listener = (key: string) => void;
const listeners = new Set<Listener>();

/** Subscribes to token changes; returns the unsubscribe function. */
export function onTokenChanged(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function notifyTokenChanged(key: string): void {
  for (const l of listeners) {
    try {
      l(key);
    } catch (e) {
      console.error("token change listener failed:", e);
    }
  }
}
