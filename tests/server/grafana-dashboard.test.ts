// The Grafana dashboard in scripts/grafana/switchyard-dashboard.json: valid dashboard JSON (Prometheus
// datasource as the variable ${DS_PROMETHEUS}, unique panel ids, targets, a layout without overlaps), every
// expression valid PromQL by Prometheus's own grammar (@prometheus-io/lezer-promql), and every expression
// names metrics — and labels — that GET /metrics really exposes after relay traffic.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { parser as promqlParser } from "@prometheus-io/lezer-promql";
import { ratios, relayFixture, type RelayFixture } from "../relay/fixtures.ts";

const DASHBOARD = `${import.meta.dir}/../../scripts/grafana/switchyard-dashboard.json`;
const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8"));
const panels: any[] = dashboard.panels.filter((p: any) => p.type !== "row");
const targets = panels.flatMap((p: any) =>
  p.targets.map((t: any) => ({ panel: p.title as string, expr: t.expr as string })),
);

/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ["instance", "job"];
const PROMQL_WORDS = new Set([
  "sum",
  "avg",
  "min",
  "max",
  "count",
  "topk",
  "bottomk",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "and",
  "or",
  "unless",
  "rate",
  "irate",
  "increase",
  "delta",
  "histogram_quantile",
  "clamp_min",
  "clamp_max",
  "sort",
  "sort_desc",
  "abs",
  "label_replace",
  "vector",
]);

/** The metric selectors and the aggregation labels of one PromQL expression. */
function analyse(expr: string) {
  const selectors: { metric: string; labels: string[] }[] = [];
  let rest = expr.replace(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}/g, (_all, metric: string, matchers: string) => {
    selectors.push({
      metric,
      labels: [...matchers.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"/g)].map((m) => m[1]),
    });
    return " ";
  });
  const grouping: string[] = [];
  rest = rest.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_all, labels: string) => {
    grouping.push(
      ...labels
        .split(",")
        .map((l) => l.trim())
        .filter(Boolean),
    );
    return " ";
  });
  rest = rest
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/"[^"]*"/g, " ")
    .replace(/\b\d+(?:\.\d+)?(?:e-?\d+)?\b/g, " ");
  for (const word of rest.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? []) {
    if (!PROMQL_WORDS.has(word)) selectors.push({ metric: word, labels: [] });
  }
  return { selectors, grouping };
}

