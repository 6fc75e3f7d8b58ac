// Prometheus metrics through prom-client: one registry holding named metric objects (requests by route
// class and status, a latency histogram, upstream errors by channel, pending write-behind work, the
// process gauges Switchyard always had) plus prom-client's default process and runtime metrics. It is
// built when METRICS_ENABLED is on (evaluating prom-client lengthens start-up, and a process without metrics
// never needs it; hot-path rule 15); until then recording is a no-op, as nobody could scrape. The relay and the jobs record
// with plain function calls (recordUpstreamError, registerPendingWrites, and server/relay/observe.ts for the
// per model/channel/group relay metrics) and need no deps; a new metric is one more object in build().
// GET /metrics answers only when METRICS_ENABLED is set; with METRICS_TOKEN, only to that bearer token.
import { Elysia } from "elysia";
import { createHash, timingSafeEqual } from "node:crypto";
import type { AppDeps } from "../deps.ts";
import { errorBody } from "./errors.ts";

export type RouteClass = "api" | "relay" | "console" | "metrics";

/** Seconds; wide at the top because relay calls stream for minutes. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Seconds to the first streamed chunk: finer where models answer (0.1–5 s). */
export const FIRST_TOKEN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60];

const RELAY_LABELS = ["model", "channel", "group"] as const;
const RELAY_STATUS_LABELS = ["model", "channel", "group", "status"] as const;

type PromClient = typeof import("prom-client");

/** Backlog readers by queue name, registered whether or not metrics are on; read at each scrape. */
const pendingReaders = new Map<string, () => number>();

interface ChannelRow {
  id: number;
  name: string | null;
  type: number;
  status: number;
}
/** The channels of the app serving /metrics (names for the dashboards' legends, status); read at each scrape. */
let channelReader: (() => Promise<ChannelRow[]>) | null = null;
let channelRead: Promise<ChannelRow[]> | null = null;

/** One database read per scrape for the gauges that show channels (a scrape starts every collect() at once,
 * so they share the read in flight); a failing read shows none. */
function channelRows(): Promise<ChannelRow[]> {
  if (!channelRead) {
    const read: Promise<ChannelRow[]> = (channelReader?.() ?? Promise.resolve([]))
      .catch(() => [])
      .finally(() => {
        if (channelRead === read) channelRead = null;
      });
    channelRead = read;
  }
  return channelRead;
}

