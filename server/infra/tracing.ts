// OpenTelemetry tracing through the OpenTelemetry JS SDK: a TracerProvider with a BatchSpanProcessor and
// the OTLP/HTTP trace exporter (JSON; protobuf with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf), a W3C
// trace-context propagator and an AsyncLocalStorage context manager. It is built only when an OTLP endpoint
// is configured (config.tracing; the SDK is slow to evaluate and a process without tracing never loads it;
// hot-path rule 15); until then activeTracing() is null and every relay hook (server/relay/observe.ts) returns at once.
// Spans are created by server/relay/observe.ts; this module only owns the SDK: start, the incoming
// `traceparent`, flush on shutdown.
import { Elysia } from "elysia";
import type * as OtelApi from "@opentelemetry/api";
import { VERSION, type TracingConfig } from "../config.ts";
import type { AppDeps } from "../deps.ts";

export type { Span, Context } from "@opentelemetry/api";

export interface Tracing {
  api: typeof OtelApi;
  tracer: OtelApi.Tracer;
  config: TracingConfig;
  /** Exports what the batch holds now (tests; shutdown). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let current: Tracing | null = null;

/** The tracer when tracing is configured, else null. */
export const activeTracing = (): Tracing | null => current;

/** Builds the SDK for `cfg` (loading it on first use). A different endpoint replaces the running provider. */
export function enableTracing(cfg: TracingConfig, instanceId?: string): Tracing {
  if (current && sameConfig(current.config, cfg)) return current;
  if (current) void current.shutdown().catch(() => {});
  const api = require("@opentelemetry/api") as typeof OtelApi;
  const sdk = require("@opentelemetry/sdk-trace") as typeof import("@opentelemetry/sdk-trace");
  const { OTLPTraceExporter } = (
    cfg.protocol === "http/protobuf"
      ? require("@opentelemetry/exporter-trace-otlp-proto")
      : require("@opentelemetry/exporter-trace-otlp-http")
  ) as typeof import("@opentelemetry/exporter-trace-otlp-http");
  const { resourceFromAttributes } = require("@opentelemetry/resources") as typeof import("@opentelemetry/resources");
  const { W3CTraceContextPropagator, setGlobalErrorHandler } =
    require("@opentelemetry/core") as typeof import("@opentelemetry/core");
  const { AsyncLocalStorageContextManager } =
    require("@opentelemetry/context-async-hooks") as typeof import("@opentelemetry/context-async-hooks");
  const { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } =
    require("@opentelemetry/semantic-conventions") as typeof import("@opentelemetry/semantic-conventions");

  // Global, once per process: the active context follows async calls (the incoming traceparent reaches the
  // relay through it), and traceparent/tracestate are read and written in the W3C format.
  if (!globalsSet) {
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    // A collector that refuses or cannot be reached is said on stderr, one line per failed batch; never thrown.
    setGlobalErrorHandler(exportFailed);
    api.diag.setLogger(new api.DiagConsoleLogger(), { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true });
    globalsSet = true;
  }
  exportUrl = cfg.url;
  const exporter = new OTLPTraceExporter({ url: cfg.url, headers: cfg.headers });
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({
      ...cfg.resourceAttributes,
      [ATTR_SERVICE_NAME]: cfg.serviceName,
      [ATTR_SERVICE_VERSION]: VERSION,
      // Semantic conventions' service.instance.id: which instance of the gateway served the call (INSTANCE_ID).
      ...(instanceId ? { "service.instance.id": instanceId } : {}),
    }),
    sampler: sampler(sdk, cfg),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter })],
  });
  const tracing: Tracing = {
    api,
    tracer: provider.getTracer("switchyard", VERSION),
    config: cfg,
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
  current = tracing;
  return tracing;
}
let globalsSet = false;
/** For the error line of a failed export (which may come after shutdownTracing() has let go of `current`). */
let exportUrl = "";
const exportFailed = (e: unknown) =>
  console.error(`tracing: exporting spans to ${exportUrl} failed: ${e instanceof Error ? e.message : String(e)}`);

/** Exports the spans still batched and stops the exporter (graceful shutdown; tests). */
export async function shutdownTracing(): Promise<void> {
  const t = current;
  current = null;
  if (t) await t.shutdown().catch(exportFailed);
}

function sameConfig(a: TracingConfig, b: TracingConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** OTEL_TRACES_SAMPLER's values of the specification; an unknown name falls back to the default. */
function sampler(sdk: typeof import("@opentelemetry/sdk-trace"), cfg: TracingConfig) {
  const ratio = new sdk.TraceIdRatioBasedSampler(cfg.samplerRatio);
  switch (cfg.sampler) {
    case "always_on":
      return new sdk.AlwaysOnSampler();
    case "always_off":
      return new sdk.AlwaysOffSampler();
    case "traceidratio":
      return ratio;
    case "parentbased_always_off":
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new sdk.ParentBasedSampler({ root: ratio });
    default:
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}

const headerGetter: OtelApi.TextMapGetter<Headers> = {
  keys: (h) => [...h.keys()],
  get: (h, key) => h.get(key) ?? undefined,
};

/** With tracing configured: builds the SDK and runs each request in the context of its `traceparent`
 * header (W3C), so the relay call's span joins the caller's trace. Without it: nothing at all. */
export function tracingPlugin(deps: AppDeps) {
  if (!deps.config.tracing) return new Elysia();
  const { api } = enableTracing(deps.config.tracing, deps.config.instanceId);
  return new Elysia().wrap((handle: (request: Request) => unknown) => (request: Request) => {
    if (!request.headers.has("traceparent")) return handle(request);
    const parent = api.propagation.extract(api.ROOT_CONTEXT, request.headers, headerGetter);
    return api.context.with(parent, handle, undefined, request);
  });
}
