// The exchange endpoint: one request, one answer (JSON, or SSE forwarded chunk by chunk as it arrives).
// admit → route (each attempt builds the provider's request and sends it) → deliver in the client's
// format → settle after the answer has gone out.
import type { AppDeps } from "../../deps.ts";
import { AppError, errorBody } from "../../http/errors.ts";
import type { ProviderAdaptor, ProviderCall, Usage } from "../providers/types.ts";
import { sendUpstream } from "../providers/settings.ts";
import { adaptorFor } from "../providers/index.ts";
import { relayState } from "../state.ts";
import { retryable } from "../select.ts";
import { withBilledUsage } from "../formats/shown-usage.ts";
import { closingUsage, generatedTextOf, usageFromTail } from "../providers/openai/usage.ts";
import { SseReader, sseFrame } from "../formats/sse.ts";
import { renamedText, withUsageRequest } from "../formats/client-json.ts";
import { scrub } from "../formats/scrub.ts";
import { applyParamOverride } from "../override.ts";
import { recordUpstreamError } from "../../http/metrics.ts";
import { clientSignal, type Admission, type RelayRequest } from "../core/admit.ts";
import type { Channel } from "../../../db/schema.ts";
import { contextExceeded, routeWithFallbacks } from "../core/fallback.ts";
import { errorCode, mappedStatus, providerCall, reportFailure, route, UpstreamError } from "../core/route.ts";
import { costOf, extendHold, finish, recordError, release as releaseHold, type Served } from "../core/settle.ts";
import { answerUsage, countedUsage, countedUsageExact, countGenerated } from "../core/meter.ts";
import { callsObserved, observeAttempt, observeAttemptEnd, observeCall, observeStream } from "../observe.ts";
import { responseCache } from "../cache/index.ts";
import { fetchBody } from "../../infra/stream-client.ts";
import { clientHeadersFor, withForwarded } from "../forward.ts";
import { askedOutput, generates } from "../core/output-cap.ts";
import { StreamBudget } from "../core/stream-budget.ts";
import { outputBound } from "../billing.ts";

export type { RelayRequest } from "../core/admit.ts";

/** One exchange call, observed: its metrics and trace (relay/observe.ts; nothing when both are off). */
export function relay(deps: AppDeps, req: RelayRequest): Promise<Response> {
  return callsObserved() ? observeCall(req, () => exchange(deps, req)) : exchange(deps, req);
}

async function exchange(deps: AppDeps, req: RelayRequest): Promise<Response> {
  // The response cache (relay/cache): off, one option read; a hit is admitted and billed there, no upstream called.
  const cache = responseCache(deps, req);
  const hit = cache && (await cache.lookup());
  if (hit) return hit;
  // admit → route, and on to the model's fallbacks when its channels all fail (core/fallback.ts).
  const out = await routeWithFallbacks(deps, req, routeExchange);
  // From here the hold belongs to the served call: deliver() settles it (or releases it if the answer breaks).
  if (out.adm) {
    const { served, usedChannels } = out.routed;
    const answer = served.result;
    const call = answer.call;
    const s: Served = {
      ...out.adm,
      channel: served.channel,
      upstreamModel: call.upstreamModel,
      usedChannels,
      firstByteMs: 0,
      fallback: out.fallback,
      straightToSocket: !cache && req.socket === true,
    };
    return cache
      ? cache.keep(s, () => deliver(deps, served.adaptor, call, answer, s))
      : deliver(deps, served.adaptor, call, answer, s);
  }
  // Not served: every hold has gone back.
  recordError(deps, req, out.failure, out.usedChannels.at(-1) ?? 0, out.usedChannels, out.started, out.fallback);
  throw out.failure;
}

/** Routes one admission of an exchange. The callbacks are made once, not per call: they get the admission and
 * deps from route() instead of closing over them (three functions and two scopes less on every call). */
const routeExchange = (adm: Admission, deps: AppDeps) => route(deps, adm, exchangeAdaptor, tryExchange);

