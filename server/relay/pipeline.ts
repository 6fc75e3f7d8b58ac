// One relay call end to end: checks → price → hold quota → pick channel → call upstream (retrying on
// other channels) → answer the client → settle and record after the answer has gone out.
import type { AppDeps } from "../deps.ts";
import type { Channel } from "../../db/schema.ts";
import { AppError, errorBody } from "../http/errors.ts";
import { LOG_TYPE } from "../catalogue/index.ts";
import type { Caller } from "./auth.ts";
import type { ClientFormat, ProviderAdaptor, ProviderCall, RelayMode, SiteOptions, Usage } from "./providers/types.ts";
import { adaptorFor, baseUrlOf } from "./providers/index.ts";
import { relayState, type RoutingTable } from "./state.ts";
import { pickChannel, retryable } from "./select.ts";
import { preConsumeQuota, priceFor, quotaFor, type Price } from "./billing.ts";
import type { Hold, Payer } from "./core/ledger.ts";
import type { SettledEntry } from "../jobs/writebehind.ts";
import { findSensitive, takeRateLimit, type RateTicket } from "./limits.ts";
import { countPromptTokensNow, countTokensNow, estimateTokens, promptText } from "./tokenizer.ts";
import { withBilledUsage } from "./shown-usage.ts";
import { generatedTextOf } from "./providers/openai/usage.ts";
import { SseReader, sseFrame } from "./sse.ts";
import { scrub } from "./scrub.ts";
import { applyParamOverride } from "./override.ts";
import { recordChannelResult } from "../modules/channel/health.ts";
import { parseChannelInfo, pickChannelKey, type ChannelInfo } from "../modules/channel/keys.ts";
import { recordUpstreamError } from "../http/metrics.ts";
import { maybeNotifyQuota } from "../infra/notify.ts";

export interface RelayRequest {
  mode: RelayMode;
  format: ClientFormat;
  path: string;
  search: string;
  /** JSON object, or FormData for the multipart audio routes */
  body: any;
  model: string;
  stream: boolean;
  caller: Caller;
  ip: string;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
  /** Client headers an adaptor may forward (e.g. anthropic-beta on /v1/messages), lower-case names. */
  headers?: Record<string, string>;
}

/** Everything settle-and-record needs once the upstream has answered. */
interface Outcome {
  req: RelayRequest;
  price: Price;
  hold: Hold;
  calls: number;
  channel: Channel;
  upstreamModel: string;
  usedChannels: number[];
  started: number;
  firstByteMs: number;
  ticket: RateTicket;
  /** The upstream cut the stream before the answer was complete (logged in `other`). */
  interrupted?: boolean;
}

export async function relay(deps: AppDeps, req: RelayRequest): Promise<Response> {
  const started = performance.now();
  const { caller, model, body } = req;
  const state = relayState(deps);
  if (caller.modelLimits && !caller.modelLimits.has(model)) {
    throw new AppError(403, `this token is not allowed to use model ${model}`, "model_not_allowed");
  }
  const prompt = promptText(body);
  const word = findSensitive(deps, prompt);
  if (word !== null) throw new AppError(400, "the prompt contains a sensitive word and was refused", "sensitive_words_detected");

  const table = await state.routing.get();
  const candidates = table.abilities.get(`${caller.group}\n${model}`) ?? [];
  const pinned = caller.pinnedChannel !== null ? await pinnedChannel(deps, table, caller.pinnedChannel) : null;
  if (!pinned && candidates.length === 0) {
    throw new AppError(503, `no available channel for model ${model} in group ${caller.group}`, "model_not_found");
  }
  const price = priceFor(deps.options, model, caller.group, caller.acceptUnsetModel);
  const ticket = await takeRateLimit(deps, caller.userId, caller.group);

  const calls = req.mode === "images" ? Math.max(1, Math.min(10, Math.floor(Number(body?.n) || 1))) : 1;
  const maxTokens = Math.max(0, Math.floor(Number(body?.max_tokens ?? body?.max_completion_tokens ?? body?.max_output_tokens) || 0));
  const preConsumed = deps.options.number("PreConsumedQuota", 0);
  const estimate = preConsumeQuota(price, estimateTokens(prompt), maxTokens, preConsumed, calls);
  const payer: Payer = { userId: caller.userId, tokenId: caller.tokenId, unlimited: caller.unlimited };
  const hold = await state.ledger.take(payer, estimate);

  const tried = new Set<number>();
  const usedChannels: number[] = [];
  const attempts = pinned ? 1 : 1 + Math.max(0, Math.floor(deps.options.number("RetryTimes", 0)));
  let failure: AppError | null = null;
  let lastChannel = 0;
  let served: { adaptor: ProviderAdaptor; call: ProviderCall; answer: Answer; outcome: Outcome } | null = null;
  try {
    for (let i = 0; i < attempts; i++) {
      const id = pinned ? pinned.id : pickChannel(candidates, tried);
      const channel = pinned ?? (id !== null ? table.channels.get(id) : undefined);
      if (!channel) break;
      tried.add(channel.id);
      usedChannels.push(channel.id);
      lastChannel = channel.id;
      const adaptor = adaptorFor(channel.type);
      if (!adaptor || !adaptor.supports(req.mode)) {
        failure = new AppError(501, `${req.path} is not supported by the channels serving model ${model}`, "not_implemented");
        continue;
      }
      const call = providerCall(req, channel, deps.options);
      const result = await attempt(deps, adaptor, call, req);
      if (result instanceof AppError) {
        failure = result;
        if (result instanceof UpstreamError && result.retry) continue;
        break;
      }
      const outcome: Outcome = {
        req, price, hold, calls, channel, upstreamModel: call.upstreamModel, usedChannels, started, firstByteMs: 0, ticket,
      };
      served = { adaptor, call, answer: result, outcome };
      break;
    }
  } catch (e) {
    await state.ledger.giveBack(hold);
    throw e;
  }
  // From here the hold belongs to the outcome: deliver() settles it (or refunds it if the answer breaks).
  if (served) return deliver(deps, served.adaptor, served.call, served.answer, served.outcome);
  await state.ledger.giveBack(hold);
  const err = failure ?? new AppError(503, `no available channel for model ${model} in group ${caller.group}`, "model_not_found");
  recordError(deps, req, err, lastChannel, usedChannels, started);
  throw err;
}

