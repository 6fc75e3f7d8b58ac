// What the relay tells Prometheus (server/http/metrics.ts) and OpenTelemetry (server/infra/tracing.ts) about
// each call. The relay core calls these with one line each — admission, each upstream attempt, the start
// of a stream, settlement, failure — and each returns after a null check (or a lookup in an empty WeakMap)
// when METRICS_ENABLED is off and no OTLP endpoint is configured: no await, no I/O, nothing kept.
//
// Spans of one call (exchange endpoints: /v1/chat/completions, /v1/messages, Gemini, responses, ...; task
// submissions alike, their charge as the settlement):
//   "{operation} {model}" (SERVER; child of the caller's `traceparent` when it sent one)
//     ├─ "admission"                      token, model, price, limits, hold
//     ├─ "upstream {operation} {model}"   (CLIENT) one per attempt: channel id/type/name, status, retry
//     └─ "settlement"                     usage counted, quota charged
// Attribute names follow the OpenTelemetry GenAI semantic conventions where one fits (gen_ai.*), else
// switchyard.*; tests/server/tracing.test.ts checks them against @opentelemetry/semantic-conventions.
//
// Metric labels come from the operator's configuration only — model names the routing table serves,
// channel ids, group names — never users' free text: a call refused at admission (unknown model, token
// limits, quota) is counted with empty model and channel, so random model names cannot create series.
import { AppError } from "../http/errors.ts";
import { channelType } from "../catalogue/channel-types.ts";
import { enabledMetrics } from "../http/metrics.ts";
import { activeTracing, type Context, type Span, type Tracing } from "../infra/tracing.ts";
import type { Admission, RelayRequest } from "./core/admit.ts";
import type { Caller } from "./auth.ts";
import type { Served } from "./core/settle.ts";
import type { ProviderCall, RelayMode, Usage } from "./providers/types.ts";

/** The spans of one call in flight (only while tracing is on). */
interface CallTrace {
  tracing: Tracing;
  call: Span;
  ctx: Context;
  attempt: Span | null;
  settlement: Span | null;
  attempts: number;
}

/** One exchange call between observeCall() and its end; keyed by its Caller, which a fallback's request shares. */
interface CallState {
  trace: CallTrace | null;
  /** Some admission passed: the model label is one the routing table serves. */
  admitted: boolean;
  /** The channel of the latest attempt (a client gone mid-attempt is counted there). */
  channel: number;
  /** Counted already (recordError(), settlement): the error reaching observeCall() is not counted again. */
  done: boolean;
}

const calls = new WeakMap<Caller, CallState>();
/** Served calls counted in switchyard_relay_streams_in_flight, until they settle. */
const streaming = new WeakSet<Served>();

const stateOf = (req: RelayRequest): CallState | undefined => calls.get(req.caller);
const traceOf = (req: RelayRequest): CallTrace | null | undefined => activeTracing() && calls.get(req.caller)?.trace;

/** Runs an exchange call (admit → route → deliver) under observation: its trace, and its failure when it
 * throws one that recordError() did not count (refused at admission, client gone mid-attempt). */
/** Whether calls are observed at all (metrics or tracing on): when not, a caller skips the wrappers below and
 * the closure it would hand them (one less function and scope per call). */
export function callsObserved(): boolean {
  return activeTracing() !== null || enabledMetrics() !== null;
}

export function observeCall<T = Response>(req: RelayRequest, run: () => Promise<T>): Promise<T> {
  const tracing = activeTracing();
  if (!tracing && !enabledMetrics()) return run();
  const state: CallState = {
    trace: tracing ? startCall(tracing, req) : null,
    admitted: false,
    channel: 0,
    done: false,
  };
  calls.set(req.caller, state);
  return run().catch((e) => {
    if (!state.done) failed(req, e, state.channel, !state.admitted);
    throw e;
  });
}

