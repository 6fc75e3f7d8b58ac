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
