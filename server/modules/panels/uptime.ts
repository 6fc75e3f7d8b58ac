// Uptime Kuma status for the dashboard (GET /api/uptime/status, new-api's route and shape). For each group of
// console_setting.uptime_kuma_groups the status page's monitors are read from Uptime Kuma's public API:
// <url>/api/status-page/<slug> (names and groups) and <url>/api/status-page/heartbeat/<slug> (last beat and
// 24-hour uptime). The addresses are the administrator's (like channel base URLs they may be on the local
// network), so they are not put through the outbound guard for user-supplied URLs. Every console page load
// asks, so one answer serves all callers for CACHE_SECONDS, and callers arriving while it is being fetched
// share that fetch.
import { panelList } from "./validate.ts";

export interface Monitor {
  name: string;
  uptime: number;
  status: number;
  group?: string;
}
export interface UptimeGroup {
  categoryName: string;
  monitors: Monitor[];
}

export const CACHE_SECONDS = 60;
const TIMEOUT_MS = 10_000;
const MAX_BODY = 2 * 1024 * 1024;

let cached: { raw: string; at: number; value: Promise<UptimeGroup[]> } | null = null;

/** Forgets the cached answer (tests, and a changed group list is noticed by its raw text anyway). */
export function resetUptimeCache(): void {
  cached = null;
}

async function getJson(url: string, signal: AbortSignal): Promise<any> {
  const res = await fetch(url, { signal, redirect: "error", headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`status ${res.status}`);
  const text = await res.text();
  if (text.length > MAX_BODY) throw new Error("answer too large");
  return JSON.parse(text);
}

async function fetchGroup(group: Record<string, unknown>): Promise<UptimeGroup> {
  const result: UptimeGroup = { categoryName: String(group.categoryName ?? ""), monitors: [] };
  const base = String(group.url ?? "").replace(/\/+$/, "");
  const slug = String(group.slug ?? "");
  if (!base || !slug) return result;
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  try {
    const slugPath = encodeURIComponent(slug);
    const [page, beats] = await Promise.all([
      getJson(`${base}/api/status-page/${slugPath}`, signal),
      getJson(`${base}/api/status-page/heartbeat/${slugPath}`, signal),
    ]);
    for (const pg of Array.isArray(page?.publicGroupList) ? page.publicGroupList : []) {
      for (const m of Array.isArray(pg?.monitorList) ? pg.monitorList : []) {
        const id = String(m?.id);
        const list = beats?.heartbeatList?.[id];
        // Uptime Kuma lists beats oldest first: the last one is the monitor's state now.
        const last = Array.isArray(list) && list.length ? list[list.length - 1] : null;
        const uptime = Number(beats?.uptimeList?.[`${id}_24`]);
        result.monitors.push({
          name: String(m?.name ?? ""),
          uptime: Number.isFinite(uptime) ? uptime : 0,
          status: Number.isFinite(Number(last?.status)) ? Number(last.status) : 0,
          group: String(pg?.name ?? ""),
        });
      }
    }
  } catch {
    // One unreachable Uptime Kuma leaves its group empty; the others still answer (as new-api does).
    result.monitors = [];
  }
  return result;
}

export function uptimeStatus(groupsRaw: string, now = Date.now()): Promise<UptimeGroup[]> {
  if (cached && cached.raw === groupsRaw && now - cached.at < CACHE_SECONDS * 1000) return cached.value;
  const groups = panelList(groupsRaw);
  const value = Promise.all(groups.map(fetchGroup));
  cached = { raw: groupsRaw, at: now, value };
  return value;
}
