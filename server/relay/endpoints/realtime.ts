// GET /v1/realtime?model= — the Realtime API's websocket, relayed to an OpenAI-format or Azure channel.
// The session is admitted and its upstream socket opened before the client's upgrade is accepted, so a bad
// key, an unknown model or a refused upstream answer as HTTP errors. Events then pass both ways unchanged.
// Billing follows the upstream's usage: every response.done settles the hold the session keeps (text and
// audio tokens at their ratios, one consume log each, is_stream) and takes the next; when the balance
// cannot cover the next, the client gets an error event and the session is closed. A client that leaves
// mid-response has that response cancelled upstream and pays for what it had produced.
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { clientIp } from "../../http/ratelimit.ts";
import type { Channel } from "../../../db/schema.ts";
import type { ProviderAdaptor, Usage } from "../providers/types.ts";
import { adaptorFor } from "../providers/index.ts";
import { authenticate, presentedKey } from "../auth.ts";
import { relayState } from "../state.ts";
import { admit, type Admission, type RelayRequest } from "../core/admit.ts";
import { providerCall, reportFailure, route, UpstreamError } from "../core/route.ts";
import { finish, recordError, release, type Served } from "../core/settle.ts";
import { scrub } from "../formats/scrub.ts";
import { quotaFor, type Price } from "../billing.ts";

/** The browser client's way to send a key: a subprotocol (browsers cannot set headers on a websocket). */
const KEY_PROTOCOL = "openai-insecure-api-key.";
const BETA_PROTOCOL = "openai-beta.";
/** How long a new upstream socket may take to open. */
const CONNECT_TIMEOUT_MS = 15_000;
/** A session whose client never completes the upgrade is closed after this long. */
const ATTACH_TIMEOUT_MS = 10_000;
/** How long a cancelled response's usage is waited for after the client left. */
const CANCEL_WAIT_MS = 3_000;
/** The hold a session keeps for its next response: the price of this many audio output tokens. */
export const REALTIME_HOLD_TOKENS = 1024;

/**
 * Audio token prices relative to text input (AudioRatio) and audio output relative to audio input
 * (AudioCompletionRatio) of the realtime models, from OpenAI's price list, for when the options of those
 * names have no entry for the model (billing.ts otherwise bills audio like text).
 */
const AUDIO_RATIO: Record<string, number> = {
  "gpt-realtime": 8,
  "gpt-4o-realtime-preview": 8,
  "gpt-realtime-mini": 16.67,
  "gpt-4o-mini-realtime-preview": 16.67,
};
const AUDIO_COMPLETION_RATIO: Record<string, number> = {
  "gpt-realtime": 2,
  "gpt-4o-realtime-preview": 2,
  "gpt-realtime-mini": 2,
  "gpt-4o-mini-realtime-preview": 2,
};

function builtin(table: Record<string, number>, model: string): number | undefined {
  const hit = Object.keys(table)
    .filter((k) => model === k || model.startsWith(k + "-"))
    .sort((a, b) => b.length - a.length)[0];
  return hit ? table[hit] : undefined;
}

/** The model's price with the audio ratios a realtime session bills at: the options' entry, else the built-in one. */
export function realtimePrice(deps: AppDeps, model: string, price: Price): Price {
  const own = (key: string) => {
    const v = deps.options.json<Record<string, unknown>>(key, {})[model];
    return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;
  };
  return {
    ...price,
    audioRatio: own("AudioRatio") ?? builtin(AUDIO_RATIO, model) ?? price.audioRatio,
    audioCompletionRatio:
      own("AudioCompletionRatio") ?? builtin(AUDIO_COMPLETION_RATIO, model) ?? price.audioCompletionRatio,
  };
}

const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/**
 * A response.done usage object as the relay's Usage: prompt and completion with their audio parts (cached
 * tokens, audio or text, are billed at the cache ratio, as OpenAI prices cached audio like cached text).
 */