/** One admission of the call (the requested model, then each fallback model): a span, and a mark that the model is served. */
export function observeAdmission(req: RelayRequest, run: () => Promise<Admission>): Promise<Admission> {
  const state = stateOf(req);
  if (!state) return run();
  const t = activeTracing() ? state.trace : null;
  const span = t
    ? t.tracing.tracer.startSpan("admission", { attributes: { "gen_ai.request.model": req.model } }, t.ctx)
    : null;
  return run().then(
    (adm) => {
      state.admitted = true;
      span?.setAttribute("switchyard.group", req.caller.group);
      span?.end();
      return adm;
    },
    (e) => {
      if (span && t) {
        span.setStatus({
          code: t.tracing.api.SpanStatusCode.ERROR,
          message: e instanceof Error ? e.message : String(e),
        });
        span.setAttribute("error.type", (e as AppError)?.code ?? String((e as AppError)?.status ?? "error"));
        span.end();
      }
      throw e;
    },
  );
}

/** An upstream attempt of `req` on `call.channel` begins. */
export function observeAttempt(req: RelayRequest, call: ProviderCall): void {
  const state = stateOf(req);
  if (!state) return;
  state.channel = call.channel.id;
  const t = activeTracing() ? state.trace : null;
  if (!t) return;
  t.attempt?.end();
  t.attempts++;
  const { api, tracer } = t.tracing;
  const op = operation(req.mode);
  const attrs: Record<string, string | number | boolean> = {
    "gen_ai.operation.name": op,
    "gen_ai.provider.name": providerName(call.channel.type),
    "gen_ai.request.model": call.upstreamModel,
    "switchyard.channel.id": call.channel.id,
    "switchyard.channel.type": call.channel.type,
    "switchyard.channel.name": call.channel.name ?? "",
    "switchyard.attempt": t.attempts,
    "switchyard.retry": t.attempts > 1,
  };
  try {
    const u = new URL(call.baseUrl);
    attrs["server.address"] = u.hostname;
    attrs["server.port"] = Number(u.port) || (u.protocol === "https:" ? 443 : 80);
  } catch {}
  t.attempt = tracer.startSpan(
    `upstream ${op} ${call.upstreamModel}`,
    { kind: api.SpanKind.CLIENT, attributes: attrs },
    t.ctx,
  );
}

/** The attempt ended: an answer (an exchange's upstream Response, a task's accepted submission: 200) or the
 * error after which the relay may try the next channel. */
export function observeAttemptEnd(req: RelayRequest, result: { res: Response } | AppError | object): void {
  const state = stateOf(req);
  if (!state) return;
  const status =
    result instanceof AppError
      ? result.status
      : "res" in result && result.res instanceof Response
        ? result.res.status
        : 200;
  enabledMetrics()?.upstreamAttempts.inc({ ...labels(req, state.channel), status: String(status) });
  const t = activeTracing() ? state.trace : null;
  if (!t?.attempt) return;
  const span = t.attempt;
  t.attempt = null;
  if (!(result instanceof AppError)) span.setAttribute("http.response.status_code", status);
  else {
    span.setAttributes({
      "http.response.status_code": status,
      "error.type": result.code ?? String(result.status),
      "switchyard.retryable": (result as { retry?: boolean }).retry === true,
    });
    span.setStatus({ code: t.tracing.api.SpanStatusCode.ERROR, message: result.message });
  }
  span.end();
}

/** A streamed answer starts flowing to the client (the in-flight gauge, until the call settles). */
export function observeStream(s: Served): void {
  const m = enabledMetrics();
  if (!m) return;
  m.streamsInFlight.inc(labels(s.req, s.channel.id));
  streaming.add(s);
}

/** The answer has gone out (finish()): the call counts as served; its latency and first token are known. */
export function observeSettling(s: Served): void {
  const m = enabledMetrics();
  if (m) {
    const l = labels(s.req, s.channel.id);
    if (streaming.delete(s)) m.streamsInFlight.dec(l);
    m.relayRequests.inc({ ...l, status: "200" });
    m.relayDuration.observe(l, (performance.now() - s.started) / 1000);
    if (s.req.stream && s.firstByteMs > 0) m.firstToken.observe(l, s.firstByteMs / 1000);
    // Both model names are the operator's: a fallback follows only a configured rule.
    if (s.fallback)
      m.fallbacks.inc({
        requested: s.fallback.requested,
        served: s.fallback.served,
        reason: s.fallback.reason,
        group: s.req.caller.group,
      });
  }
  const state = stateOf(s.req);
  if (!state) return;
  state.done = true;
  const t = activeTracing() ? state.trace : null;
  if (!t) return;
  t.attempt?.end();
  t.attempt = null;
  if (s.req.stream && s.firstByteMs > 0) {
    t.call.addEvent("gen_ai.first_chunk", undefined, s.started + s.firstByteMs);
    t.call.setAttribute("gen_ai.response.time_to_first_chunk", s.firstByteMs / 1000);
  }
  t.settlement = t.tracing.tracer.startSpan("settlement", undefined, t.ctx);
}