function exchangeAdaptor(channel: Channel, adm: Admission): ProviderAdaptor | null {
  const adaptor = adaptorFor(channel.type);
  return adaptor && adaptor.supports(adm.req.mode) ? adaptor : null;
}

/** Not async: it hands attempt()'s promise on, one generator less per call. */
function tryExchange(
  adaptor: ProviderAdaptor,
  channel: Channel,
  adm: Admission,
  deps: AppDeps,
): Promise<Answer | AppError> {
  const call = providerCall(adm.req, channel, deps.options, adm.affinity?.keyFor(channel.id));
  // The key a conversation's pin records (only calls that belong to one).
  if (adm.affinity) adm.keyIndex = call.keyIndex;
  // The client headers this channel's upstream takes (relay/forward.ts), in place of the route's choice.
  call.clientHeaders = clientHeadersFor(adaptor, call, adm.req.httpHeaders);
  observeAttempt(adm.req, call);
  return attempt(deps, adaptor, call, adm.req);
}

/** The body handed to the adaptor: the client's, with the mapped model and a usage request for streams.
 *  The channel's param_override goes into the adaptor's converted body instead (applyParamOverride). */
function upstreamBody(req: RelayRequest, call: ProviderCall): any {
  if (req.body instanceof FormData) {
    if (call.upstreamModel === req.model) return req.body;
    const form = new FormData();
    for (const [k, v] of req.body.entries()) form.append(k, k === "model" ? call.upstreamModel : v);
    return form;
  }
  // The client's text goes with the body when it still says the same (formats/client-json.ts).
  const json = req.json?.body === req.body ? req.json : undefined;
  // global.pass_through_request_enabled or the channel's pass_through_body_enabled: the client's JSON goes
  // upstream as sent (no model mapping, overrides or usage request); an adaptor of another wire format
  // still has to convert it.
  if (call.passThroughBody || req.format !== "openai") {
    if (json) call.json = json;
    return req.body;
  }
  const body = { ...req.body, model: call.upstreamModel };
  const usage = req.stream && (req.mode === "chat" || req.mode === "completions");
  if (usage) body.stream_options = { ...(req.body.stream_options ?? {}), include_usage: true };
  if (json && req.body.model === req.model) {
    // A mapped model is written into the text (of a large body: renamedText).
    const named = call.upstreamModel === req.model ? json.text : renamedText(json.text, call.upstreamModel);
    const text = named === undefined ? undefined : usage ? withUsageRequest(named, req.body) : named;
    if (text !== undefined) call.json = { body, text };
  }
  return body;
}

/** A successful upstream answer, the call it answers, and the handles to end the attempt's timer and listeners
 * (methods: call them on the answer). */
interface Answer {
  res: Response;
  call: ProviderCall;
  release(): void;
  abortUpstream(): void;
}

/**
 * How long an attempt waits for its upstream before it starts listening for its client going away (hot-path
 * rule 10). Creating a request's signal and adding and removing a listener is a measurable part of a short
 * call's CPU, and most calls are answered in far less time; a call still waiting after this long, and every
 * stream once its answer starts, listens (and stops at once if the client has already gone).
 */
const LISTEN_AFTER_MS = 1000;

/**
 * One attempt's upstream request: its abort controller, its one timer (first to start listening for the
 * client, then for the rest of the upstream timeout) and its listener on the client's signal. One object with
 * methods instead of six closures per call (the listener is the object itself, through handleEvent); an
 * attempt that got an answer is the Answer. Call its methods on it (they use `this`).
 */
class UpstreamRequest implements Answer {
  res!: Response;
  readonly abort = new AbortController();
  timer: ReturnType<typeof setTimeout>;
  private listening = false;

  constructor(
    private req: RelayRequest,
    readonly call: ProviderCall,
    readonly timeoutMs: number,
  ) {
    this.timer = setTimeout(
      timeoutMs <= LISTEN_AFTER_MS ? abortOnTimeout : listenThenTime,
      Math.min(LISTEN_AFTER_MS, timeoutMs),
      this,
    );
  }

