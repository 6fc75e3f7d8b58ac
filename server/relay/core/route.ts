// Routing: which channel an admitted call goes to, and on to the next when an upstream fails in a way
// another channel may not (a retryable status, a timeout, a refused connection). Generic over what an
// attempt is (an exchange, a task submit): the endpoint says how to try one channel.
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import { AppError } from "../../http/errors.ts";
import type { ProviderCall, SiteOptions } from "../providers/types.ts";
import { baseUrlOf } from "../providers/index.ts";
import { pickChannel, pickFastest } from "../select.ts";
import { channelStatsOf, type ChannelStats } from "../channel-stats.ts";
import { recordChannelResult } from "../../modules/channel/health.ts";
import { parseChannelInfo, pickChannelKey, usableKeyAt, type ChannelInfo } from "../../modules/channel/keys.ts";
import type { Admission, RelayRequest } from "./admit.ts";
import { affinityOf } from "../affinity.ts";

/** An upstream failure, and whether another channel may be tried after it. */
export class UpstreamError extends AppError {
  /** `contextOverflow`: the upstream said the prompt exceeds the model's context window (core/fallback.ts); the
   * client then gets OpenAI's code for it, on which clients trim the prompt. */
  constructor(
    status: number,
    message: string,
    public retry: boolean,
    public contextOverflow = false,
  ) {
    super(status, message, contextOverflow ? "context_length_exceeded" : "upstream_error");
  }
}

export interface Routed<A, T> {
  /** the channel that answered, with its adaptor, and what the attempt produced */
  served: { channel: Channel; adaptor: A; result: T } | null;
  /** why the last attempt failed, when none answered */
  failure: AppError | null;
  usedChannels: number[];
}

const NOTHING_TRIED: ReadonlySet<number> = new Set();

/**
 * Tries the call on up to 1 + RetryTimes channels (the pinned one only, when the token pins one), each
 * picked by priority and weight among those not tried yet. `adaptorOf` answers null for a channel that
 * cannot serve this endpoint (the attempt then counts as a 501 and the next channel is tried). Both callbacks
 * are also handed the admission and deps, so an endpoint can pass functions made once instead of closures.
 */
export async function route<A, T>(
  deps: AppDeps,
  adm: Admission,
  adaptorOf: (channel: Channel, adm: Admission) => A | null,
  tryOne: (adaptor: A, channel: Channel, adm: Admission, deps: AppDeps) => Promise<T | AppError>,
): Promise<Routed<A, T>> {
  const { table, candidates, pinned } = adm.routes;
  // Made only when a next attempt may follow (most calls make one).
  let tried: Set<number> | null = null;
  const usedChannels: number[] = [];
  const attempts = pinned ? 1 : 1 + Math.max(0, Math.floor(deps.options.number("RetryTimes", 0)));
  // "latency": the fastest healthy channel of the tier, measured on this instance (channel-stats.ts).
  const stats = deps.options.get("ChannelSelectionStrategy") === "latency" ? channelStatsOf(deps.options) : null;
  let failure: AppError | null = null;
  // A conversation's call goes first to the channel that served its previous call (relay/affinity.ts).
  const affinity = pinned ? null : affinityOf(deps, adm.req);
  let preferred: Channel | null = null;
  if (affinity) {
    if (affinity.loading) await affinity.loading;
    preferred = affinity.preferred(candidates, table);
    adm.affinity = affinity;
  }
  for (let i = 0; i < attempts; i++) {
    const skip = tried ?? NOTHING_TRIED;
    const id = pinned
      ? pinned.id
      : preferred
        ? preferred.id
        : stats
          ? pickFastest(candidates, skip, stats, adm.req.model)
          : pickChannel(candidates, skip);
    const channel = pinned ?? preferred ?? (id !== null ? table.channels.get(id) : undefined);
    preferred = null;
    if (!channel) break;
    if (i + 1 < attempts) (tried ??= new Set()).add(channel.id);
    usedChannels.push(channel.id);
    const adaptor = adaptorOf(channel, adm);
    if (!adaptor) {
      failure = new AppError(
        501,
        `${adm.req.path} is not supported by the channels serving model ${adm.req.model}`,
        "not_implemented",
      );
      continue;
    }
    const sent = stats ? performance.now() : 0;
    const result = await tryOne(adaptor, channel, adm, deps);
    if (stats) measure(deps, stats, channel.id, adm.req.model, result, performance.now() - sent);
    if (result instanceof AppError) {
      failure = result;
      if (result instanceof UpstreamError && result.retry && !affinity?.stopsAfterFailure(channel.id)) continue;
      break;
    }
    affinity?.served(channel.id, adm.keyIndex, usedChannels[0]!);
    return { served: { channel, adaptor, result }, failure: null, usedChannels };
  }
  return { served: null, failure, usedChannels };
}

/** An attempt's outcome for the latency strategy: answered (its latency), or failed in a way another channel
 * may not (the channel then cools down). Other errors (the client's bad request) say nothing of the channel. */
