// OpenTelemetry traces of relay calls: a local OTLP/HTTP receiver (JSON, as the gateway's exporter sends)
// gets, after each call, the call's span with its children — admission, each upstream attempt, settlement —
// and their attributes; an incoming W3C traceparent keeps its trace id. Attribute names are checked against
// @opentelemetry/semantic-conventions. Off (no endpoint), the hooks pass through and no SDK is loaded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as semconv from "@opentelemetry/semantic-conventions/incubating";
import { activeTracing, shutdownTracing } from "../../server/infra/tracing.ts";
import { gracefulShutdown } from "../../server/shutdown.ts";
import { loadConfig, type TracingConfig } from "../../server/config.ts";
import { ratios, relayFixture, type RelayFixture } from "../relay/fixtures.ts";
import { startMockUpstream, type MockUpstream } from "../mocks/openai-upstream.ts";
import { taskFixture } from "../relay/task-fixtures.ts";
import { startSunoMock } from "../mocks/suno-upstream.ts";
import { SUNO_MODELS } from "../../server/catalogue/tasks.ts";

/** The configuration these variables give (with a session secret, so nothing is written to ./data). */
const config = (env: Record<string, string>) => loadConfig({ SESSION_SECRET: "test-secret", ...env });

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
  events: { name: string }[];
  status: { code?: number; message?: string };
}

/** An attribute's value, whatever OTLP/JSON type it was sent as. */
function attr(span: OtlpSpan, key: string): unknown {
  const v = span.attributes.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if ("intValue" in v) return Number(v.intValue);
  return v.stringValue ?? v.boolValue ?? v.doubleValue;
}

const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 };
const STATUS = { UNSET: 0, OK: 1, ERROR: 2 };