  /** Starts listening for the client going away (and stops the upstream at once if it already has). */
  listen(): void {
    const signal = clientSignal(this.req);
    if (this.listening || !signal) return;
    this.listening = true;
    // No { once: true }: an options object makes adding the listener dearer (hot-path rule 5), and every path
    // removes it anyway (an abort fires once).
    if (signal.aborted) this.abortUpstream();
    else signal.addEventListener("abort", this);
  }

  /** The client's signal fired: the client went away. */
  handleEvent(): void {
    this.abortUpstream();
  }

  /** Ends the timer and the listening: the answer is being delivered, or the attempt failed. */
  release(): void {
    clearTimeout(this.timer);
    if (this.listening) clientSignal(this.req)?.removeEventListener("abort", this);
  }

  abortUpstream(): void {
    this.abort.abort(new Error("client disconnected"));
  }
}

function abortOnTimeout(u: UpstreamRequest): void {
  u.abort.abort(new Error("timeout"));
}

function listenThenTime(u: UpstreamRequest): void {
  u.listen();
  u.timer = setTimeout(abortOnTimeout, u.timeoutMs - LISTEN_AFTER_MS, u);
}

/** A Responses call sent upstream as it is: only these reach an upstream's /v1/responses (a converted call is in chat mode). */
const RESPONSES_MODES: ReadonlySet<ProviderCall["mode"]> = new Set(["responses", "responses_compact"]);
/** Added to an upstream's 404 for /v1/responses: most such upstreams only lack the Responses API, which the
 * channel setting works around. It names no channel, so every caller may read it. */
const NO_RESPONSES_API_HINT =
  ' (the upstream has no Responses API: the channel setting {"responses_api": "chat"} answers Responses calls through chat completions)';

async function attempt(
  deps: AppDeps,
  adaptor: ProviderAdaptor,
  call: ProviderCall,
  req: RelayRequest,
): Promise<Answer | AppError> {
  const u = new UpstreamRequest(req, call, deps.config.relayTimeoutMs);
  let res: Response;
  try {
    // Most adaptors build their request synchronously: awaiting a plain value still costs a turn of the loop.
    const built = adaptor.buildRequest(call, upstreamBody(req, call));
    const up = applyParamOverride(adaptor, call, built instanceof Promise ? await built : built);
    // A streamed call's JoinedText body goes to the stream client as its pieces (sendUpstream); fetch() gets a string.
    const body = call.stream ? (up.body as BodyInit | null | undefined) : fetchBody(up.body);
    const headers = call.clientHeaders ? withForwarded(up.headers, call.clientHeaders) : up.headers;
    const init: RequestInit = {
      method: up.method ?? "POST",
      headers,
      body,
      signal: u.abort.signal,
      redirect: "manual",
    };
    res = await (adaptor.send ? adaptor.send(call, up.url, init) : sendUpstream(call, up.url, init));
  } catch (e) {
    u.release();
    if (e instanceof AppError) return attemptEnded(req, e);
    if (clientSignal(req)?.aborted) throw new AppError(499, "the client closed the request");
    const timedOut = (u.abort.signal.reason as Error)?.message === "timeout";
    recordUpstreamError(call.channel.id);
    reportFailure(deps, call, undefined, timedOut ? "timeout" : "connection failed");
    return attemptEnded(
      req,
      new UpstreamError(
        timedOut ? 504 : 502,
        timedOut ? "the upstream channel did not answer in time" : "could not connect to the upstream channel",
        true,
      ),
    );
  }
  if (res.ok) {
    // Streams may run longer than the timeout; it only guards the wait for the first answer and JSON bodies.
    // A stream listens for its client from here to its end.
    if (call.stream) {
      clearTimeout(u.timer);
      u.listen();
    }
    u.res = res;
    return attemptEnded(req, u);
  }
  u.release();
  const text = await res.text().catch(() => "");
  const raw = adaptor.errorMessage
    ? adaptor.errorMessage(res.status, text)
    : `upstream answered with status ${res.status}`;
  const code = errorCode(text);
  const message =
    res.status === 404 && RESPONSES_MODES.has(call.mode)
      ? `${scrub(raw, call)}${NO_RESPONSES_API_HINT}`
      : scrub(raw, call);
  recordUpstreamError(call.channel.id);
  reportFailure(deps, call, res.status, message, code);
  return attemptEnded(
    req,
    new UpstreamError(
      mappedStatus(call.channel, res.status),
      message,
      retryable(res.status, deps.options),
      contextExceeded(res.status, raw, code),
    ),
  );
}