describe("Grafana dashboard JSON", () => {
  test("is a dashboard Grafana imports: datasource variable, unique ids, targets, grid without overlaps", () => {
    expect(typeof dashboard.title).toBe("string");
    expect(typeof dashboard.uid).toBe("string");
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const vars: any[] = dashboard.templating.list;
    const ds = vars.find((v) => v.name === "DS_PROMETHEUS");
    expect(ds).toMatchObject({ type: "datasource", query: "prometheus" });
    const ids = dashboard.panels.map((p: any) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(panels.length).toBeGreaterThanOrEqual(15);
    const cells = new Set<string>();
    for (const p of dashboard.panels) {
      const g = p.gridPos;
      expect(g.x + g.w).toBeLessThanOrEqual(24);
      for (let x = g.x; x < g.x + g.w; x++)
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`)).toBe(false);
          cells.add(`${x},${y}`);
        }
    }
    const known = new Set(["timeseries", "stat", "bargauge", "gauge", "table"]);
    for (const p of panels) {
      expect(known.has(p.type)).toBe(true);
      expect(p.datasource).toEqual({ type: "prometheus", uid: "${DS_PROMETHEUS}" });
      expect(p.targets.length).toBeGreaterThan(0);
      const refIds = p.targets.map((t: any) => t.refId);
      expect(new Set(refIds).size).toBe(refIds.length);
      for (const t of p.targets) {
        expect(t.datasource.uid).toBe("${DS_PROMETHEUS}");
        expect(t.expr.length).toBeGreaterThan(0);
      }
    }
    // Every $variable an expression uses is defined (or is one of Grafana's own).
    const defined = new Set(vars.map((v) => v.name));
    for (const { expr } of targets) {
      for (const [, name] of expr.matchAll(/\$(\w+)/g))
        if (!name.startsWith("__")) expect(defined.has(name)).toBe(true);
    }
    for (const v of vars.filter((v) => v.type === "query")) expect(v.datasource.uid).toBe("${DS_PROMETHEUS}");
  });

  test("every expression is PromQL by Prometheus's own grammar, and names the metrics read here", () => {
    for (const { panel, expr } of targets) {
      // Grafana's range variables become durations before the query reaches Prometheus.
      const promql = expr.replaceAll("$__rate_interval", "5m").replaceAll("$__range", "1h");
      const tree = promqlParser.parse(promql);
      const errors: number[] = [];
      const metrics = new Set<string>();
      tree.iterate({
        enter(n) {
          if (n.type.isError) errors.push(n.from);
          if (n.name === "Identifier" && n.node.parent?.name === "VectorSelector")
            metrics.add(promql.slice(n.from, n.to));
        },
      });
      expect({ panel, errors }).toEqual({ panel, errors: [] });
      expect([...metrics].sort()).toEqual([...new Set(analyse(expr).selectors.map((x) => x.metric))].sort());
    }
  });

  test("the expression parser sees what it should", () => {
    const a = analyse(
      'histogram_quantile(0.95, sum by (le, model) (rate(switchyard_relay_request_duration_seconds_bucket{model=~"$model",group="x"}[$__rate_interval]))) / clamp_min(up, 1e-9)',
    );
    expect(a.selectors).toEqual([
      { metric: "switchyard_relay_request_duration_seconds_bucket", labels: ["model", "group"] },
      { metric: "up", labels: [] },
    ]);
    expect(a.grouping).toEqual(["le", "model"]);
    const b = analyse(
      'sum by (channel) (rate(x_total[5m])) * on (channel) group_left (name) topk by (channel) (1, max by (channel, name) (info{job="j"}))',
    );
    expect(b.selectors).toEqual([
      { metric: "info", labels: ["job"] },
      { metric: "x_total", labels: [] },
    ]);
    expect(b.grouping).toEqual(["channel", "channel", "name", "channel", "channel", "name"]);
  });

  describe("against a live /metrics", () => {
    let fx: RelayFixture;
    /** series name → label names seen on it */
    const exposed = new Map<string, Set<string>>();
    beforeAll(async () => {
      fx = await relayFixture("sqlite", {}, { metricsEnabled: true });
      await fx.channel({ base_url: fx.mock.url, models: ["gpt-4o", "gpt-fail-500", "gpt-fail-503"] });
      await ratios(fx, ["gpt-4o", "gpt-fail-500", "gpt-fail-503"], 1);
      await fx.option("ModelFallbacks", JSON.stringify({ "gpt-fail-503": ["gpt-4o"] }));
      const user = await fx.user(10_000_000);
      const { key } = await fx.token(user.id);
      for (const [model, stream] of [
        ["gpt-4o", false],
        ["gpt-4o", true],
        ["gpt-fail-500", false],
        ["gpt-fail-503", false],
        ["unknown", false],
      ] as const) {
        await (
          await fx.call("/v1/chat/completions", key, { model, stream, messages: [{ role: "user", content: "hi" }] })
        ).text();
      }
      await fx.flush();
      const text = await (await fx.ctx.app.handle(new Request("http://localhost/metrics"))).text();
      for (const line of text.split("\n")) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
        if (!m) continue;
        const labels = exposed.get(m[1]) ?? new Set<string>();
        for (const [, name] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) labels.add(name);
        exposed.set(m[1], labels);
      }
    });
    afterAll(() => fx.close());

    test("every panel's metrics and labels exist", () => {
      const problems: string[] = [];
      for (const { panel, expr } of targets) {
        const { selectors, grouping } = analyse(expr);
        expect(selectors.length).toBeGreaterThan(0);
        const available = new Set(TARGET_LABELS);
        for (const { metric, labels } of selectors) {
          const have = exposed.get(metric);
          if (!have) {
            problems.push(`${panel}: ${metric} is not exposed`);
            continue;
          }
          for (const l of have) available.add(l);
          for (const l of labels)
            if (!have.has(l) && !TARGET_LABELS.includes(l)) problems.push(`${panel}: ${metric} has no label ${l}`);
        }
        for (const l of grouping)
          if (!available.has(l)) problems.push(`${panel}: grouping by ${l}, which none of its metrics has`);
      }
      expect(problems).toEqual([]);
    });

    test("every relay metric the gateway exposes is on the dashboard", () => {
      const used = new Set(
        targets.flatMap(({ expr }) => analyse(expr).selectors.map((s) => s.metric.replace(/_(bucket|sum|count)$/, ""))),
      );
      const relay = [...exposed.keys()]
        .filter((n) => n.startsWith("switchyard_relay_"))
        .map((n) => n.replace(/_(bucket|sum|count)$/, ""));
      expect([...new Set(relay)].filter((n) => !used.has(n))).toEqual([]);
      for (const n of [
        "switchyard_pending_writes",
        "nodejs_eventloop_lag_p99_seconds",
        "process_resident_memory_bytes",
      ])
        expect(used.has(n)).toBe(true);
    });
  });
});