async function pinnedChannel(deps: AppDeps, table: RoutingTable, id: number): Promise<Channel> {
  const hit = table.channels.get(id);
  if (hit) return hit;
  const row = await deps.db.selectFrom("channels").select("id").where("id", "=", id).executeTakeFirst();
  throw row ? new AppError(403, `channel ${id} is disabled`, "channel_disabled") : new AppError(400, `channel ${id} does not exist`, "channel_not_found");
}

interface ChannelConfig { mapping: Record<string, string>; statusMap: Record<string, string>; override: Record<string, unknown> | null; options: Record<string, unknown>; keyInfo: ChannelInfo }
const configs = new WeakMap<Channel, ChannelConfig>();

/** The channel's JSON settings, parsed once per loaded channel row. Bad JSON counts as "not set". */
function channelConfig(ch: Channel): ChannelConfig {
  let c = configs.get(ch);
  if (!c) {
    const obj = (raw: string | null | undefined) => {
      try {
        const v = raw ? JSON.parse(raw) : null;
        return v && typeof v === "object" && !Array.isArray(v) ? v : null;
      } catch {
        return null;
      }
    };
    c = {
      mapping: obj(ch.model_mapping) ?? {},
      statusMap: obj(ch.status_code_mapping) ?? {},
      override: obj(ch.param_override),
      options: obj(ch.setting) ?? {},
      keyInfo: parseChannelInfo(ch.channel_info),
    };
    configs.set(ch, c);
  }
  return c;
}

function providerCall(req: RelayRequest, channel: Channel, site?: SiteOptions): ProviderCall {
  const cfg = channelConfig(channel);
  const mapped = cfg.mapping[req.model];
  const upstreamModel = typeof mapped === "string" && mapped ? mapped : req.model;
  const { key, keyIndex } = channelKey(channel, cfg.keyInfo);
  const clientWantsUsage = Boolean(req.body?.stream_options?.include_usage);
  return {
    mode: req.mode, format: req.format, channel, key, keyIndex, baseUrl: baseUrlOf(channel), requestModel: req.model, upstreamModel,
    stream: req.stream, clientWantsUsage, path: req.path, search: req.search, options: cfg.options, site, clientHeaders: req.headers,
    // global.pass_through_request_enabled sends the client's body unchanged: no overrides either.
    paramOverride: site?.bool("global.pass_through_request_enabled") ? null : cfg.override,
  };
}

/** Where each multi-key channel's polling rotation goes on next, on this instance. Persisting it would put
 * a write on every call; keys that failed are persisted (channel_info) by channel automation instead. */
const pollingIndex = new Map<number, number>();