describe("relay traces exported over OTLP/HTTP", () => {
  const received: { headers: Headers; body: any }[] = [];
  const receiver = Bun.serve({
    port: 0,
    async fetch(req) {
      if (new URL(req.url).pathname !== "/v1/traces" || req.method !== "POST")
        return new Response("not found", { status: 404 });
      received.push({ headers: req.headers, body: await req.json() });
      return Response.json({});
    },
  });
  let fx: RelayFixture;
  let broken: MockUpstream;
  let ok: number, bad: number;
  let key: string;

  const spans = (): OtlpSpan[] =>
    received.flatMap((r) => r.body.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)));
  /** The spans of one trace, after the gateway's batch has been exported. */
  async function traceOf(pick: (s: OtlpSpan) => boolean): Promise<{ call: OtlpSpan; children: OtlpSpan[] }> {
    await fx.flush();
    await activeTracing()!.flush();
    const call = spans()
      .filter((s) => s.kind === SPAN_KIND.SERVER && pick(s))
      .at(-1)!;
    expect(call).toBeDefined();
    return { call, children: spans().filter((s) => s.parentSpanId === call.spanId) };
  }

  beforeAll(async () => {
    const tracing: TracingConfig = {
      ...config({
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}/`,
        OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=s3cret%20value",
        OTEL_SERVICE_NAME: "gateway-under-test",
      }).tracing!,
    };
    expect(tracing.url).toBe(`http://127.0.0.1:${receiver.port}/v1/traces`);
    fx = await relayFixture("sqlite", {}, { tracing });
    broken = startMockUpstream({ failStatus: 500 });
    // The broken channel has the higher priority: it is tried first, then the call is retried on the good one.
    bad = await fx.channel({ name: "broken", base_url: broken.url, models: ["gpt-4o"], priority: 10 });
    ok = await fx.channel({
      name: "good",
      base_url: fx.mock.url,
      models: ["gpt-4o", "gpt-4o-mini"],
      model_mapping: { "gpt-4o-mini": "gpt-4o-mini-2024-07-18" },
    });
    await ratios(fx, ["gpt-4o", "gpt-4o-mini"], 1);
    await fx.option("RetryTimes", "2");
    const user = await fx.user(100_000_000);
    key = (await fx.token(user.id)).key;
  });
  afterAll(async () => {
    await shutdownTracing();
    broken.stop();
    receiver.stop(true);
    await fx.close();
  });

  test("a retried call: the call span, admission, two upstream attempts (the failed one first) and settlement", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const parentId = "b7ad6b7169203331";
    const res = await fx.call(
      "/v1/chat/completions",
      key,
      { model: "gpt-4o", max_tokens: 50, temperature: 0.5, messages: [{ role: "user", content: "hi" }] },
      { traceparent: `00-${traceId}-${parentId}-01` },
    );
    expect(res.status).toBe(200);
    await res.text();
    const { call, children } = await traceOf(
      (s) => attr(s, "gen_ai.request.model") === "gpt-4o" && s.traceId === traceId,
    );

    // The caller's trace goes on: same trace id, the caller's span as parent.
    expect(call.traceId).toBe(traceId);
    expect(call.parentSpanId).toBe(parentId);
    expect(call.name).toBe("chat gpt-4o");
    expect(attr(call, "gen_ai.operation.name")).toBe("chat");
    expect(attr(call, "gen_ai.request.max_tokens")).toBe(50);
    expect(attr(call, "gen_ai.request.temperature")).toBe(0.5);
    expect(attr(call, "gen_ai.request.stream")).toBe(false);
    expect(attr(call, "gen_ai.usage.input_tokens")).toBe(10);
    expect(attr(call, "gen_ai.usage.output_tokens")).toBe(20);
    expect(attr(call, "gen_ai.response.model")).toBe("gpt-4o");
    expect(attr(call, "switchyard.channel.id")).toBe(ok);
    expect(attr(call, "switchyard.group")).toBe("default");
    expect(attr(call, "switchyard.quota")).toBeGreaterThan(0);
    expect(attr(call, "http.response.status_code")).toBe(200);
    expect(call.status.code ?? STATUS.UNSET).not.toBe(STATUS.ERROR);

    expect(children.map((s) => s.name)).toEqual([
      "admission",
      "upstream chat gpt-4o",
      "upstream chat gpt-4o",
      "settlement",
    ]);
    const [admission, first, second, settlement] = children;
    expect(admission.traceId).toBe(traceId);
    expect(attr(admission, "switchyard.group")).toBe("default");
    expect(first.kind).toBe(SPAN_KIND.CLIENT);
    expect(attr(first, "switchyard.channel.id")).toBe(bad);
    expect(attr(first, "switchyard.channel.name")).toBe("broken");
    expect(attr(first, "switchyard.channel.type")).toBe(1);
    expect(attr(first, "gen_ai.provider.name")).toBe("openai");
    expect(attr(first, "switchyard.attempt")).toBe(1);
    expect(attr(first, "switchyard.retry")).toBe(false);
    expect(attr(first, "http.response.status_code")).toBe(500);
    expect(attr(first, "switchyard.retryable")).toBe(true);
    expect(attr(first, "server.address")).toBe("127.0.0.1");
    expect(first.status.code).toBe(STATUS.ERROR);
    expect(attr(second, "switchyard.channel.id")).toBe(ok);
    expect(attr(second, "switchyard.attempt")).toBe(2);
    expect(attr(second, "switchyard.retry")).toBe(true);
    expect(attr(second, "http.response.status_code")).toBe(200);
    expect(second.status.code ?? STATUS.UNSET).not.toBe(STATUS.ERROR);
    expect(attr(settlement, "gen_ai.usage.input_tokens")).toBe(10);
    expect(attr(settlement, "switchyard.quota")).toBe(attr(call, "switchyard.quota"));

    // The exporter carried OTEL_EXPORTER_OTLP_HEADERS and the service's resource attributes.
    const last = received.at(-1)!;
    expect(last.headers.get("x-collector-key")).toBe("s3cret value");
    const resource = last.body.resourceSpans[0].resource.attributes;
    expect(resource.find((a: any) => a.key === "service.name").value.stringValue).toBe("gateway-under-test");
    expect(resource.find((a: any) => a.key === "service.version").value.stringValue).toBeTruthy();
  });

  test("a streamed call without traceparent starts its own trace; first chunk and the mapped upstream model are recorded", async () => {
    const res = await fx.call("/v1/chat/completions", key, {
      model: "gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("[DONE]");
    const { call, children } = await traceOf((s) => s.name === "chat gpt-4o-mini");
    expect(call.parentSpanId ?? "").toBe("");
    expect(attr(call, "gen_ai.request.stream")).toBe(true);
    expect(attr(call, "gen_ai.response.model")).toBe("gpt-4o-mini-2024-07-18");
    expect(attr(call, "gen_ai.response.time_to_first_chunk")).toBeGreaterThan(0);
    expect(call.events.map((e) => e.name)).toContain("gen_ai.first_chunk");
    expect(children.map((s) => s.name)).toEqual(["admission", "upstream chat gpt-4o-mini-2024-07-18", "settlement"]);
    expect(attr(children[1], "gen_ai.request.model")).toBe("gpt-4o-mini-2024-07-18");
    expect(children.every((s) => s.traceId === call.traceId)).toBe(true);
  });

  test("a refused call: the call and its admission end in error with the client's status; the span is named by its operation", async () => {
    const res = await fx.call(
      "/v1/chat/completions",
      key,
      { model: "no-such-model", messages: [{ role: "user", content: "hi" }] },
      { traceparent: "00-11111111111111111111111111111111-2222222222222222-01" },
    );
    expect(res.status).toBe(404);
    const { call, children } = await traceOf((s) => s.traceId === "11111111111111111111111111111111");
    expect(call.status.code).toBe(STATUS.ERROR);
    // Not "chat no-such-model": span names must not carry text a client made up.
    expect(call.name).toBe("chat");
    expect(attr(call, "gen_ai.request.model")).toBe("no-such-model");
    expect(attr(call, "http.response.status_code")).toBe(404);
    expect(attr(call, "error.type")).toBe("model_not_found");
    expect(children.map((s) => s.name)).toEqual(["admission"]);
    expect(children[0].status.code).toBe(STATUS.ERROR);
  });

  test("every attribute name the gateway uses outside switchyard.* is one of the semantic conventions", () => {
    const names = new Set(spans().flatMap((s) => s.attributes.map((a) => a.key)));
    const known = new Set(
      Object.entries(semconv)
        .filter(([k]) => k.startsWith("ATTR_"))
        .map(([, v]) => v as string),
    );
    const foreign = [...names].filter((n) => !n.startsWith("switchyard.") && !known.has(n));
    expect(foreign).toEqual([]);
    expect(names.has(semconv.ATTR_GEN_AI_USAGE_INPUT_TOKENS)).toBe(true);
    expect(names.has(semconv.ATTR_GEN_AI_REQUEST_MODEL)).toBe(true);
    expect(names.has(semconv.ATTR_GEN_AI_PROVIDER_NAME)).toBe(true);
  });
});

/** A local OTLP/HTTP receiver: what each export request carried (JSON parsed, else the raw bytes). */
function collector(answer: () => Response = () => Response.json({})) {
  const bodies: any[] = [];
  const raw: { type: string | null; bytes: Buffer }[] = [];
  const server = Bun.serve({
    port: 0,
    async fetch(req) {
      const type = req.headers.get("content-type");
      const bytes = Buffer.from(await req.arrayBuffer());
      raw.push({ type, bytes });
      if (type?.includes("json")) bodies.push(JSON.parse(bytes.toString()));
      return answer();
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    bodies,
    raw,
    names: () => spansIn(bodies).map((sp) => sp.name),
    stop: () => server.stop(true),
  };
}
const spansIn = (bodies: any[]): OtlpSpan[] =>
  bodies.flatMap((b) => b.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)));

/** A gateway traced as the OTEL_* `env` says, one channel serving gpt-4o, and a chat call to it. */
async function tracedGateway(env: Record<string, string>) {
  const fx = await relayFixture("sqlite", {}, { tracing: config(env).tracing });
  await fx.channel({ base_url: fx.mock.url, models: ["gpt-4o"] });
  await ratios(fx, ["gpt-4o"], 1);
  const user = await fx.user(10_000_000);
  const { key } = await fx.token(user.id);
  const chat = async (headers?: Record<string, string>) => {
    const res = await fx.call(
      "/v1/chat/completions",
      key,
      { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] },
      headers,
    );
    expect(res.status).toBe(200);
    const body = await res.json();
    await fx.flush();
    return body;
  };
  return { fx, chat };
}