function attemptEnded<T extends Answer | AppError>(req: RelayRequest, outcome: T): T {
  observeAttemptEnd(req, outcome);
  return outcome;
}

async function deliver(
  deps: AppDeps,
  adaptor: ProviderAdaptor,
  call: ProviderCall,
  answer: Answer,
  o: Served,
): Promise<Response> {
  const res = answer.res;
  // Sent: the client's text is not kept for the answer's lifetime (a stream's can be minutes).
  o.req.json = call.json = undefined;
  if (call.stream && (adaptor.decodeStream || (res.headers.get("content-type") ?? "").includes("text/event-stream")))
    return streamReply(deps, adaptor, call, answer, o);
  if (o.req.mode === "audio_speech") {
    answer.release();
    o.firstByteMs = performance.now() - o.started;
    // Speech is priced on its input text, counted after the audio is on its way.
    finish(deps, o, null, () => "");
    return new Response(res.body, {
      status: res.status,
      headers: { "content-type": res.headers.get("content-type") ?? "audio/mpeg" },
    });
  }
  let text: string;
  const limit = adaptor.passThroughJson?.(call) ? BUFFERED_ANSWER_BYTES : Infinity;
  try {
    // An answer that declares a length within the limit (as usual) is read here, not through readAnswer():
    // one async layer less on every call.
    if (limit === Infinity || Number(res.headers.get("content-length") ?? NaN) <= limit) text = await res.text();
    else {
      const read = await readAnswer(res, limit);
      if (read.rest) return passLargeAnswer(deps, call, answer, o, read.head, read.rest);
      text = read.text;
    }
  } catch {
    answer.release();
    await releaseHold(deps, o);
    recordUpstreamError(call.channel.id);
    reportFailure(deps, call, res.status, "answer broke off");
    const err = new AppError(502, "the upstream channel broke off its answer");
    recordError(deps, o.req, err, call.channel.id, o.usedChannels, o.started);
    throw err;
  }
  answer.release();
  o.firstByteMs = performance.now() - o.started;
  // A large pass-through answer (embeddings: ~32 KB of numbers per input) is billed from the usage in its tail,
  // as one over BUFFERED_ANSWER_BYTES is: parsing all of it to read that would hold the loop past a millisecond
  // (hot-path rules 3 and 7).
  if (limit !== Infinity && text.length > PARSED_ANSWER_CHARS) {
    const usage = /^\s*\{/.test(text) ? closingUsage(text.slice(-ANSWER_TAIL_BYTES)) : null;
    if (usage) {
      if (costOf(o, usage) > o.hold.amount) await paidBeyondHold(deps, o, usage);
      finish(deps, o, usage);
      return new Response(text, jsonInit(res.status));
    }
  }
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    // Plain-text answers (audio transcription with response_format=text/srt/vtt) pass through as they are;
    // anything else that does not parse is a broken answer (a body cut short): not the client's to pay for.
    // (The upstream's headers are read only here: the first read of a fetch answer's headers builds them.)
    const contentType = res.headers.get("content-type") ?? "";
    if (isTextAnswer(call, contentType)) {
      finish(deps, o, null, () => text);
      return new Response(text, {
        status: res.status,
        headers: { "content-type": contentType || "text/plain; charset=utf-8" },
      });
    }
    await releaseHold(deps, o);
    recordUpstreamError(call.channel.id);
    reportFailure(deps, call, res.status, "malformed answer");
    const err = new AppError(502, "the upstream channel sent a malformed (unreadable) answer", "bad_response_body");
    recordError(deps, o.req, err, call.channel.id, o.usedChannels, o.started);
    throw err;
  }
  const parsed = adaptor.parseResponse(call, json);
  // An answer without its output count bills its text counted in the tokenizer's worker (on the loop a long
  // answer's count took up to ~10 ms, and a process's first count loaded the rank tables there).
  if (parsed.uncountedOutput !== undefined) parsed.usage = await answerUsage(parsed);
  if (parsed.body === json && parsed.usage) {
    if (costOf(o, parsed.usage) > o.hold.amount) await paidBeyondHold(deps, o, parsed.usage);
    // The usual answer: its usage is billed, the generated text is never needed (no closure made for it).
    finish(deps, o, parsed.usage);
    return new Response(text, jsonInit(res.status));
  }
  const generated = () => (adaptor.generatedText ?? openAIGeneratedText)(call, json);
  if (parsed.body === json) {
    if (parsed.usage && costOf(o, parsed.usage) > o.hold.amount) await paidBeyondHold(deps, o, parsed.usage);
    finish(deps, o, parsed.usage, generated);
    return new Response(text, jsonInit(res.status));
  }
  let body = parsed.body;
  let usage = parsed.usage;
  if (!usage && call.mode === "chat") {
    // The gateway wrote this body's usage (zeros, with none upstream): it shows what is billed instead, counted
    // in the tokenizer's worker (hot-path rule 3: on the loop a long answer's count takes milliseconds, and a
    // process's first count would load the rank tables there).
    usage = await countedUsageExact(o.req.body, generated());
    body = withBilledUsage(call.format, body, usage);
  }
  if (usage && costOf(o, usage) > o.hold.amount) await paidBeyondHold(deps, o, usage);
  finish(deps, o, usage, generated);
  return new Response(JSON.stringify(body), jsonInit(res.status));
}