function channelKey(channel: Channel, info: ChannelInfo): { key: string; keyIndex: number } {
  if (!info.is_multi_key) return { key: String(channel.key ?? "").trim(), keyIndex: 0 };
  const at = pollingIndex.get(channel.id) ?? info.multi_key_polling_index;
  const pick = pickChannelKey({ key: channel.key, channel_info: { ...info, multi_key_polling_index: at } }, Math.floor(Date.now() / 1000));
  pollingIndex.set(channel.id, pick.info.multi_key_polling_index);
  return { key: pick.key, keyIndex: pick.index };
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
  // global.pass_through_request_enabled: the client's JSON goes upstream as sent (no model mapping,
  // overrides or usage request); an adaptor of another wire format still has to convert it.
  if (call.site?.bool("global.pass_through_request_enabled")) return req.body;
  if (req.format !== "openai") return req.body;
  const body = { ...req.body, model: call.upstreamModel };
  if (req.stream && (req.mode === "chat" || req.mode === "completions")) body.stream_options = { ...(req.body.stream_options ?? {}), include_usage: true };
  return body;
}

/** An upstream failure, and whether another channel may be tried after it. */
class UpstreamError extends AppError {
  constructor(status: number, message: string, public retry: boolean) {
    super(status, message, "upstream_error");
  }
}

/** A successful upstream answer plus the handles to end the attempt's timer and listeners. */
interface Answer { res: Response; release(): void; abortUpstream(): void }

async function attempt(deps: AppDeps, adaptor: ProviderAdaptor, call: ProviderCall, req: RelayRequest): Promise<Answer | AppError> {
  const abort = new AbortController();
  const onClientGone = () => abort.abort(new Error("client disconnected"));
  req.signal?.addEventListener("abort", onClientGone, { once: true });
  const timer = setTimeout(() => abort.abort(new Error("timeout")), deps.config.relayTimeoutMs);
  let res: Response;
  try {
    const up = applyParamOverride(adaptor, call, await adaptor.buildRequest(call, upstreamBody(req, call)));
    const init: RequestInit = { method: up.method ?? "POST", headers: up.headers, body: up.body, signal: abort.signal, redirect: "manual" };
    res = await (adaptor.send ? adaptor.send(call, up.url, init) : fetch(up.url, init));
  } catch (e) {
    clearTimeout(timer);
    req.signal?.removeEventListener("abort", onClientGone);
    if (e instanceof AppError) return e;
    if (req.signal?.aborted) throw new AppError(499, "the client closed the request");
    const timedOut = (abort.signal.reason as Error)?.message === "timeout";
    recordUpstreamError(call.channel.id);
    reportFailure(deps, call, undefined, timedOut ? "timeout" : "connection failed");
    return retryError(timedOut ? 504 : 502, timedOut ? "the upstream channel did not answer in time" : "could not connect to the upstream channel", true);
  }
  if (res.ok) {
    // Streams may run longer than the timeout; it only guards the wait for the first answer and JSON bodies.
    if (call.stream) clearTimeout(timer);
    return {
      res,
      release: () => {
        clearTimeout(timer);
        req.signal?.removeEventListener("abort", onClientGone);
      },
      abortUpstream: () => abort.abort(new Error("client disconnected")),
    };
  }
  clearTimeout(timer);
  req.signal?.removeEventListener("abort", onClientGone);
  const text = await res.text().catch(() => "");
  const raw = adaptor.errorMessage ? adaptor.errorMessage(res.status, text) : `upstream answered with status ${res.status}`;
  recordUpstreamError(call.channel.id);
  reportFailure(deps, call, res.status, scrub(raw, call), errorCode(text));
  const mapped = Number(channelConfig(call.channel).statusMap[String(res.status)]);
  const status = Number.isInteger(mapped) && mapped >= 100 && mapped <= 599 ? mapped : res.status;
  return retryError(status, scrub(raw, call), retryable(res.status));
}

/** Lets channel automation count failures toward auto-disable, off the response path. */
function reportFailure(deps: AppDeps, call: ProviderCall, status: number | undefined, message: string, code?: string) {
  if (!deps.options.bool("AutomaticDisableChannelEnabled")) return;
  const keyIndex = parseChannelInfo(call.channel.channel_info).is_multi_key ? call.keyIndex : undefined;
  void recordChannelResult(deps, call.channel.id, { ok: false, source: "relay", status, message, code, keyIndex }).catch(() => {});
}

function errorCode(text: string): string | undefined {
  try {
    const e = JSON.parse(text)?.error;
    const c = e?.code ?? e?.type;
    return typeof c === "string" ? c : undefined;
  } catch {
    return undefined;
  }
}

