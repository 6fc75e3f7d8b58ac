// Percent-decoding of URL path parts a client controls: a malformed escape ("%E0%A4%A") is the client's
// mistake, answered 400 (or treated as the literal text), never a 500.
import { AppError } from "./errors.ts";

/** The decoded text, or null when the escapes are malformed. */
export function tryDecode(part: string): string | null {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

export function decodeOr400(part: string): string {
  const out = tryDecode(part);
  if (out === null) throw new AppError(400, "the path holds a malformed percent-escape");
  return out;
}

/** Whether a request URL's path is under /api/, without parsing the URL unless its path holds dot segments
 * or escapes (which a parser would resolve). */
export function isApiUrl(url: string): boolean {
  const scheme = url.indexOf("://");
  const start = url.indexOf("/", scheme === -1 ? 0 : scheme + 3);
  if (start === -1) return false;
  if (url.startsWith("/api/", start)) return true;
  if (url.indexOf("/.", start) === -1 && url.indexOf("%", start) === -1) return false;
  try {
    return new URL(url).pathname.startsWith("/api/");
  } catch {
    return false;
  }
}