/**
 * A whole answer that costs more than its hold (the upstream went past the bound it was sent, or the model past
 * its catalogued limit) is delivered only when its payer can pay the difference, taken into the hold now. Else
 * it is not delivered and not billed: the hold goes back and the client gets the quota error.
 */
async function paidBeyondHold(deps: AppDeps, o: Served, usage: Usage): Promise<void> {
  const short = await extendHold(deps, o, costOf(o, usage) - o.hold.amount);
  if (!short) return;
  // Within the output bound held for, the prompt counted higher than its estimate and slack: delivered, and
  // billed as far as the balances reach (settlement charges past a hold that way).
  if (!generates(o.req) || usage.completion_tokens <= outputBound(o.price, askedOutput(o.req))) return;
  await releaseHold(deps, o);
  const err = new AppError(
    short.status,
    `the answer costs more than the balance can pay (${usage.completion_tokens} output tokens, past the bound the upstream was sent): it was not delivered and nothing was billed`,
    short.code,
  );
  recordError(deps, o.req, err, o.channel.id, o.usedChannels, o.started);
  throw err;
}

/** A JSON answer's status and headers; the usual 200's made once. Its headers are a Headers object, which a
 * Response copies in less than half the time it takes to build its own from an object literal (hot-path rule 5);
 * the copy is the response's own, so nothing set on one answer reaches the next. */
const JSON_OK: ResponseInit = { status: 200, headers: new Headers({ "content-type": "application/json" }) };
function jsonInit(status: number): ResponseInit {
  return status === 200 ? JSON_OK : { status, headers: { "content-type": "application/json" } };
}

/** Pass-through answers up to this size are read whole (checked as JSON, usage parsed); larger ones are
 * streamed through as they arrive, so a 50 MB embeddings answer costs the gateway no more memory than 1 MiB. */
