// /metrics: off by default; when enabled, Prometheus text (prom-client) with requests by route class and
// status, the latency histogram, upstream errors by channel, pending-write gauges and the default process
// metrics.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  enabledMetrics,
  recordUpstreamError,
  registerPendingWrites,
  resetMetrics,
  routeClass,
  LATENCY_BUCKETS,
} from "../../server/http/metrics.ts";
import { testContext, type TestContext } from "../helpers/app.ts";

/** The label pairs of a sample line's braces, sorted: label order carries no meaning in Prometheus text. */
const labelSet = (labels: string) => (labels.match(/[a-z_]+="(?:[^"\\]|\\.)*"/g) ?? []).sort().join(",");

function sample(text: string, name: string, labels: string): number | undefined {
  const want = labelSet(labels);
  const line = text.split("\n").find((l) => {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(l);
    return m !== null && m[1] === name && labelSet(m[2] ?? "") === want;
  });
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("metrics disabled (the default)", () => {
  let ctx: TestContext;
  beforeAll(async () => (ctx = await testContext()));
  afterAll(() => ctx.close());

  test("/metrics is a JSON 404 naming the switch, and nothing is counted", async () => {
    resetMetrics();
    await ctx.request("GET", "/api/status");
    const res = await ctx.request("GET", "/metrics");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      success: false,
      message: "metrics are disabled: set METRICS_ENABLED=true to expose /metrics",
    });
    // (Another test file of this process may have enabled metrics; this app must not have counted.)
    expect((await enabledMetrics()?.httpRequests.get())?.values ?? []).toEqual([]);
  });
});

