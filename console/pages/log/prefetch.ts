// The usage log's first page, asked for while the console is still loading (console/preload.ts), so the
// log page can show its rows in its first render instead of asking once it has rendered. Light on
// purpose: no translations or Arco, which would make it wait for them.
import { DEFAULT_PAGE_SIZE, LOG_TYPE, ROLE } from "../../../server/catalogue/index.ts";
import { getPageSize, getStoredUser } from "../../lib/storage.ts";
import { qs } from "../../api/qs.ts";
import { HOUR_MS, formatDateTime, startOfToday, toSeconds } from "../_shared/time.ts";

/** The default range: the start of today to an hour ahead, rounded up to the minute (a query built a moment later is the same). */
export function defaultRange(now = Date.now()): { start: string; end: string } {
  return {
    start: formatDateTime(startOfToday(new Date(now))),
    end: formatDateTime(new Date(Math.ceil((now + HOUR_MS) / 60_000) * 60_000)),
  };
}

/** The URL of a page of logs for a query (the filters as the page sends them). */
export function logPageUrl(admin: boolean, query: Record<string, string | number>, page: number, size: number): string {
  return `${admin ? "/api/log/" : "/api/log/self/"}${qs({ ...query, p: page, page_size: size })}`;
}

/** The query of the default filters. */
export function defaultQuery(admin: boolean, range = defaultRange()): Record<string, string | number> {
  const start = toSeconds(new Date(range.start.replace(" ", "T")));
  const end = toSeconds(new Date(range.end.replace(" ", "T")));
  const q: Record<string, string | number> = {
    type: LOG_TYPE.unknown,
    token_name: "",
    model_name: "",
    group: "",
    request_id: "",
    start_timestamp: start,
    end_timestamp: end,
  };
  if (admin) Object.assign(q, { channel: "", username: "" });
  return q;
}

interface Slot {
  url: string;
  range: { start: string; end: string };
  reply?: unknown;
  done: Promise<void>;
}
let slot: Slot | null = null;

export function prefetchFirstLogPage(): void {
  const user = getStoredUser();
  if (!user) return;
  const admin = user.role >= ROLE.admin;
  const range = defaultRange();
  const url = logPageUrl(admin, defaultQuery(admin, range), 1, getPageSize("log", DEFAULT_PAGE_SIZE));
  const own: Slot = { url, range, done: Promise.resolve() };
  own.done = fetch(url, { headers: { "New-Api-User": String(user.id) }, credentials: "same-origin" })
    .then((r) => (r.ok ? r.json() : null))
    .then((j) => {
      if ((j as { success?: boolean } | null)?.success) own.reply = j;
    })
    .catch(() => {});
  slot = own;
}

/** The default range the prefetch asked for: the page opens on it, so a minute (or a day) that turns between
 * the prefetch and the page's first render does not make the page ask again for a range one minute on. */
export function prefetchedRange(): { start: string; end: string } | null {
  return slot?.range ?? null;
}

/** The prefetched reply for exactly this URL once it has arrived, else null; left in place. A page reads it while
 * rendering with this: React may throw a render away (a lazy part still loading) and run it again, and a reply
 * taken by the discarded render was lost, so the page asked for the same page a second time. */
export function peekPrefetched(url: string): unknown {
  if (!slot || slot.url !== url || slot.reply === undefined) return null;
  return slot.reply;
}

/** The prefetched reply for exactly this URL once it has arrived (taken once), else null. */
export function takePrefetched(url: string): unknown {
  const reply = peekPrefetched(url);
  if (reply !== null) slot = null;
  return reply;
}

/** Waits for a prefetch of this URL still under way; then takePrefetched tells whether it brought the page. */
export function prefetchUnderWay(url: string): Promise<void> | null {
  return slot && slot.url === url && slot.reply === undefined ? slot.done : null;
}