const BUFFERED_ANSWER_BYTES = 1024 * 1024;
/** A streamed-through answer or stream asks for a concurrent collection after every this many bytes. Its chunks are
 * native buffers the collector does not count towards the heap, so without the nudge a 50 MB answer leaves tens
 * of megabytes of spent chunks before a collection comes (scripts/bench/memory.ts). A request for a concurrent
 * collection is cheap; a synchronous collection, which frees slightly more, would block the loop (rule 3). */
const GC_NUDGE_BYTES = 2 * 1024 * 1024;

/** Counts the bytes a reply passes and asks for a concurrent collection after every GC_NUDGE_BYTES of them. */
function gcNudger(): (bytes: number) => void {
  let since = 0;
  return (bytes) => {
    since += bytes;
    if (since < GC_NUDGE_BYTES) return;
    since = 0;
    Bun.gc(false);
  };
}
/** Where a streamed-through answer's usage is looked for: OpenAI puts it last. */
const ANSWER_TAIL_BYTES = 64 * 1024;
/** Pass-through answers longer than this are not parsed whole when their tail holds their usage (deliver). */
const PARSED_ANSWER_CHARS = 64 * 1024;

type ReadAnswer =
  | { text: string; rest?: undefined }
  | { text?: undefined; head: Uint8Array[]; rest: ReadableStreamDefaultReader<Uint8Array> };

/** The whole answer as text when it is at most `limit` bytes; else what was read so far and the rest to stream. */
async function readAnswer(res: Response, limit: number): Promise<ReadAnswer> {
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (limit === Infinity || declared <= limit || !res.body) return { text: await res.text() };
  const reader = res.body.getReader();
  const head: Uint8Array[] = [];
  let size = 0;
  if (!(declared > limit)) {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { text: Buffer.concat(head, size).toString("utf8") };
      head.push(value);
      size += value.byteLength;
      if (size > limit) break;
    }
  }
  return { head, rest: reader };
}

/** A large pass-through answer: forwarded chunk by chunk, settled from the usage in its tail when it ends
 * whole; not billed when it breaks off or does not end like JSON (the client then has a broken body). */
function passLargeAnswer(
  deps: AppDeps,
  call: ProviderCall,
  answer: Answer,
  o: Served,
  head: Uint8Array[],
  rest: ReadableStreamDefaultReader<Uint8Array>,
): Response {
  const res = answer.res;
  o.firstByteMs = performance.now() - o.started;
  const closed = relayState(deps).writer.streamOpened();
  // The last chunks covering ANSWER_TAIL_BYTES, joined only once at the end (copying the tail on every
  // chunk churned through megabytes of garbage per answer).
  const tail: Uint8Array[] = [];
  let tailBytes = 0;
  const keepTail = (chunk: Uint8Array) => {
    tail.push(chunk);
    tailBytes += chunk.byteLength;
    while (tail.length > 2 && tailBytes - tail[0].byteLength >= ANSWER_TAIL_BYTES) {
      const old = tail.shift()!;
      tailBytes -= old.byteLength;
      if (o.straightToSocket) freeSent(old);
    }
  };
  const broken = async (why: string) => {
    await releaseHold(deps, o);
    recordUpstreamError(call.channel.id);
    reportFailure(deps, call, res.status, why);
    recordError(
      deps,
      o.req,
      new AppError(502, `the upstream channel sent ${why}`, "bad_response_body"),
      call.channel.id,
      o.usedChannels,
      o.started,
    );
  };
  let settled = false;
  const passed = gcNudger();
  const settle = async (ok: boolean) => {
    if (settled) return;
    settled = true;
    answer.release();
    const text = Buffer.concat(tail, tailBytes).subarray(-ANSWER_TAIL_BYTES).toString("utf8");
    if (ok && /[}\]]\s*$/.test(text)) finish(deps, o, usageFromTail(text), () => "");
    else await broken(ok ? "a malformed (unreadable) answer" : "an answer that broke off");
    closed();
  };
  // A plain pull stream, not a Bun "direct" one: direct writes do not wait for the client, so a fast upstream
  // piled the whole answer up in memory (+82 MB for 50 MB; this form, like a bare pipe, stays near +25 MB).
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = head.shift();
        if (next) {
          keepTail(next);
          controller.enqueue(next);
          return;
        }
        try {
          const { value, done } = await rest.read();
          if (done) {
            await settle(true);
            controller.close();
            return;
          }
          keepTail(value);
          controller.enqueue(value);
          passed(value.byteLength);
        } catch {
          await settle(false);
          controller.error(new Error("the upstream channel broke off its answer"));
        }
      },
      cancel() {
        answer.abortUpstream();
        rest.cancel().catch(() => {});
        void settle(false);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    status: res.status,
    headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
  });
}