/** The served call is settled: `quota` charged for `u`. Ends its trace. */
export function observeSettled(s: Served, u: Usage, quota: number): void {
  const m = enabledMetrics();
  if (m) {
    const l = labels(s.req, s.channel.id);
    m.promptTokens.inc(l, u.prompt_tokens);
    m.completionTokens.inc(l, u.completion_tokens);
    m.quotaSpent.inc(l, quota);
  }
  const t = traceOf(s.req);
  if (!t) return;
  calls.delete(s.req.caller);
  const usage = {
    "gen_ai.usage.input_tokens": u.prompt_tokens,
    "gen_ai.usage.output_tokens": u.completion_tokens,
    "gen_ai.usage.cache_read.input_tokens": u.cached_tokens ?? 0,
    "gen_ai.usage.cache_creation.input_tokens": u.cache_creation_tokens ?? 0,
    "switchyard.quota": quota,
  };
  t.settlement?.setAttributes(usage);
  t.settlement?.end();
  t.call.setAttributes({
    ...usage,
    "gen_ai.response.model": s.upstreamModel,
    "switchyard.served_model": s.req.model,
    "switchyard.channel.id": s.channel.id,
    "switchyard.channels_tried": s.usedChannels.length,
    ...(s.fallback
      ? { "switchyard.fallback.requested": s.fallback.requested, "switchyard.fallback.reason": s.fallback.reason }
      : {}),
    "http.response.status_code": 200,
    ...(s.interrupted ? { "switchyard.stream_interrupted": true } : {}),
  });
  t.call.end();
}

/** A task relay's submission (Midjourney, Suno, video) under observation, like observeCall(): it ends when
 * the submission is answered — taken (observeTaskAccepted) or refused by every channel tried. */
export function observeTaskCall<T>(req: RelayRequest, run: () => Promise<T>): Promise<T> {
  if (!activeTracing() && !enabledMetrics()) return run();
  return observeCall(req, run).then((result) => {
    const t = traceOf(req);
    if (t) {
      // Still open: no channel took the task (each refusal is its attempt's error).
      calls.delete(req.caller);
      t.call.setAttributes({ "switchyard.task.accepted": false });
      t.call.setStatus({ code: t.tracing.api.SpanStatusCode.ERROR, message: "the upstream refused the task" });
      t.call.end();
    }
    return result;
  });
}

/** The task's price is being charged (core/task-settle.ts chargeTask): its settlement span. */
export function observeTaskCharging(req: RelayRequest): void {
  const t = traceOf(req);
  if (t) t.settlement = t.tracing.tracer.startSpan("settlement", undefined, t.ctx);
}

/** A task relay's submission was taken by `channelId`: a served call. Its quota is not counted in the
 * metrics — a task that fails later is refunded, and counters cannot go back (the span carries it). */
export function observeTaskAccepted(
  adm: Admission,
  channelId: number,
  quota: number,
  req: RelayRequest = adm.req,
): void {
  const m = enabledMetrics();
  if (m) {
    const l = labels(adm.req, channelId);
    m.relayRequests.inc({ ...l, status: "200" });
    m.relayDuration.observe(l, (performance.now() - adm.started) / 1000);
  }
  const state = stateOf(req);
  if (!state) return;
  state.done = true;
  const t = activeTracing() ? state.trace : null;
  if (!t) return;
  calls.delete(req.caller);
  t.settlement?.setAttribute("switchyard.quota", quota);
  t.settlement?.end();
  t.call.setAttributes({
    "switchyard.task.accepted": true,
    "switchyard.quota": quota,
    "switchyard.channel.id": channelId,
    "switchyard.group": adm.req.caller.group,
    "http.response.status_code": 200,
  });
  t.call.end();
}

