// Prometheus metrics: requests by route class and status, a latency histogram, upstream errors by
// channel, and gauges of pending write-behind work. One process-wide registry, so the relay and the
// jobs record with plain function calls (recordUpstreamError, registerPendingWrites) and need no deps.
// GET /metrics answers only when METRICS_ENABLED is set; keep it off the public internet (no auth).
import { Elysia } from "elysia";
import type { AppDeps } from "../deps.ts";
import { errorBody } from "./errors.ts";

export type RouteClass = "api" | "relay" | "console" | "metrics";

/** Seconds; wide at the top because relay calls stream for minutes. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

interface Histogram { buckets: number[]; sum: number; count: number }

class MetricsRegistry {
  readonly requests = new Map<string, number>();
  readonly latency = new Map<RouteClass, Histogram>();
  readonly upstreamErrors = new Map<number, number>();
  readonly pending = new Map<string, () => number>();

  recordRequest(cls: RouteClass, status: number, seconds: number | null): void {
    const key = `${cls}\u0000${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    if (seconds === null) return;
    let h = this.latency.get(cls);
    if (!h) this.latency.set(cls, (h = { buckets: LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 }));
    // Stored per bucket (not cumulative); render() accumulates.
    const i = LATENCY_BUCKETS.findIndex((le) => seconds <= le);
    if (i >= 0) h.buckets[i]++;
    h.sum += seconds;
    h.count++;
  }

  render(): string {
    const out: string[] = [];
    const family = (name: string, type: string, help: string) => out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);

    family("switchyard_http_requests_total", "counter", "HTTP requests answered, by route class and status code.");
    for (const [key, n] of [...this.requests].sort()) {
      const [cls, status] = key.split("\u0000");
      out.push(`switchyard_http_requests_total{class="${cls}",status="${status}"} ${n}`);
    }

    family("switchyard_http_request_duration_seconds", "histogram", "Time from request to response start, by route class.");
    for (const [cls, h] of [...this.latency].sort()) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((le, i) => {
        cumulative += h.buckets[i];
        out.push(`switchyard_http_request_duration_seconds_bucket{class="${cls}",le="${le}"} ${cumulative}`);
      });
      out.push(`switchyard_http_request_duration_seconds_bucket{class="${cls}",le="+Inf"} ${h.count}`);
      out.push(`switchyard_http_request_duration_seconds_sum{class="${cls}"} ${round(h.sum)}`);
      out.push(`switchyard_http_request_duration_seconds_count{class="${cls}"} ${h.count}`);
    }

    family("switchyard_upstream_errors_total", "counter", "Failed upstream calls (network errors and error statuses), by channel id.");
    for (const [channel, n] of [...this.upstreamErrors].sort((a, b) => a[0] - b[0])) {
      out.push(`switchyard_upstream_errors_total{channel="${channel}"} ${n}`);
    }

    family("switchyard_pending_writes", "gauge", "Writes queued by the write-behind and not yet in the database, by queue.");
    for (const [queue, read] of [...this.pending].sort((a, b) => a[0].localeCompare(b[0]))) {
      let value = NaN;
      try {
        value = read();
      } catch {}
      out.push(`switchyard_pending_writes{queue="${escapeLabel(queue)}"} ${Number.isFinite(value) ? value : "NaN"}`);
    }

    const mem = process.memoryUsage();
    family("switchyard_process_resident_memory_bytes", "gauge", "Resident set size of this process.");
    out.push(`switchyard_process_resident_memory_bytes ${mem.rss}`);
    family("switchyard_process_heap_used_bytes", "gauge", "JavaScript heap in use.");
    out.push(`switchyard_process_heap_used_bytes ${mem.heapUsed}`);
    family("switchyard_process_uptime_seconds", "gauge", "Seconds since this process started.");
    out.push(`switchyard_process_uptime_seconds ${round(process.uptime())}`);
    return out.join("\n") + "\n";
  }

  reset(): void {
    this.requests.clear();
    this.latency.clear();
    this.upstreamErrors.clear();
  }
}

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

function escapeLabel(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

export const metrics = new MetricsRegistry();

/** The relay calls this for every failed upstream attempt (after which it may retry another channel). */
export function recordUpstreamError(channelId: number): void {
  metrics.upstreamErrors.set(channelId, (metrics.upstreamErrors.get(channelId) ?? 0) + 1);
}

/** A write-behind queue reports its backlog; registering the same name again replaces the reader. */
export function registerPendingWrites(queue: string, read: () => number): () => void {
  metrics.pending.set(queue, read);
  return () => {
    if (metrics.pending.get(queue) === read) metrics.pending.delete(queue);
  };
}

const RELAY = /^\/(v1|v1beta|pg|mj|suno|kling|jimeng)(\/|$)/;

export function routeClass(path: string): RouteClass {
  if (path === "/api" || path.startsWith("/api/")) return "api";
  if (RELAY.test(path)) return "relay";
  if (path === "/metrics") return "metrics";
  return "console";
}

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Request accounting hooks plus GET /metrics; without METRICS_ENABLED only a 404 route. */
export function metricsPlugin(deps: AppDeps) {
  if (!deps.config.metricsEnabled) {
    // Answered here rather than thrown: this plugin is mounted before the app's error handler exists.
    return new Elysia().get("/metrics", () =>
      Response.json(errorBody("envelope", 404, "metrics are disabled: set METRICS_ENABLED=true to expose /metrics"), { status: 404 }));
  }
  // A wrapper around the whole fetch handler sees the final Response, after error mapping, and records
  // before the response is sent; lifecycle hooks run after it (too late for a scrape that follows).
  return new Elysia()
    .wrap((handle: (request: Request) => unknown) => async (request: Request) => {
      const t0 = performance.now();
      const response = await handle(request);
      const status = response instanceof Response ? response.status : 200;
      recordRequest(routeClass(new URL(request.url).pathname), status, (performance.now() - t0) / 1000);
      return response;
    })
    .get("/metrics", () => new Response(metrics.render(), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" } }));
}

export function recordRequest(cls: RouteClass, status: number, seconds: number | null): void {
  metrics.recordRequest(cls, status, seconds);
}