/**
 * Gives a sent chunk's memory back at once: its bytes are native memory the collector does not count, so left
 * to it a 50 MB answer held +9 to +28 MB of spent chunks before a collection came (scripts/bench/memory.ts; a
 * bare pipe +4 MB). Only when the body goes straight to the client's connection (Served.straightToSocket):
 * the server copies a chunk into the socket before it pulls the next, where a reader in JavaScript (the response
 * cache's recorder, app.handle()'s caller) keeps the chunks it was given. The caller frees a chunk two pulls
 * after it was enqueued. Fetch's body chunks each own their buffer; a view into a larger one is left alone.
 */
function freeSent(chunk: Uint8Array): void {
  const buffer = chunk.buffer;
  if (chunk.byteOffset !== 0 || chunk.byteLength !== buffer.byteLength || !(buffer instanceof ArrayBuffer)) return;
  try {
    buffer.transfer(0);
  } catch {
    // Not transferable (already detached, or memory the runtime pins): the collector frees it as before.
  }
}

/** Transcriptions and translations asked for text, SRT or VTT answer plain text, which is not JSON. */
function isTextAnswer(call: ProviderCall, contentType: string): boolean {
  return (call.mode === "audio_transcription" || call.mode === "audio_translation") && !contentType.includes("json");
}

/** What an OpenAI-shaped answer generated; audio transcriptions answer {text}. */
function openAIGeneratedText(_call: ProviderCall, json: any): string {
  return generatedTextOf(json) || (typeof json?.text === "string" ? json.text : "");
}