describe("metrics enabled", () => {
  let ctx: TestContext;
  beforeAll(async () => (ctx = await testContext({ config: { metricsEnabled: true } })));
  afterAll(() => ctx.close());

  test("counts requests by route class and status, and times them in a cumulative histogram", async () => {
    resetMetrics();
    await ctx.request("GET", "/api/status");
    await ctx.request("GET", "/api/status");
    await ctx.request("GET", "/api/user/self"); // no session: 401
    await ctx.request("GET", "/api/definitely-not-a-route");
    await ctx.request("POST", "/v1/chat/completions", { body: { model: "x", messages: [] } }); // no token: 401
    await ctx.request("GET", "/login");
    const res = await ctx.request("GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text: string = res.body;
    expect(sample(text, "switchyard_http_requests_total", 'class="api",status="200"')).toBe(2);
    expect(sample(text, "switchyard_http_requests_total", 'class="api",status="401"')).toBe(1);
    expect(sample(text, "switchyard_http_requests_total", 'class="api",status="404"')).toBe(1);
    expect(sample(text, "switchyard_http_requests_total", 'class="relay",status="401"')).toBe(1);
    expect(
      sample(text, "switchyard_http_requests_total", 'class="console",status="503"')
        ?? sample(text, "switchyard_http_requests_total", 'class="console",status="200"'),
    ).toBe(1);
    expect(text).toContain("# TYPE switchyard_http_request_duration_seconds histogram");
    // Buckets are cumulative and end with +Inf = count.
    const buckets = LATENCY_BUCKETS.map(
      (le) => sample(text, "switchyard_http_request_duration_seconds_bucket", `class="api",le="${le}"`)!,
    );
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]).toBeGreaterThanOrEqual(buckets[i - 1]);
    expect(sample(text, "switchyard_http_request_duration_seconds_bucket", 'class="api",le="+Inf"')).toBe(4);
    expect(sample(text, "switchyard_http_request_duration_seconds_count", 'class="api"')).toBe(4);
    expect(buckets.at(-1)).toBe(4);
    expect(sample(text, "switchyard_http_request_duration_seconds_sum", 'class="api"')).toBeGreaterThan(0);
  });

  test("upstream errors by channel and pending writes from registered queues", async () => {
    resetMetrics();
    recordUpstreamError(7);
    recordUpstreamError(7);
    recordUpstreamError(12);
    let backlog = 3;
    const unregister = registerPendingWrites("logs", () => backlog);
    const unregisterBroken = registerPendingWrites("broken", () => {
      throw new Error("queue gone");
    });
    let text: string = (await ctx.request("GET", "/metrics")).body;
    expect(sample(text, "switchyard_upstream_errors_total", 'channel="7"')).toBe(2);
    expect(sample(text, "switchyard_upstream_errors_total", 'channel="12"')).toBe(1);
    expect(sample(text, "switchyard_pending_writes", 'queue="logs"')).toBe(3);
    // A failing reader must not break the scrape: its queue shows NaN (prom-client writes "Nan", which
    // Prometheus reads as NaN: its parser takes special values in any case).
    expect(text).toMatch(/^switchyard_pending_writes\{queue="broken"\} NaN$/im);
    backlog = 0;
    text = (await ctx.request("GET", "/metrics")).body;
    expect(sample(text, "switchyard_pending_writes", 'queue="logs"')).toBe(0);
    unregister();
    unregisterBroken();
    text = (await ctx.request("GET", "/metrics")).body;
    expect(text).not.toContain('queue="logs"');
    expect(text).toMatch(/^switchyard_process_resident_memory_bytes \d+$/m);
    expect(text).not.toContain('queue="broken"');
  });

  test("default process metrics; a well-formed exposition with one HELP and TYPE per family", async () => {
    const unregister = registerPendingWrites('odd "queue"\\x\nnext', () => 1);
    const text: string = (await ctx.request("GET", "/metrics")).body;
    unregister();
    for (const name of [
      "process_cpu_user_seconds_total",
      "process_start_time_seconds",
      "nodejs_heap_size_used_bytes",
    ]) {
      expect(sample(text, name, "")).toBeGreaterThan(0);
    }
    expect(sample(text, "switchyard_process_heap_used_bytes", "")).toBeGreaterThan(0);
    expect(sample(text, "switchyard_process_uptime_seconds", "")).toBeGreaterThan(0);
    // A label value with quotes, a backslash and a line break is escaped, never a second line.
    expect(text).toContain('switchyard_pending_writes{queue="odd \\"queue\\"\\\\x\\nnext"} 1');
    const types = new Map<string, string>();
    const helps = new Set<string>();
    for (const line of text.split("\n").filter(Boolean)) {
      const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
      if (meta) {
        const seen = meta[1] === "HELP" ? helps.has(meta[2]) : types.has(meta[2]);
        expect(seen).toBe(false);
        if (meta[1] === "HELP") helps.add(meta[2]);
        else types.set(meta[2], meta[3]);
        continue;
      }
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/i.exec(line);
      expect(m).not.toBeNull();
      const name = m![1];
      const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
      expect(types.has(family)).toBe(true);
      if (family !== name) expect(types.get(family)).toMatch(/histogram|summary/);
    }
    expect([...helps].sort()).toEqual([...types.keys()].sort());
  });

  test("the scrape itself is counted under its own class on a real socket", async () => {
    resetMetrics();
    const server = ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
    try {
      const base = `http://127.0.0.1:${ctx.app.server!.port}`;
      expect((await fetch(base + "/api/status")).status).toBe(200);
      await fetch(base + "/metrics").then((r) => r.text());
      const text = await fetch(base + "/metrics").then((r) => r.text());
      expect(sample(text, "switchyard_http_requests_total", 'class="api",status="200"')).toBe(1);
      expect(sample(text, "switchyard_http_requests_total", 'class="metrics",status="200"')).toBe(1);
    } finally {
      await server.stop(true);
    }
  });
});

test("route classes", () => {
  expect(routeClass("/api/status")).toBe("api");
  expect(routeClass("/v1/chat/completions")).toBe("relay");
  expect(routeClass("/v1beta/models/gemini:generateContent")).toBe("relay");
  expect(routeClass("/mj/submit/imagine")).toBe("relay");
  expect(routeClass("/metrics")).toBe("metrics");
  expect(routeClass("/channel/edit/3")).toBe("console");
  expect(routeClass("/v1x")).toBe("console");
});