describe("graceful shutdown", () => {
  test("exports the spans still in the batch before the process exits", async () => {
    const otlp = collector();
    const { fx, chat } = await tracedGateway({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces` });
    try {
      await chat();
      // The batch waits 5 s before exporting on its own; nothing has gone out yet.
      expect(otlp.raw).toEqual([]);
      await gracefulShutdown(null, fx.ctx.deps, { graceMs: 1000, log: () => {} });
      expect(otlp.names()).toEqual(["admission", "upstream chat gpt-4o", "settlement", "chat gpt-4o"]);
      expect(activeTracing()).toBeNull();
    } finally {
      // (Closing the deps again after the shutdown closed them is harmless; it drops the temporary database.)
      await fx.close();
      otlp.stop();
    }
  });
});

describe("a collector that fails", () => {
  test("costs the call nothing; the failed export is one line on stderr", async () => {
    const otlp = collector(() => new Response("broken", { status: 500 }));
    const { fx, chat } = await tracedGateway({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url });
    const logged: string[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void logged.push(args.join(" "));
    try {
      expect((await chat()).choices[0].message.content).toBeTruthy();
      await shutdownTracing();
      expect(logged).toEqual([`tracing: exporting spans to ${otlp.url}/v1/traces failed: Internal Server Error`]);
    } finally {
      console.error = original;
      await fx.close();
      otlp.stop();
    }
  });
});

describe("task relays", () => {
  test("a task submission: the call span with admission, the upstream attempt and the charge as settlement", async () => {
    const otlp = collector();
    const fx = await taskFixture("sqlite", { tracing: config({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }).tracing });
    const suno = startSunoMock({ key: "suno-key-123456" });
    try {
      const channelId = await fx.channel({
        type: 36,
        key: "suno-key-123456",
        base_url: suno.url,
        models: [...SUNO_MODELS],
      });
      const p = await fx.payer(10_000_000, 5_000_000);
      const r = await fx.post(
        "/suno/submit/music",
        p.key,
        { prompt: "a sea shanty" },
        { traceparent: "00-cccccccccccccccccccccccccccccccc-dddddddddddddddd-01" },
      );
      expect(r.status).toBe(200);
      await activeTracing()!.flush();
      const spans = spansIn(otlp.bodies);
      const call = spans.find((s) => s.kind === SPAN_KIND.SERVER)!;
      expect(call.traceId).toBe("cccccccccccccccccccccccccccccccc");
      expect(attr(call, "gen_ai.request.model")).toBe("suno_music");
      expect(attr(call, "switchyard.task.accepted")).toBe(true);
      expect(attr(call, "switchyard.quota")).toBeGreaterThan(0);
      expect(attr(call, "switchyard.channel.id")).toBe(channelId);
      const children = spans.filter((s) => s.parentSpanId === call.spanId);
      expect(children.map((s) => s.name)).toEqual([
        "admission",
        `upstream ${attr(call, "gen_ai.operation.name")} suno_music`,
        "settlement",
      ]);
      expect(attr(children[1], "http.response.status_code")).toBe(200);
      expect(attr(children[1], "switchyard.channel.id")).toBe(channelId);
      expect(attr(children[2], "switchyard.quota")).toBe(attr(call, "switchyard.quota"));
    } finally {
      await shutdownTracing();
      await suno.stop();
      await fx.close();
      otlp.stop();
    }
  });
});

describe("sampling", () => {
  test("a call the sampler leaves out exports nothing, children included; a sampled caller's trace is followed", async () => {
    const otlp = collector();
    const { fx, chat } = await tracedGateway({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0",
    });
    try {
      await chat();
      await activeTracing()!.flush();
      expect(otlp.raw).toEqual([]);
      // The caller sampled its trace (flags 01): parent-based sampling follows it.
      await chat({ traceparent: "00-aaaabbbbccccddddeeeeffff00001111-1234567890abcdef-01" });
      await activeTracing()!.flush();
      expect(otlp.names()).toEqual(["admission", "upstream chat gpt-4o", "settlement", "chat gpt-4o"]);
    } finally {
      await shutdownTracing();
      await fx.close();
      otlp.stop();
    }
  });
});

describe("OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", () => {
  test("spans go out as binary OTLP protobuf, with the caller's trace id", async () => {
    const otlp = collector(
      () => new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } }),
    );
    expect(
      config({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" }).tracing!.protocol,
    ).toBe("http/protobuf");
    const { fx, chat } = await tracedGateway({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
    });
    try {
      const traceId = "5b8efff798038103d269b633813fc60c";
      await chat({ traceparent: `00-${traceId}-eee19b7ec3c1b174-01` });
      await activeTracing()!.flush();
      expect(otlp.raw.length).toBeGreaterThan(0);
      expect(otlp.raw.every((b) => b.type === "application/x-protobuf")).toBe(true);
      const all = Buffer.concat(otlp.raw.map((b) => b.bytes));
      // Protobuf carries the span names as UTF-8 and the trace id as its 16 raw bytes.
      for (const name of ["chat gpt-4o", "admission", "upstream chat gpt-4o", "settlement"])
        expect(all.includes(Buffer.from(name))).toBe(true);
      expect(all.includes(Buffer.from(traceId, "hex"))).toBe(true);
      expect(all.includes(Buffer.from('"traceId"'))).toBe(false);
    } finally {
      await shutdownTracing();
      await fx.close();
      otlp.stop();
    }
  });
});

describe("tracing off (no OTLP endpoint)", () => {
  test("no configuration: tracing is null; OTEL_SDK_DISABLED wins over an endpoint", () => {
    expect(config({}).tracing).toBeNull();
    expect(
      config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }).tracing,
    ).toBeNull();
    const c = config({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://other:4318/custom",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
    }).tracing!;
    expect(c.url).toBe("http://other:4318/custom");
    expect(c.serviceName).toBe("switchyard");
    expect(c.sampler).toBe("parentbased_traceidratio");
    expect(c.samplerRatio).toBe(0.25);
    expect(c.protocol).toBe("http/json");
    expect(() =>
      config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
    ).toThrow("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported");
  });

  test("the relay hooks pass the call through and load neither the OpenTelemetry SDK nor prom-client", () => {
    const script = `
      const { observeCall, observeAdmission, observeAttempt, observeAttemptEnd, observeStream, observeSettling, observeSettled, observeError } = await import("./server/relay/observe.ts");
      const req = { caller: { group: "default" }, model: "m", mode: "chat", stream: false };
      const p = Promise.resolve(new Response("x"));
      const a = Promise.resolve({});
      const s = { req, channel: { id: 1, type: 1 }, started: 0, firstByteMs: 0, usedChannels: [] };
      const same = observeCall(req, () => p) === p && observeAdmission(req, () => a) === a;
      observeAttempt(req, { channel: { id: 1, type: 1 }, upstreamModel: "m", baseUrl: "http://x" });
      observeAttemptEnd(req, { res: new Response("") });
      observeStream(s); observeSettling(s); observeSettled(s, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, 5);
      observeError(req, Object.assign(new Error("x"), { status: 500 }), 1);
      const loaded = Object.keys(require.cache).filter((k) => k.includes("/node_modules/@opentelemetry/") || k.includes("/node_modules/prom-client/"));
      console.log(JSON.stringify({ same, loaded }));
    `;
    const proc = Bun.spawnSync([process.execPath, "-e", script], {
      cwd: `${import.meta.dir}/../..`,
      env: { ...process.env },
    });
    expect(proc.exitCode).toBe(0);
    expect(JSON.parse(proc.stdout.toString().trim().split("\n").at(-1)!)).toEqual({ same: true, loaded: [] });
  });
});