function streamReply(deps: AppDeps, adaptor: ProviderAdaptor, call: ProviderCall, answer: Answer, o: Served): Response {
  const res = answer.res;
  const mapper = adaptor.streamMapper(call);
  // Non-SSE upstream streams (Bedrock's binary event stream) are re-framed as SSE first.
  const reader = (adaptor.decodeStream ? adaptor.decodeStream(call, res.body!) : res.body!).getReader();
  const sse = new SseReader();
  let settled = false;
  // Counted once, by the mapper's end() for a usage frame the upstream left without numbers, or by finish().
  let counted: Usage | null = null;
  const count = () => (counted ??= countedUsage(o.req.body, mapper.generatedText()));
  const closed = relayState(deps).writer.streamOpened();
  observeStream(o);
  let clientGone = false;
  const passed = gcNudger();
  /** The closing event of a cut stream, in the client's own error format (the SDKs raise it). */
  const interrupted = () => {
    o.interrupted = true;
    return errorEvent(
      call.format,
      502,
      "the upstream channel broke off the stream before the answer was complete (stream interrupted)",
      "stream_interrupted",
    );
  };
  // Metered against its hold (core/stream-budget.ts): cut, in the client's error format, once the balance cannot pay more.
  const budget = StreamBudget.of(deps, o);
  const stallMs = deps.config.streamStallMs;
  /** Ends the stream here: the upstream is stopped, and the call billed for what it generated up to now. */
  const cut = (controller: any, last: string) => {
    clientGone = true;
    o.interrupted = true;
    answer.abortUpstream();
    reader.cancel().catch(() => {});
    try {
      if (last) controller.write(last);
    } catch {}
    done();
    try {
      controller.close();
    } catch {}
  };
  const settle = () => {
    finish(deps, o, mapper.usage() ?? counted, () => mapper.generatedText());
    closed();
  };
  const done = () => {
    if (settled) return;
    settled = true;
    answer.release();
    // A report without its final output count (a cut Claude or Gemini stream) bills the text counted: in the
    // worker, handed to the mapper.
    if (!mapper.countsText?.()) return settle();
    countGenerated(mapper.generatedText()).then((n) => {
      mapper.textCounted?.(n);
      settle();
    }, settle);
  };
  // A Bun "direct" stream: chunks are written straight to the socket instead of going through a
  // ReadableStream queue, which costs several times the CPU per streamed call.
  const body = new ReadableStream({
    type: "direct",
    async pull(controller: any) {
      try {
        for (;;) {
          const { value, done: ended } = await reader.read();
          if (ended) {
            let out = "";
            for (const ev of sse.finish()) out += mapper.event(ev);
            // Without upstream usage the end frames show the gateway's count: made exactly, off the loop.
            if (mapper.countsText?.()) mapper.textCounted?.(await countGenerated(mapper.generatedText()));
            if (mapper.complete() && !mapper.usage() && !counted)
              counted = await countedUsageExact(o.req.body, mapper.generatedText());
            if (mapper.complete()) out += mapper.end(count);
            else out += interrupted();
            if (out) controller.write(out);
            done();
            controller.close();
            return;
          }
          if (!o.firstByteMs) o.firstByteMs = performance.now() - o.started;
          passed(value.byteLength);
          let out = "";
          for (const ev of sse.push(value)) out += mapper.event(ev);
          if (budget?.passed(value.byteLength)) {
            const short = await budget.within(mapper);
            if (short) {
              // What this chunk carries is past what the payer can pay: not sent, and not billed (cutAtHold).
              o.cutAtHold = true;
              return cut(
                controller,
                errorEvent(
                  call.format,
                  short.status,
                  `the answer reached what the balance can pay: the stream was cut (${short.message})`,
                  short.code,
                ),
              );
            }
          }
          // The sink sends what was written once the microtasks have run (one socket write for the chunks of
          // a tick), and answers a promise instead of a byte count when its buffer is full: waiting only then
          // holds a slow client's stream at the sink's buffer. Awaiting flush() after every write never waited
          // for a full buffer: a paused client let a whole 49 MB stream pile up in the gateway.
          const sent = out ? controller.write(out) : 0;
          // A client that takes nothing more for stallMs (it stopped reading) is not waited for any longer.
          if (typeof sent !== "number" && !(await drainedWithin(sent, stallMs))) return cut(controller, "");
        }
      } catch {
        // The upstream broke off mid-stream (or the client went away while a write was pending): the
        // client keeps what it got, is told the answer is incomplete, and pays for what was generated.
        try {
          if (!clientGone && !mapper.complete()) controller.write(interrupted());
        } catch {}
        done();
        try {
          controller.close();
        } catch {}
      }
    },
    cancel() {
      // The client went away: stop the upstream and bill what it had produced by now.
      clientGone = true;
      answer.abortUpstream();
      reader.cancel().catch(() => {});
      done();
    },
  } as any);
  return new Response(body, SSE_OK);
}

/** An error as the closing event of a stream, in the client's format (Claude's is an `error` event). */
function errorEvent(format: ProviderCall["format"], status: number, message: string, code?: string): string {
  const body = JSON.stringify(errorBody(format, status, message, code));
  return format === "claude" ? sseFrame(body, "error") : sseFrame(body);
}

/** Whether a pending write to the client completed within `ms` (it rejects as the write does: the client went away). */
function drainedWithin(sent: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)));
  return Promise.race([sent.then(() => true), stalled]).finally(() => clearTimeout(timer));
}

/** A relayed stream's status and headers, made once (a Headers object: see JSON_OK). */
const SSE_OK: ResponseInit = {
  status: 200,
  headers: new Headers({
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  }),
};
