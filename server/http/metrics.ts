// Prometheus metrics through prom-client: one process-wide registry holding named metric objects (requests
// by route class and status, a latency histogram, upstream errors by channel, pending write-behind work,
// the process gauges Switchyard always had) plus prom-client's default process and runtime metrics once
// metrics are enabled. The relay and the jobs record with plain function calls (recordUpstreamError,
// registerPendingWrites) and need no deps; a new metric is one more object registered in `registry`.
// GET /metrics answers only when METRICS_ENABLED is set; keep it off the public internet (no auth).
import { Elysia } from "elysia";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { AppDeps } from "../deps.ts";
import { errorBody } from "./errors.ts";

export type RouteClass = "api" | "relay" | "console" | "metrics";

/** Seconds; wide at the top because relay calls stream for minutes. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Every metric of the process is registered here, and /metrics renders exactly this registry. */
export const registry = new Registry();

export const httpRequests = new Counter({
  name: "switchyard_http_requests_total",
  help: "HTTP requests answered, by route class and status code.",
  labelNames: ["class", "status"] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: "switchyard_http_request_duration_seconds",
  help: "Time from request to response start, by route class.",
  labelNames: ["class"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const upstreamErrors = new Counter({
  name: "switchyard_upstream_errors_total",
  help: "Failed upstream calls (network errors and error statuses), by channel id.",
  labelNames: ["channel"] as const,
  registers: [registry],
});

/** Backlog readers by queue name; read at each scrape. */
const pendingReaders = new Map<string, () => number>();

export const pendingWrites = new Gauge({
  name: "switchyard_pending_writes",
  help: "Writes queued by the write-behind and not yet in the database, by queue.",
  labelNames: ["queue"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const [queue, read] of pendingReaders) {
      let value = NaN;
      try {
        value = read();
      } catch {} // a failing reader must not break the scrape: it shows NaN
      this.set({ queue }, Number.isFinite(value) ? value : NaN);
    }
  },
});

// The process gauges of earlier releases, kept so existing dashboards go on working; prom-client's
// defaults (process_resident_memory_bytes, nodejs_heap_size_used_bytes, process_start_time_seconds, ...)
// say the same in the names Node.js dashboards expect.
new Gauge({
  name: "switchyard_process_resident_memory_bytes",
  help: "Resident set size of this process.",
  registers: [registry],
  collect() {
    this.set(process.memoryUsage.rss());
  },
});
new Gauge({
  name: "switchyard_process_heap_used_bytes",
  help: "JavaScript heap in use.",
  registers: [registry],
  collect() {
    this.set(process.memoryUsage().heapUsed);
  },
});
new Gauge({
  name: "switchyard_process_uptime_seconds",
  help: "Seconds since this process started.",
  registers: [registry],
  collect() {
    this.set(process.uptime());
  },
});

let defaultsOn = false;

/** prom-client's process and runtime metrics; started once, and only when metrics are enabled (they sample the event loop). */
function enableDefaultMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics({ register: registry });
}

/** The relay calls this for every failed upstream attempt (after which it may retry another channel). */
export function recordUpstreamError(channelId: number): void {
  upstreamErrors.inc({ channel: String(channelId) });
}

/** A write-behind queue reports its backlog; registering the same name again replaces the reader. */
export function registerPendingWrites(queue: string, read: () => number): () => void {
  pendingReaders.set(queue, read);
  return () => {
    if (pendingReaders.get(queue) === read) pendingReaders.delete(queue);
  };
}

export function recordRequest(cls: RouteClass, status: number, seconds: number | null): void {
  httpRequests.inc({ class: cls, status: String(status) });
  if (seconds !== null) httpDuration.observe({ class: cls }, seconds);
}

/** Zeroes the counters and histograms (tests); registered readers and default metrics stay. */
export function resetMetrics(): void {
  registry.resetMetrics();
}

const RELAY = /^\/(v1|v1beta|pg|mj|suno|kling|jimeng)(\/|$)/;

export function routeClass(path: string): RouteClass {
  if (path === "/api" || path.startsWith("/api/")) return "api";
  if (RELAY.test(path)) return "relay";
  if (path === "/metrics") return "metrics";
  return "console";
}

export const PROMETHEUS_CONTENT_TYPE = registry.contentType;

/** Request accounting hooks plus GET /metrics; without METRICS_ENABLED only a 404 route. */
export function metricsPlugin(deps: AppDeps) {
  if (!deps.config.metricsEnabled) {
    // Answered here rather than thrown: this plugin is mounted before the app's error handler exists.
    return new Elysia().get("/metrics", () =>
      Response.json(errorBody("envelope", 404, "metrics are disabled: set METRICS_ENABLED=true to expose /metrics"), { status: 404 }));
  }
  enableDefaultMetrics();
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
    .get("/metrics", async () =>
      new Response(await registry.metrics(), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" } }));
}