export function realtimeUsage(u: any): Usage {
  const inD = u?.input_token_details ?? {};
  const outD = u?.output_token_details ?? {};
  const audioIn = n(inD.audio_tokens);
  const textIn =
    inD.text_tokens !== undefined
      ? n(inD.text_tokens) + n(inD.image_tokens)
      : Math.max(0, n(u?.input_tokens) - audioIn);
  const cachedDetails = inD.cached_tokens_details ?? {};
  const cachedAudio = Math.min(audioIn, n(cachedDetails.audio_tokens));
  const cachedText = Math.min(
    textIn,
    cachedDetails.text_tokens !== undefined
      ? n(cachedDetails.text_tokens) + n(cachedDetails.image_tokens)
      : Math.max(0, n(inD.cached_tokens) - cachedAudio),
  );
  const audioOut = n(outD.audio_tokens);
  const textOut = outD.text_tokens !== undefined ? n(outD.text_tokens) : Math.max(0, n(u?.output_tokens) - audioOut);
  return {
    prompt_tokens: textIn + audioIn,
    completion_tokens: textOut + audioOut,
    total_tokens: textIn + audioIn + textOut + audioOut,
    cached_tokens: cachedText + cachedAudio,
    audio_prompt_tokens: audioIn - cachedAudio,
    audio_completion_tokens: audioOut,
  };
}

/** The session's hold for its next response: REALTIME_HOLD_TOKENS audio output tokens. */
function turnHold(price: Price): number {
  return quotaFor(price, {
    prompt_tokens: 0,
    completion_tokens: REALTIME_HOLD_TOKENS,
    total_tokens: REALTIME_HOLD_TOKENS,
    audio_completion_tokens: REALTIME_HOLD_TOKENS,
  });
}

/** The key from Authorization, api-key (Azure clients), the browser subprotocol, or ?key= / ?api-key=. */
function realtimeKey(request: Request): string {
  const h = request.headers;
  const proto = (h.get("sec-websocket-protocol") ?? "")
    .split(",")
    .map((p) => p.trim())
    .find((p) => p.startsWith(KEY_PROTOCOL));
  if (!h.get("authorization") && proto) return proto.slice(KEY_PROTOCOL.length);
  const azure = h.get("api-key") ?? new URL(request.url).searchParams.get("api-key");
  if (!h.get("authorization") && azure) return azure.trim();
  return presentedKey(request);
}

interface Upstream {
  ws: WebSocket;
  adaptor: ProviderAdaptor;
}

/** Opens the channel's realtime socket: resolves when it is open, or to an UpstreamError another channel may retry. */
function connect(
  adaptor: ProviderAdaptor,
  target: { url: string; headers: Record<string, string> },
): Promise<WebSocket | UpstreamError> {
  return new Promise((resolve) => {
    let ws: WebSocket;
    try {
      ws = new WebSocket(target.url, { headers: target.headers } as any);
    } catch {
      resolve(new UpstreamError(502, "could not connect to the upstream channel's realtime endpoint", true));
      return;
    }
    const timer = setTimeout(() => {
      ws.close();
      resolve(new UpstreamError(504, "the upstream channel's realtime endpoint did not answer in time", true));
    }, CONNECT_TIMEOUT_MS);
    ws.addEventListener(
      "open",
      () => {
        clearTimeout(timer);
        resolve(ws);
      },
      { once: true },
    );
    const failed = () => {
      clearTimeout(timer);
      resolve(new UpstreamError(502, `the upstream channel refused the realtime session (${adaptor.kind})`, true));
    };
    ws.addEventListener("error", failed, { once: true });
    ws.addEventListener("close", failed, { once: true });
  });
}

/** One relayed session: the upstream socket, the billing state and the client once it is attached. */
class Session {
  private client: { send(data: string): unknown; close(code?: number, reason?: string): unknown } | null = null;
  private early: string[] = [];
  private closed = false;
  /** response ids the upstream created and has not finished */
  private active = new Set<string>();
  /** billing runs one response.done at a time: each settles the hold and takes the next */
  private billing: Promise<void> = Promise.resolve();
  /** Client events wait here while a response is being billed, until the next response's hold is taken:
   * nothing the client sends (response.create, audio a server VAD turns into a response) starts unpaid work. */
  private held: unknown[] | null = null;
  /** response.done events whose billing has not finished */
  private unbilled = 0;
  private cancelWait: (() => void) | null = null;

  constructor(
    private deps: AppDeps,
    private served: Served,
    private up: WebSocket,
  ) {
    up.addEventListener("message", (ev) =>
      this.fromUpstream(typeof ev.data === "string" ? ev.data : Buffer.from(ev.data as ArrayBuffer).toString("utf8")),
    );
    up.addEventListener("close", (ev) => this.upstreamClosed(ev.code, ev.reason));
    setTimeout(() => {
      if (!this.client) this.end(1001, "the client did not connect");
    }, ATTACH_TIMEOUT_MS).unref?.();
  }

