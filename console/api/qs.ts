// A query string from parameters, leaving out the empty ones. A module of its own (no translations, no
// state) so the prefetches of console/preload.ts build the very URLs the pages build.
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
}
