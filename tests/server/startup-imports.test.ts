// Libraries that only some processes need are loaded on first use, not at start: nodemailer (~40 ms to
// evaluate) with the first mail, prom-client (~40 ms) when METRICS_ENABLED builds the registry,
// openid-client with the first OIDC call, the OpenTelemetry SDK when an OTLP endpoint is configured. Checked in a
// fresh process, since this one has loaded them all.
import { expect, test } from "bun:test";

// (@opentelemetry/api, the small interface package, is not listed: prom-client loads it for its exemplars.)
const OTEL = [
  "@opentelemetry/sdk-trace",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/otlp-transformer",
  "@opentelemetry/core",
  "@opentelemetry/resources",
  "@opentelemetry/context-async-hooks",
];
const LAZY = ["nodemailer", "prom-client", "openid-client", "oauth4webapi", ...OTEL];

test("loading the app loads none of the on-demand libraries; each loads when first needed", () => {
  const script = `
    const loaded = () => ${JSON.stringify(LAZY)}.filter((m) => Object.keys(require.cache).some((k) => k.includes("/node_modules/" + m + "/")));
    await import("./server/app.ts");
    const atStart = loaded();
    (await import("./server/http/metrics.ts")).enableMetrics();
    const afterMetrics = loaded();
    await (await import("./server/infra/mail.ts")).buildMessage("a@example.com", { to: "b@example.com", subject: "s", html: "x" });
    const afterMail = loaded();
    const { loadConfig } = await import("./server/config.ts");
    const tracing = (await import("./server/infra/tracing.ts")).enableTracing(loadConfig({ SESSION_SECRET: "s", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" }).tracing);
    const afterTracing = loaded();
    await tracing.shutdown();
    console.log(JSON.stringify({ atStart, afterMetrics, afterMail, afterTracing }));
  `;
  const proc = Bun.spawnSync([process.execPath, "-e", script], {
    cwd: `${import.meta.dir}/../..`,
    env: { ...process.env },
  });
  expect(proc.exitCode).toBe(0);
  const out = JSON.parse(proc.stdout.toString().trim().split("\n").at(-1)!);
  expect(out.atStart).toEqual([]);
  expect(out.afterMetrics).toEqual(["prom-client"]);
  expect(out.afterMail).toEqual(["nodemailer", "prom-client"]);
  expect(out.afterTracing).toEqual(["nodemailer", "prom-client", ...OTEL]);
});