function measure(
  deps: AppDeps,
  stats: ChannelStats,
  channelId: number,
  model: string,
  result: unknown,
  ms: number,
): void {
  if (!(result instanceof AppError)) stats.succeeded(channelId, model, ms);
  else if (result instanceof UpstreamError && result.retry)
    stats.failed(channelId, model, deps.options.number("ChannelCooldownSeconds", 30) * 1000);
}

interface ChannelConfig {
  mapping: Record<string, string>;
  statusMap: Record<string, string>;
  override: Record<string, unknown> | null;
  options: Record<string, unknown>;
  keyInfo: ChannelInfo;
}
const configs = new WeakMap<Channel, ChannelConfig>();

/** The channel's JSON settings, parsed once per loaded channel row. Bad JSON counts as "not set". */
export function channelConfig(ch: Channel): ChannelConfig {
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

/** What a provider adaptor needs to know about one attempt of `req` on `channel`. */
export function providerCall(
  req: Pick<RelayRequest, "mode" | "format" | "model" | "stream" | "path" | "search" | "body" | "headers"> & {
    caller?: Pick<RelayRequest["caller"], "userId">;
  },
  channel: Channel,
  site?: SiteOptions,
  preferredKey?: number,
): ProviderCall {
  const cfg = channelConfig(channel);
  const mapped = cfg.mapping[req.model];
  const upstreamModel = typeof mapped === "string" && mapped ? mapped : req.model;
  const { key, keyIndex } = channelKey(channel, cfg.keyInfo, pollingIndexOf(site), preferredKey);
  const clientWantsUsage = Boolean(req.body?.stream_options?.include_usage);
  // The site's or the channel's pass-through sends the client's body unchanged: no overrides either.
  const passThroughBody =
    Boolean(site?.bool("global.pass_through_request_enabled")) || cfg.options.pass_through_body_enabled === true;
  return {
    mode: req.mode,
    format: req.format,
    channel,
    key,
    keyIndex,
    baseUrl: baseUrlOf(channel),
    requestModel: req.model,
    upstreamModel,
    stream: req.stream,
    clientWantsUsage,
    path: req.path,
    search: req.search,
    options: cfg.options,
    site,
    clientHeaders: req.headers,
    paramOverride: passThroughBody ? null : cfg.override,
    passThroughBody,
    userId: req.caller?.userId,
  };
}

/** Where each multi-key channel's polling rotation goes on next, on this instance. Persisting it would put
 * a write on every call; keys that failed are persisted (channel_info) by channel automation instead. */
const pollingIndexes = new WeakMap<object, Map<number, number>>();
const sharedPollingIndex = new Map<number, number>();

/** Per app, keyed by its option store: channel ids are per database, and tests run several apps in one process. */
function pollingIndexOf(site?: SiteOptions): Map<number, number> {
  if (!site) return sharedPollingIndex;
  let m = pollingIndexes.get(site);
  if (!m) pollingIndexes.set(site, (m = new Map()));
  return m;
}

/** `preferred`: the key a conversation is pinned to (relay/affinity.ts), taken while it may serve. */
function channelKey(
  channel: Channel,
  info: ChannelInfo,
  pollingIndex: Map<number, number>,
  preferred?: number,
): { key: string; keyIndex: number } {
  if (!info.is_multi_key) return { key: String(channel.key ?? "").trim(), keyIndex: 0 };
  if (preferred !== undefined) {
    const key = usableKeyAt(channel, info, preferred, Math.floor(Date.now() / 1000));
    if (key !== null) return { key, keyIndex: preferred };
  }
  const at = pollingIndex.get(channel.id) ?? info.multi_key_polling_index;
  const pick = pickChannelKey(
    { key: channel.key, channel_info: { ...info, multi_key_polling_index: at } },
    Math.floor(Date.now() / 1000),
  );
  pollingIndex.set(channel.id, pick.info.multi_key_polling_index);
  return { key: pick.key, keyIndex: pick.index };
}

/** The client-facing status of an upstream error status, after the channel's status_code_mapping. */
export function mappedStatus(channel: Channel, status: number): number {
  const mapped = Number(channelConfig(channel).statusMap[String(status)]);
  return Number.isInteger(mapped) && mapped >= 100 && mapped <= 599 ? mapped : status;
}

/** Lets channel automation count failures toward auto-disable, off the response path. */
export function reportFailure(
  deps: AppDeps,
  call: ProviderCall,
  status: number | undefined,
  message: string,
  code?: string,
) {
  if (!deps.options.bool("AutomaticDisableChannelEnabled")) return;
  const keyIndex = parseChannelInfo(call.channel.channel_info).is_multi_key ? call.keyIndex : undefined;
  void recordChannelResult(deps, call.channel.id, {
    ok: false,
    source: "relay",
    status,
    message,
    code,
    keyIndex,
  }).catch(() => {});
}

/** The error code of an OpenAI-style error body (for auto-disable rules keyed on codes). */
export function errorCode(text: string): string | undefined {
  try {
    const e = JSON.parse(text)?.error;
    const c = e?.code ?? e?.type;
    return typeof c === "string" ? c : undefined;
  } catch {
    return undefined;
  }
}