  attach(client: { send(data: string): unknown; close(code?: number, reason?: string): unknown }): void {
    this.client = client;
    for (const m of this.early) client.send(m);
    this.early = [];
  }

  /** A client event, as Elysia hands it over (JSON text already parsed; binary frames as bytes). */
  fromClient(message: unknown): void {
    if (this.closed || this.up.readyState !== WebSocket.OPEN) return;
    if (this.held) {
      this.held.push(message);
      return;
    }
    if (message instanceof Uint8Array || message instanceof ArrayBuffer) this.up.send(message as ArrayBuffer);
    else this.up.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  private fromUpstream(text: string): void {
    if (this.client) this.client.send(text);
    else this.early.push(text);
    // Only lifecycle events are read; audio and text deltas pass untouched.
    if (!text.includes('"response.created"') && !text.includes('"response.done"')) return;
    let ev: any;
    try {
      ev = JSON.parse(text);
    } catch {
      return;
    }
    if (ev?.type === "response.created" && ev.response?.id) this.active.add(ev.response.id);
    if (ev?.type === "response.done") {
      if (ev.response?.id) this.active.delete(ev.response.id);
      const usage = ev.response?.usage;
      if (usage) {
        this.held ??= [];
        this.unbilled++;
        this.billing = this.billing.then(() => this.bill(usage));
      }
      if (this.active.size === 0) this.cancelWait?.();
    }
  }

  /** Settles the current hold with one response's usage, then holds for the next or ends the session. */
  private async bill(raw: unknown): Promise<void> {
    const s = this.served;
    const usage = realtimeUsage(raw);
    if (!s.firstByteMs) s.firstByteMs = performance.now() - s.started;
    const other = {
      realtime: true,
      audio_ratio: s.price.audioRatio ?? 1,
      audio_completion_ratio: s.price.audioCompletionRatio ?? 1,
      audio_input: usage.audio_prompt_tokens,
      audio_output: usage.audio_completion_tokens,
    };
    await finish(this.deps, s, usage, undefined, other).catch(() => {});
    // The next response's hold, taken from the balance as it now stands.
    this.served = { ...s, hold: { ...s.hold, amount: 0 }, started: performance.now(), firstByteMs: 0 };
    if (this.closed) return;
    try {
      const c = s.req.caller;
      this.served.hold = await relayState(this.deps).ledger.take(
        { userId: c.userId, tokenId: c.tokenId, unlimited: c.unlimited },
        turnHold(s.price),
      );
      // The token's budget holds the next response too (modules/token/limits.ts); the hold above goes back at the end.
      if (s.limits) await s.limits.holdNext(turnHold(s.price));
      if (--this.unbilled === 0) this.resume();
    } catch (e) {
      const err =
        e instanceof AppError
          ? e
          : new AppError(403, "quota is not enough to continue the session", "insufficient_user_quota");
      this.client?.send(
        JSON.stringify({
          type: "error",
          event_id: `event_${crypto.randomUUID().replace(/-/g, "")}`,
          error: {
            type: "insufficient_quota",
            code: err.code ?? "insufficient_quota",
            message: `${err.message}: the session is ended`,
            param: null,
            event_id: null,
          },
        }),
      );
      this.end(1008, "insufficient quota");
    }
  }

  /** The next hold is in place: the client's waiting events go upstream, in order. */
  private resume(): void {
    const waiting = this.held;
    this.held = null;
    for (const m of waiting ?? []) this.fromClient(m);
  }

  /** The client left: a response still running is cancelled and its usage waited for, briefly, then all is closed. */
  async clientClosed(): Promise<void> {
    if (this.closed) return;
    if (this.active.size > 0 && this.up.readyState === WebSocket.OPEN) {
      this.up.send(JSON.stringify({ type: "response.cancel" }));
      await new Promise<void>((resolve) => {
        this.cancelWait = resolve;
        setTimeout(resolve, CANCEL_WAIT_MS);
      });
    }
    this.end(1000, "client closed");
  }

  private upstreamClosed(code: number, reason: string): void {
    if (this.closed) return;
    // A close code the client may receive (1005/1006 are never sent).
    const sendable = code === 1000 || (code >= 3000 && code <= 4999) || (code >= 1007 && code <= 1014 && code !== 1010);
    this.end(
      sendable ? code : 1011,
      scrub(reason || "the upstream channel closed the session", {
        key: "",
        baseUrl: this.served.channel.base_url ?? "",
      }),
    );
  }

  /** Closes both sockets once; the hold of a response that never finished goes back after the last bill. */
  private end(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.up.close();
    } catch {}
    try {
      this.client?.close(code, reason.slice(0, 120));
    } catch {}
    const writer = relayState(this.deps).writer;
    const done = writer.streamOpened();
    void this.billing
      .then(() => release(this.deps, this.served))
      .catch(() => {})
      .finally(done);
  }
}

