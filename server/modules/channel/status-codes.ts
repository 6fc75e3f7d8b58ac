// HTTP status-code lists as new-api stores them in AutomaticDisableStatusCodes and AutomaticRetryStatusCodes:
// "401,403,500-503" (a full-width comma is read as a comma). Codes are 100–599; ranges are merged, so the
// stored text is the normal form and two spellings of one set compare equal.
import { badRequest } from "../../http/errors.ts";

export interface CodeRange {
  start: number;
  end: number;
}

function token(part: string): CodeRange {
  const t = part.replace(/\s+/g, "");
  const m = /^(\d{1,3})(?:-(\d{1,3}))?$/.exec(t);
  if (!m) throw new Error(`"${part.trim()}" is not a status code or a range like 500-503`);
  const start = Number(m[1]);
  const end = m[2] === undefined ? start : Number(m[2]);
  if (start > end) throw new Error(`"${part.trim()}": the range starts after it ends`);
  if (start < 100 || end > 599) throw new Error(`"${part.trim()}": status codes are 100 to 599`);
  return { start, end };
}

/** Sorted, merged ranges; throws with a message naming the first bad part. Empty text is no codes. */
export function parseStatusCodeRanges(text: string): CodeRange[] {
  const parts = text
    .replace(/，/g, ",")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const ranges = parts.map(token).sort((a, b) => a.start - b.start || a.end - b.end);
  const merged: CodeRange[] = [];
  for (const r of ranges) {
    const last = merged[merged.length - 1];
    if (last && r.start <= last.end + 1) last.end = Math.max(last.end, r.end);
    else merged.push({ ...r });
  }
  return merged;
}

export function formatStatusCodeRanges(ranges: CodeRange[]): string {
  return ranges.map((r) => (r.start === r.end ? String(r.start) : `${r.start}-${r.end}`)).join(",");
}

/** The option value to store (normal form), or a 400 naming the problem. */
export function validateStatusCodes(key: string, value: string): string {
  try {
    return formatStatusCodeRanges(parseStatusCodeRanges(value));
  } catch (e) {
    throw badRequest(`${key}: ${(e as Error).message}`);
  }
}

const parsedCache = new Map<string, CodeRange[]>();

/** Whether `status` is in the stored list (unparseable stored text matches nothing). */
export function statusInList(text: string, status: number | undefined): boolean {
  if (status === undefined) return false;
  let ranges = parsedCache.get(text);
  if (!ranges) {
    try {
      ranges = parseStatusCodeRanges(text);
    } catch {
      ranges = [];
    }
    if (parsedCache.size > 32) parsedCache.clear();
    parsedCache.set(text, ranges);
  }
  return ranges.some((r) => status >= r.start && status <= r.end);
}