/** Every metric of the process, registered in one registry. */
function build(client: PromClient) {
  const registry = new client.Registry();
  const registers = [registry];
  const metrics = {
    registry,
    httpRequests: new client.Counter({
      name: "switchyard_http_requests_total",
      help: "HTTP requests answered, by route class and status code.",
      labelNames: ["class", "status"] as const,
      registers,
    }),
    httpDuration: new client.Histogram({
      name: "switchyard_http_request_duration_seconds",
      help: "Time from request to response start, by route class.",
      labelNames: ["class"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    upstreamErrors: new client.Counter({
      name: "switchyard_upstream_errors_total",
      help: "Failed upstream calls (network errors and error statuses), by channel id.",
      labelNames: ["channel"] as const,
      registers,
    }),
    ...relayMetrics(client, registers),
    // One series per channel, value 1: joined on `channel` it puts names on the per-channel series
    // (`* on (channel) group_left (name) switchyard_channel_info`). Names are the operator's.
    channelInfo: new client.Gauge({
      name: "switchyard_channel_info",
      help: "Each channel's name and type, value 1, for joining on the channel label.",
      labelNames: ["channel", "name", "type"] as const,
      registers,
      async collect() {
        this.reset();
        for (const c of await channelRows())
          this.set({ channel: String(c.id), name: c.name ?? "", type: String(c.type) }, 1);
      },
    }),
    channelStatus: new client.Gauge({
      name: "switchyard_channel_status",
      help: "Each channel's status: 1 enabled, 2 disabled by an admin, 3 disabled automatically (failures, balance).",
      labelNames: ["channel"] as const,
      registers,
      async collect() {
        this.reset();
        for (const c of await channelRows()) this.set({ channel: String(c.id) }, c.status);
      },
    }),
    pendingWrites: new client.Gauge({
      name: "switchyard_pending_writes",
      help: "Writes queued by the write-behind and not yet in the database, by queue.",
      labelNames: ["queue"] as const,
      registers,
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
    }),
    // The process gauges of earlier releases, kept so existing dashboards go on working; prom-client's
    // defaults (process_resident_memory_bytes, nodejs_heap_size_used_bytes, process_start_time_seconds,
    // ...) say the same in the names Node.js dashboards expect.
    residentMemory: new client.Gauge({
      name: "switchyard_process_resident_memory_bytes",
      help: "Resident set size of this process.",
      registers,
      collect() {
        this.set(process.memoryUsage.rss());
      },
    }),
    heapUsed: new client.Gauge({
      name: "switchyard_process_heap_used_bytes",
      help: "JavaScript heap in use.",
      registers,
      collect() {
        this.set(process.memoryUsage().heapUsed);
      },
    }),
    uptime: new client.Gauge({
      name: "switchyard_process_uptime_seconds",
      help: "Seconds since this process started.",
      registers,
      collect() {
        this.set(process.uptime());
      },
    }),
  };
  client.collectDefaultMetrics({ register: registry });
  return metrics;
}

/** Relay calls by model, channel and group (recorded by server/relay/observe.ts). Every label value comes from
 * the operator's configuration (model names the routing table serves, channel ids, group names), never from
 * users: calls refused at admission carry empty model and channel labels. */
function relayMetrics(client: PromClient, registers: import("prom-client").Registry[]) {
  const name = (n: string) => `switchyard_relay_${n}`;
  const counter = (n: string, help: string) =>
    new client.Counter({ name: name(n), help, labelNames: RELAY_LABELS, registers });
  const byStatus = (n: string, help: string) =>
    new client.Counter({ name: name(n), help, labelNames: RELAY_STATUS_LABELS, registers });
  const histogram = (n: string, help: string, buckets: number[]) =>
    new client.Histogram({ name: name(n), help, labelNames: RELAY_LABELS, buckets, registers });
  return {
    relayRequests: byStatus(
      "requests_total",
      "Relay calls answered, by the model that served them, channel id, group and the client's status code.",
    ),
    relayErrors: byStatus(
      "errors_total",
      "Relay calls that failed (status >= 400), by model, channel id and group (both empty when refused at admission) and status code.",
    ),
    promptTokens: counter("prompt_tokens_total", "Prompt (input) tokens of settled relay calls."),
    completionTokens: counter("completion_tokens_total", "Completion (output) tokens of settled relay calls."),
    quotaSpent: counter(
      "quota_total",
      "Quota charged for settled relay calls (500000 = 1 USD at the default QuotaPerUnit).",
    ),
    relayDuration: histogram(
      "request_duration_seconds",
      "Time from the call's admission to the end of its answer (streams: the last chunk), served calls.",
      LATENCY_BUCKETS,
    ),
    firstToken: histogram(
      "first_token_seconds",
      "Time from the call's admission to the first streamed chunk, streamed calls.",
      FIRST_TOKEN_BUCKETS,
    ),
    fallbacks: new client.Counter({
      name: name("fallbacks_total"),
      help: "Calls served by a fallback model (ModelFallbacks / GroupModelFallbacks), by requested and serving model, reason and group.",
      labelNames: ["requested", "served", "reason", "group"] as const,
      registers,
    }),
    upstreamAttempts: byStatus(
      "upstream_attempts_total",
      "Upstream attempts by model, channel id, group and the upstream's status (502/504: no connection, timeout), retried ones included.",
    ),
    streamsInFlight: new client.Gauge({
      name: name("streams_in_flight"),
      help: "Streamed relay answers being forwarded now.",
      labelNames: RELAY_LABELS,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof build>;

let current: Metrics | null = null;

/** The process's metrics, built (and prom-client loaded) on the first call. */
export function enableMetrics(): Metrics {
  return (current ??= build(require("prom-client") as PromClient));
}

/** The metrics when enabled, else null. */
export const enabledMetrics = (): Metrics | null => current;

/** The relay calls this for every failed upstream attempt (after which it may retry another channel). */
export function recordUpstreamError(channelId: number): void {
  current?.upstreamErrors.inc({ channel: String(channelId) });
}

/** A write-behind queue reports its backlog; registering the same name again replaces the reader. */
export function registerPendingWrites(queue: string, read: () => number): () => void {
  pendingReaders.set(queue, read);
  return () => {
    if (pendingReaders.get(queue) === read) pendingReaders.delete(queue);
  };
}

export function recordRequest(cls: RouteClass, status: number, seconds: number | null): void {
  if (!current) return;
  current.httpRequests.inc({ class: cls, status: String(status) });
  if (seconds !== null) current.httpDuration.observe({ class: cls }, seconds);
}

/** Zeroes the counters and histograms (tests); registered readers and default metrics stay. */
export function resetMetrics(): void {
  current?.registry.resetMetrics();
}

const RELAY = /^\/(v1|v1beta|pg|mj|suno|kling|jimeng)(\/|$)/;

export function routeClass(path: string): RouteClass {
  if (path === "/api" || path.startsWith("/api/")) return "api";
  if (RELAY.test(path)) return "relay";
  if (path === "/metrics") return "metrics";
  return "console";
}

/** Request accounting hooks plus GET /metrics; without METRICS_ENABLED only a 404 route. */
export function metricsPlugin(deps: AppDeps) {
  if (!deps.config.metricsEnabled) {
    // Answered here rather than thrown: this plugin is mounted before the app's error handler exists.
    return new Elysia().get("/metrics", () =>
      Response.json(errorBody("envelope", 404, "metrics are disabled: set METRICS_ENABLED=true to expose /metrics"), {
        status: 404,
      }),
    );
  }
  const { registry } = enableMetrics();
  const token = deps.config.metricsToken;
  const readChannels = () => deps.db.selectFrom("channels").select(["id", "name", "type", "status"]).execute();
  channelReader = readChannels;
  deps.shutdownHooks.push(async () => {
    if (channelReader === readChannels) channelReader = null;
  });
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
    .get("/metrics", async ({ request }) => {
      if (token && !bearerIs(request, token)) {
        return Response.json(errorBody("envelope", 401, "metrics need Authorization: Bearer <METRICS_TOKEN>"), {
          status: 401,
          headers: { "www-authenticate": "Bearer" },
        });
      }
      return new Response(await registry.metrics(), {
        headers: { "content-type": registry.contentType, "cache-control": "no-store" },
      });
    });
}

/** The request's bearer token equals `token`, compared in constant time. */
function bearerIs(request: Request, token: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "");
  const given = createHash("sha256")
    .update(m?.[1]?.trim() ?? "")
    .digest();
  return timingSafeEqual(given, createHash("sha256").update(token).digest());
}
