// What the management modules ask of the relay, through this one door: a channel test (one real, minimal
// request built and sent exactly as the relay would send it), the upstream's balance, its live model list, and
// the channel affinity pins (their count per rule, and clearing them).
import type { AppDeps } from "../deps.ts";
import type { Channel } from "../../db/schema.ts";
import { channelType } from "../catalogue/index.ts";
import type { RelayMode } from "./providers/types.ts";
import { adaptorFor, baseUrlOf } from "./providers/index.ts";
import { balanceReader } from "./providers/balances.ts";
import { applyParamOverride } from "./override.ts";
import { channelConfig, errorCode, providerCall } from "./core/route.ts";
import { withChannelProxy } from "./providers/settings.ts";
import { taskAdaptorFor, type TaskAdaptor } from "./providers/tasks.ts";
import { fetchBody } from "../infra/stream-client.ts";
import { REASONING_MODEL } from "./formats/reasoning.ts";

export { affinityStats, clearAffinity } from "./affinity.ts";

const EMBEDDING_RE = /embed|bge-|m3e|text-similarity/i;
const RERANK_RE = /rerank/i;

export interface ProbeOutcome {
  ok: boolean;
  /** the upstream's HTTP status, when it answered */
  status?: number;
  /** why it failed (unscrubbed: the caller removes keys before showing or storing it) */
  message: string;
  code?: string;
  /** which key of a multi-key channel was used */
  keyIndex: number;
}

/** The request body of a test, in OpenAI format: "hi" with 16 output tokens, or an embedding of "hi". */
function testBody(mode: RelayMode, model: string): Record<string, unknown> {
  if (mode === "embeddings") return { model, input: "hi" };
  if (mode === "rerank") return { model, query: "hi", documents: ["hi"], top_n: 1 };
  const body: Record<string, unknown> = { model, messages: [{ role: "user", content: "hi" }], stream: false };
  if (REASONING_MODEL.test(model)) body.max_completion_tokens = 16;
  else body.max_tokens = 16;
  return body;
}

/** Sends one minimal request for `model` through the channel, as a relay call of an OpenAI client would. */
export async function probeChannel(
  deps: AppDeps,
  channel: Channel,
  model: string,
  signal: AbortSignal,
): Promise<ProbeOutcome> {
  const adaptor = adaptorFor(channel.type);
  const typeName = channelType(channel.type)?.name ?? `type ${channel.type}`;
  const tasks = adaptor ? undefined : taskAdaptorFor(channel.type);
  if (tasks) return probeTaskChannel(deps, channel, tasks, signal);
  if (!adaptor) return { ok: false, message: `testing is not supported for channel type ${typeName}`, keyIndex: 0 };
  const mode: RelayMode = RERANK_RE.test(model) ? "rerank" : EMBEDDING_RE.test(model) ? "embeddings" : "chat";
  if (!adaptor.supports(mode))
    return { ok: false, message: `channel type ${typeName} does not support ${mode} tests`, keyIndex: 0 };
  const path = mode === "embeddings" ? "/v1/embeddings" : mode === "rerank" ? "/v1/rerank" : "/v1/chat/completions";
  const req = { mode, format: "openai" as const, model, stream: false, path, search: "", body: null };
  const call = providerCall(req, channel, deps.options);
  const keyIndex = call.keyIndex ?? 0;
  try {
    const up = applyParamOverride(adaptor, call, await adaptor.buildRequest(call, testBody(mode, call.upstreamModel)));
    const init: RequestInit = {
      method: up.method ?? "POST",
      headers: up.headers,
      body: fetchBody(up.body),
      signal,
      redirect: "manual",
    };
    const res = await (adaptor.send ? adaptor.send(call, up.url, init) : fetch(up.url, init));
    const text = await res.text();
    if (!res.ok) {
      return {
        ok: false,
        status: res.status,
        message: adaptor.errorMessage?.(res.status, text) ?? `upstream answered with status ${res.status}`,
        code: errorCode(text),
        keyIndex,
      };
    }
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      return { ok: false, status: res.status, message: "the upstream answer is not JSON", keyIndex };
    }
    adaptor.parseResponse(call, json);
    if (json?.error)
      return {
        ok: false,
        status: res.status,
        message:
          typeof json.error === "string" ? json.error : (json.error.message ?? "the upstream answered with an error"),
        keyIndex,
      };
    return { ok: true, status: res.status, message: "", keyIndex };
  } catch (e) {
    if (signal.aborted) throw e;
    return { ok: false, message: (e as Error).message || "request failed", keyIndex };
  }
}

/** Channels that only run tasks (Midjourney proxies, Suno) are tested with their task API's cheapest call:
 * a fetch of no tasks, which needs a working address and key but starts no job and costs nothing. */
async function probeTaskChannel(
  deps: AppDeps,
  channel: Channel,
  tasks: TaskAdaptor,
  signal: AbortSignal,
): Promise<ProbeOutcome> {
  const call = providerCall(
    { mode: "task", format: "openai", model: "", stream: false, path: "", search: "", body: null },
    channel,
    deps.options,
  );
  const keyIndex = call.keyIndex ?? 0;
  const up = tasks.probe({ baseUrl: call.baseUrl, key: call.key, channelType: channel.type });
  try {
    const res = await fetch(up.url, {
      method: up.method ?? "GET",
      headers: up.headers,
      body: fetchBody(up.body),
      signal,
      redirect: "manual",
    });
    const text = await res.text();
    if (!res.ok) return { ok: false, status: res.status, message: tasks.errorMessage(res.status, text), keyIndex };
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return { ok: false, status: res.status, message: "the upstream answer is not JSON", keyIndex };
    }
    if (!tasks.probeOk(json))
      return { ok: false, status: res.status, message: tasks.errorMessage(res.status, text), keyIndex };
    return { ok: true, status: res.status, message: "", keyIndex };
  } catch (e) {
    if (signal.aborted) throw e;
    return { ok: false, message: (e as Error).message || "request failed", keyIndex };
  }
}

export function balanceSupported(type: number): boolean {
  return !!balanceReader(type) || !!adaptorFor(type)?.balance;
}

/** The channel's upstream balance in dollars; throws when the type has none or the upstream fails. */
export async function readBalance(channel: Channel, key: string, cancel?: AbortSignal): Promise<number> {
  const base = baseUrlOf(channel);
  const reader = balanceReader(channel.type);
  if (reader)
    return reader.read(base, key, cancel, await withChannelProxy({ options: channelConfig(channel).options }));
  const adaptor = adaptorFor(channel.type);
  if (!adaptor?.balance) throw new Error("balance query is not supported for this type");
  return adaptor.balance(base, key, channel);
}

export function modelListSupported(type: number): boolean {
  return !!adaptorFor(type)?.fetchModels;
}

/** The models the upstream offers (an existing channel, or type + base URL + key from the create form). */
export async function upstreamModels(
  channel: Pick<Channel, "type" | "base_url"> & Partial<Channel>,
  key: string,
): Promise<string[]> {
  const adaptor = adaptorFor(channel.type);
  if (!adaptor?.fetchModels) throw new Error("fetching models is not supported for this type");
  // The channel as far as it is known (a create form gives type and base URL): providers read its type and fields.
  return adaptor.fetchModels(baseUrlOf(channel), key, channel as Channel);
}