function retryError(status: number, message: string, retry: boolean): UpstreamError {
  return new UpstreamError(status, message, retry);
}

async function deliver(deps: AppDeps, adaptor: ProviderAdaptor, call: ProviderCall, answer: Answer, o: Outcome): Promise<Response> {
  const { res, release } = answer;
  if (call.stream && (adaptor.decodeStream || (res.headers.get("content-type") ?? "").includes("text/event-stream"))) return streamReply(deps, adaptor, call, answer, o);
  if (o.req.mode === "audio_speech") {
    release();
    o.firstByteMs = performance.now() - o.started;
    // Speech is priced on its input text, counted after the audio is on its way.
    finish(deps, o, null, () => "");
    return new Response(res.body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "audio/mpeg" } });
  }
  let text: string;
  try {
    text = await res.text();
  } catch {
    release();
    await relayState(deps).ledger.giveBack(o.hold);
    throw new AppError(502, "the upstream channel broke off its answer");
  }
  release();
  o.firstByteMs = performance.now() - o.started;
  const contentType = res.headers.get("content-type") ?? "";
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    // Plain-text answers (audio transcription with response_format=text/srt/vtt) pass through as they are;
    // anything else that does not parse is a broken answer (a body cut short): not the client's to pay for.
    if (isTextAnswer(call, contentType)) {
      finish(deps, o, null, () => text);
      return new Response(text, { status: res.status, headers: { "content-type": contentType || "text/plain; charset=utf-8" } });
    }
    await relayState(deps).ledger.giveBack(o.hold);
    recordUpstreamError(call.channel.id);
    reportFailure(deps, call, res.status, "malformed answer");
    const err = new AppError(502, "the upstream channel sent a malformed (unreadable) answer", "bad_response_body");
    recordError(deps, o.req, err, call.channel.id, o.usedChannels, o.started);
    throw err;
  }
  const parsed = adaptor.parseResponse(call, json);
  const generated = () => (adaptor.generatedText ?? openAIGeneratedText)(call, json);
  if (parsed.body === json) {
    finish(deps, o, parsed.usage, generated);
    return new Response(text, { status: res.status, headers: { "content-type": "application/json" } });
  }
  let body = parsed.body;
  let usage = parsed.usage;
  if (!usage && call.mode === "chat") {
    // The gateway wrote this body's usage (zeros, with none upstream): it shows what is billed instead.
    usage = countedUsageNow(o, generated());
    body = withBilledUsage(call.format, body, usage);
  }
  finish(deps, o, usage, generated);
  return new Response(JSON.stringify(body), { status: res.status, headers: { "content-type": "application/json" } });
}

/** Transcriptions and translations asked for text, SRT or VTT answer plain text, which is not JSON. */
function isTextAnswer(call: ProviderCall, contentType: string): boolean {
  return (call.mode === "audio_transcription" || call.mode === "audio_translation") && !contentType.includes("json");
}

/** What an OpenAI-shaped answer generated; audio transcriptions answer {text}. */
function openAIGeneratedText(_call: ProviderCall, json: any): string {
  return generatedTextOf(json) || (typeof json?.text === "string" ? json.text : "");
}

function streamReply(deps: AppDeps, adaptor: ProviderAdaptor, call: ProviderCall, answer: Answer, o: Outcome): Response {
  const { res, release, abortUpstream } = answer;
  const mapper = adaptor.streamMapper(call);
  // Non-SSE upstream streams (Bedrock's binary event stream) are re-framed as SSE first.
  const reader = (adaptor.decodeStream ? adaptor.decodeStream(call, res.body!) : res.body!).getReader();
  const sse = new SseReader();
  let settled = false;
  // Counted once, by the mapper's end() for a usage frame the upstream left without numbers, or by finish().
  let counted: Usage | null = null;
  const count = () => (counted ??= countedUsageNow(o, mapper.generatedText()));
  const closed = relayState(deps).writer.streamOpened();
  let clientGone = false;
  /** The closing event of a cut stream, in the client's own error format (the SDKs raise it). */
  const interrupted = () => {
    o.interrupted = true;
    const body = errorBody(call.format, 502, "the upstream channel broke off the stream before the answer was complete (stream interrupted)", "stream_interrupted");
    return call.format === "claude" ? sseFrame(JSON.stringify(body), "error") : sseFrame(JSON.stringify(body));
  };
  const done = () => {
    if (settled) return;
    settled = true;
    release();
    finish(deps, o, mapper.usage() ?? counted, () => mapper.generatedText());
    closed();
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
            if (mapper.complete()) out += mapper.end(count);
            else out += interrupted();
            if (out) controller.write(out);
            done();
            controller.close();
            return;
          }
          if (!o.firstByteMs) o.firstByteMs = performance.now() - o.started;
          let out = "";
          for (const ev of sse.push(value)) out += mapper.event(ev);
          if (out) {
            controller.write(out);
            await controller.flush();
          }
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
      abortUpstream();
      reader.cancel().catch(() => {});
      done();
    },
  } as any);
  return new Response(body, {
    status: 200,
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" },
  });
}

