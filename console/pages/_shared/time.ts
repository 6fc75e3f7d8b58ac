// Date helpers for filters and the token expiry field (format yyyy-MM-dd HH:mm:ss, spec 001 §5).
const pad = (n: number) => String(n).padStart(2, "0");

export function formatDateTime(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Parses "yyyy-MM-dd HH:mm:ss" (seconds optional) in local time; null when it is not such a date. */
export function parseDateTime(text: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text.trim());
  if (!m) return null;
  const [y, mo, d, h = "0", mi = "0", s = "0"] = m.slice(1);
  const date = new Date(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (date.getMonth() !== Number(mo) - 1 || date.getDate() !== Number(d)) return null;
  return date;
}

export const toSeconds = (d: Date) => Math.floor(d.getTime() / 1000);

export function startOfToday(now = new Date()): Date {
  return new Date(now.getFullYear(), now.getMonth(), now.getDate());
}

export const HOUR_MS = 3600_000;
export const DAY_MS = 24 * HOUR_MS;
