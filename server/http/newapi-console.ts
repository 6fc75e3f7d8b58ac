// Calls from new-api's own consoles (its classic and its default UI), which some routes answer in new-api's shapes
// where the specification gives Switchyard's console another: both of new-api's API clients send
// Cache-Control: no-store with every call, and Switchyard's console never does.
export const fromNewApiConsole = (request: Request): boolean =>
  /\bno-store\b/i.test(request.headers.get("cache-control") ?? "");

/** A token key as new-api lists it: without sk-, only its first and last four characters shown. */
export function maskedTokenKey(key: string): string {
  if (key.length <= 4) return "*".repeat(key.length);
  if (key.length <= 8) return `${key.slice(0, 2)}****${key.slice(-2)}`;
  return `${key.slice(0, 4)}**********${key.slice(-4)}`;
}