/** Settles and records a served call after the reply is on its way; the write-behind queue waits for it on flush. */
function finish(deps: AppDeps, o: Outcome, usage: Usage | null, generated?: () => string): void {
  o.ticket.succeeded();
  const { ledger, writer } = relayState(deps);
  const job = (async () => {
    const u = usage ?? countedUsageNow(o, generated?.() ?? "");
    const cost = quotaFor(o.price, u, o.calls);
    const taken = await ledger.settle(o.hold, cost, (q) => records(deps, o, u, q));
    warnIfLow(deps, o, taken);
  })();
  writer.track(job);
}

/** Quota warning (issue 6): the balance left after this call; the check costs no I/O while it is above the threshold. */
function warnIfLow(deps: AppDeps, o: Outcome, taken: number): void {
  const c = o.req.caller;
  maybeNotifyQuota(deps, c.userId, relayState(deps).ledger.remaining(c.userId, c.userQuota - taken), c.userSetting);
}

function countedUsageNow(o: Outcome, generated: string): Usage {
  const prompt = o.req.body instanceof FormData ? 0 : countPromptTokensNow(o.req.body);
  const completion = countTokensNow(generated);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** The counters and the consume log of a settled call, written together with its settlement. */
function records(deps: AppDeps, o: Outcome, u: Usage, quota: number): SettledEntry {
  const { req, price } = o;
  const now = Math.floor(Date.now() / 1000);
  const usage = {
    userId: req.caller.userId, username: req.caller.username, tokenId: req.caller.tokenId, channelId: o.channel.id,
    model: req.model, quota, tokens: u.prompt_tokens + u.completion_tokens, at: now,
  };
  if (!deps.options.bool("LogConsumeEnabled")) return { usage, log: null };
  const other = {
    model_ratio: price.modelRatio, group_ratio: price.groupRatio, completion_ratio: price.completionRatio,
    model_price: price.modelPrice, cache_tokens: u.cached_tokens ?? 0, cache_ratio: price.cacheRatio,
    cache_creation_tokens: u.cache_creation_tokens ?? 0, cache_creation_ratio: price.cacheCreationRatio,
    frt: Math.round(o.firstByteMs), is_model_mapped: o.upstreamModel !== req.model, upstream_model_name: o.upstreamModel,
    admin_info: { use_channel: o.usedChannels.map(String) }, request_path: req.path,
    ...(o.interrupted ? { stream_interrupted: true } : {}),
  };
  const content = price.perCall
    ? `model price $${price.modelPrice}, group ratio ${price.groupRatio}`
    : `model ratio ${price.modelRatio}, completion ratio ${price.completionRatio}, group ratio ${price.groupRatio}`;
  return { usage, log: {
    user_id: req.caller.userId, created_at: now, type: LOG_TYPE.consume, content, username: req.caller.username,
    token_name: req.caller.tokenName, model_name: req.model, quota, prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens,
    use_time: Math.round((performance.now() - o.started) / 1000), is_stream: req.stream, channel_id: o.channel.id,
    token_id: req.caller.tokenId, group: req.caller.group, ip: req.ip, other: JSON.stringify(other),
  } };
}

function recordError(deps: AppDeps, req: RelayRequest, err: AppError, channelId: number, used: number[], started: number): void {
  if (!deps.options.bool("LogErrorEnabled")) return;
  relayState(deps).writer.log({
    user_id: req.caller.userId, created_at: Math.floor(Date.now() / 1000), type: LOG_TYPE.error, content: err.message,
    username: req.caller.username, token_name: req.caller.tokenName, model_name: req.model, quota: 0,
    use_time: Math.round((performance.now() - started) / 1000), is_stream: req.stream, channel_id: channelId,
    token_id: req.caller.tokenId, group: req.caller.group, ip: req.ip,
    other: JSON.stringify({ status_code: err.status, admin_info: { use_channel: used.map(String) }, request_path: req.path }),
  });
}