/** The call failed after admission (recordError(): no channel answered, or the answer broke). */
export function observeError(req: RelayRequest, err: AppError, channelId: number): void {
  const state = stateOf(req);
  if (state) state.done = true;
  failed(req, err, channelId, false);
}

function failed(req: RelayRequest, e: unknown, channelId: number, refused: boolean): void {
  const status = typeof (e as AppError)?.status === "number" ? (e as AppError).status : 500;
  const m = enabledMetrics();
  if (m) {
    const l = refused
      ? { model: "", channel: "", group: req.caller.group, status: String(status) }
      : { ...labels(req, channelId), status: String(status) };
    m.relayRequests.inc(l);
    if (status >= 400) m.relayErrors.inc(l);
  }
  const t = traceOf(req);
  if (!t) return;
  calls.delete(req.caller);
  const { SpanStatusCode } = t.tracing.api;
  const message = e instanceof Error ? e.message : String(e);
  const errorType = (e as AppError)?.code ?? String(status);
  for (const span of [t.attempt, t.settlement]) {
    if (!span) continue;
    span.setStatus({ code: SpanStatusCode.ERROR, message });
    span.setAttribute("error.type", errorType);
    span.end();
  }
  // Span names feed span-metrics (Tempo, Jaeger SPM) as a label: a model nobody serves is the client's text, so
  // a refused call's span is named by its operation alone (the model stays in gen_ai.request.model).
  if (refused) t.call.updateName(operation(req.mode));
  t.call.setAttributes({
    "http.response.status_code": status,
    "error.type": errorType,
    ...(channelId ? { "switchyard.channel.id": channelId } : {}),
  });
  t.call.setStatus({ code: SpanStatusCode.ERROR, message });
  t.call.end();
}

function startCall(tracing: Tracing, req: RelayRequest): CallTrace | null {
  const { api, tracer } = tracing;
  const parent = api.context.active();
  const op = operation(req.mode);
  const body = req.body instanceof FormData ? null : req.body;
  const attrs: Record<string, string | number | boolean> = {
    "gen_ai.operation.name": op,
    "gen_ai.request.model": req.model,
    "gen_ai.request.stream": req.stream,
    "http.request.method": "POST",
    "url.path": req.path,
    "switchyard.format": req.format,
    "switchyard.group": req.caller.group,
    "switchyard.user_id": req.caller.userId,
    "switchyard.token_id": req.caller.tokenId,
  };
  const maxTokens = body?.max_tokens ?? body?.max_completion_tokens ?? body?.max_output_tokens;
  if (typeof maxTokens === "number") attrs["gen_ai.request.max_tokens"] = maxTokens;
  if (typeof body?.temperature === "number") attrs["gen_ai.request.temperature"] = body.temperature;
  if (typeof body?.top_p === "number") attrs["gen_ai.request.top_p"] = body.top_p;
  const call = tracer.startSpan(`${op} ${req.model}`, { kind: api.SpanKind.SERVER, attributes: attrs }, parent);
  // Not sampled: no child spans either (the other hooks see no trace), so a call left out costs next to nothing.
  if (!call.isRecording()) return null;
  return { tracing, call, ctx: api.trace.setSpan(parent, call), attempt: null, settlement: null, attempts: 0 };
}

function labels(req: RelayRequest, channelId: number) {
  return { model: req.model, channel: channelId ? String(channelId) : "", group: req.caller.group };
}

/** gen_ai.operation.name: the conventions' well-known values where one fits, else the relay mode. */
function operation(mode: RelayMode): string {
  return mode === "chat" || mode === "responses" ? "chat" : mode === "completions" ? "text_completion" : mode;
}

/** gen_ai.provider.name for the channel types the conventions name; others by the catalogue's type name. */
const PROVIDERS: Record<number, string> = {
  1: "openai",
  3: "azure.ai.openai",
  14: "anthropic",
  24: "gcp.gemini",
  33: "aws.bedrock",
  34: "cohere",
  41: "gcp.vertex_ai",
  42: "mistral_ai",
  43: "deepseek",
  48: "x_ai",
};
function providerName(type: number): string {
  return (
    PROVIDERS[type]
    ?? channelType(type)
      ?.name.toLowerCase()
      .replace(/[^a-z0-9.]+/g, "_")
    ?? String(type)
  );
}
