// /metrics: off by default; when enabled, Prometheus text with requests by route class and status, the
// latency histogram, upstream errors by channel and pending-write gauges.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { metrics, recordUpstreamError, registerPendingWrites, routeClass, LATENCY_BUCKETS } from "../../server/http/metrics.ts";
import { testContext, type TestContext } from "../helpers/app.ts";

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("metrics disabled (the default)", () => {
  let ctx: TestContext;
  beforeAll(async () => (ctx = await testContext()));
  afterAll(() => ctx.close());

  test("/metrics is a JSON 404 naming the switch, and nothing is counted", async () => {
    metrics.reset();
    await ctx.request("GET", "/api/status");
    const res = await ctx.request("GET", "/metrics");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ success: false, message: "metrics are disabled: set METRICS_ENABLED=true to expose /metrics" });
    expect(metrics.requests.size).toBe(0);
  });
});

describe("metrics enabled", () => {
  let ctx: TestContext;
  beforeAll(async () => (ctx = await testContext({ config: { metricsEnabled: true } })));
  afterAll(() => ctx.close());

  test("counts requests by route class and status, and times them in a cumulative histogram", async () => {
    metrics.reset();
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
    expect(sample(text, "switchyard_http_requests_total", 'class="console",status="503"') ?? sample(text, "switchyard_http_requests_total", 'class="console",status="200"')).toBe(1);
    expect(text).toContain("# TYPE switchyard_http_request_duration_seconds histogram");
    // Buckets are cumulative and end with +Inf = count.
    const buckets = LATENCY_BUCKETS.map((le) => sample(text, "switchyard_http_request_duration_seconds_bucket", `class="api",le="${le}"`)!);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]).toBeGreaterThanOrEqual(buckets[i - 1]);
    expect(sample(text, "switchyard_http_request_duration_seconds_bucket", 'class="api",le="+Inf"')).toBe(4);
    expect(sample(text, "switchyard_http_request_duration_seconds_count", 'class="api"')).toBe(4);
    expect(buckets.at(-1)).toBe(4);
    expect(sample(text, "switchyard_http_request_duration_seconds_sum", 'class="api"')).toBeGreaterThan(0);
  });

  test("upstream errors by channel and pending writes from registered queues", async () => {
    metrics.reset();
    recordUpstreamError(7);
    recordUpstreamError(7);
    recordUpstreamError(12);
    let backlog = 3;
    const unregister = registerPendingWrites("logs", () => backlog);
    registerPendingWrites("broken", () => {
      throw new Error("queue gone");
    });
    let text: string = (await ctx.request("GET", "/metrics")).body;
    expect(sample(text, "switchyard_upstream_errors_total", 'channel="7"')).toBe(2);
    expect(sample(text, "switchyard_upstream_errors_total", 'channel="12"')).toBe(1);
    expect(sample(text, "switchyard_pending_writes", 'queue="logs"')).toBe(3);
    // A failing reader must not break the scrape.
    expect(text).toContain('switchyard_pending_writes{queue="broken"} NaN');
    backlog = 0;
    text = (await ctx.request("GET", "/metrics")).body;
    expect(sample(text, "switchyard_pending_writes", 'queue="logs"')).toBe(0);
    unregister();
    metrics.pending.delete("broken");
    text = (await ctx.request("GET", "/metrics")).body;
    expect(text).not.toContain('queue="logs"');
    expect(text).toMatch(/^switchyard_process_resident_memory_bytes \d+$/m);
  });

  test("the scrape itself is counted under its own class on a real socket", async () => {
    metrics.reset();
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