/** Routes a session: the first channel (by priority and weight, with retries) whose realtime socket opens. */
async function openSession(deps: AppDeps, req: RelayRequest, adm: Admission): Promise<Session> {
  let routed;
  try {
    routed = await route<ProviderAdaptor, Upstream>(
      deps,
      adm,
      (channel: Channel) => {
        const adaptor = adaptorFor(channel.type);
        return adaptor?.realtime ? adaptor : null;
      },
      async (adaptor, channel) => {
        const call = providerCall(req, channel, deps.options);
        const ws = await connect(adaptor, adaptor.realtime!(call));
        if (ws instanceof UpstreamError) {
          reportFailure(deps, call, undefined, ws.message);
          return ws;
        }
        return { ws, adaptor };
      },
    );
  } catch (e) {
    await release(deps, adm);
    throw e;
  }
  if (!routed.served) {
    await release(deps, adm);
    const err =
      routed.failure ?? new AppError(503, `no available channel for model ${req.model} in group ${req.caller.group}`);
    recordError(deps, req, err, routed.usedChannels.at(-1) ?? 0, routed.usedChannels, adm.started);
    throw err;
  }
  const { channel, result } = routed.served;
  const served: Served = {
    ...adm,
    channel,
    upstreamModel: providerCall(req, channel).upstreamModel,
    usedChannels: routed.usedChannels,
    firstByteMs: 0,
  };
  return new Session(deps, served, result.ws);
}

export function realtimeModule(deps: AppDeps) {
  return new Elysia({ name: "relay-realtime" }).ws("/v1/realtime", {
    // Runs once per upgrade, before it is accepted (Elysia calls beforeHandle twice for ws routes).
    async upgrade(ctx: any) {
      const request: Request = ctx.request;
      const url = new URL(request.url);
      const model = (url.searchParams.get("model") ?? url.searchParams.get("deployment") ?? "").trim();
      if (!model) throw new AppError(400, "model is required: GET /v1/realtime?model=...");
      const caller = await authenticate(
        deps,
        realtimeKey(request),
        clientIp(request, ctx.server, deps.config.trustProxy),
      );
      const protocols = (request.headers.get("sec-websocket-protocol") ?? "")
        .split(",")
        .map((p) => p.trim())
        .filter(Boolean);
      const beta =
        request.headers.get("openai-beta")
        ?? (protocols.some((p) => p.startsWith(BETA_PROTOCOL + "realtime")) ? "realtime=v1" : null);
      const req: RelayRequest = {
        mode: "realtime",
        format: "openai",
        path: "/v1/realtime",
        search: url.search,
        body: {},
        model,
        stream: true,
        caller,
        ip: clientIp(request, ctx.server, deps.config.trustProxy),
        headers: beta ? { "openai-beta": beta } : undefined,
      };
      const adm = await admit(deps, req, { estimate: (price) => turnHold(realtimePrice(deps, model, price)) });
      adm.price = realtimePrice(deps, model, adm.price);
      ctx.realtime = await openSession(deps, req, adm);
      // A client that offered subprotocols must get one back: "realtime" (the key's protocol is never echoed).
      if (protocols.length)
        ctx.set.headers["sec-websocket-protocol"] = protocols.includes("realtime")
          ? "realtime"
          : (protocols.find((p) => !p.startsWith(KEY_PROTOCOL)) ?? protocols[0]);
    },
    open(ws: any) {
      (ws.data.realtime as Session).attach(ws);
    },
    message(ws: any, message: unknown) {
      (ws.data.realtime as Session).fromClient(message);
    },
    close(ws: any) {
      void (ws.data.realtime as Session | undefined)?.clientClosed();
    },
  } as any);
}
