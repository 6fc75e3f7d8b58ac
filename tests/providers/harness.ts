// Drives one adaptor the way the relay does (buildRequest → fetch → parseResponse or the stream
// mapper over SSE, via decodeStream when the upstream is not SSE) without the rest of the pipeline.
import type { Channel } from "../../db/schema.ts";
import type {
  ClientFormat,
  ProviderAdaptor,
  ProviderCall,
  RelayMode,
  SiteOptions,
  Usage,
} from "../../server/relay/providers/types.ts";
import { SseReader } from "../../server/relay/formats/sse.ts";
import { nativeAware } from "../../server/relay/formats/bridge.ts";
import { OPTION_DEFAULTS } from "../../server/modules/option/defaults.ts";
import { answerUsage } from "../../server/relay/core/meter.ts";
import { fetchBody } from "../../server/infra/stream-client.ts";

export function channel(fields: Partial<Channel> = {}): Channel {
  return {
    id: 1,
    type: 1,
    key: "k",
    openai_organization: null,
    test_model: null,
    status: 1,
    name: "c",
    weight: 0,
    created_time: 0,
    test_time: 0,
    response_time: 0,
    base_url: "",
    other: "",
    balance: 0,
    balance_updated_time: 0,
    models: "",
    group: "default",
    used_quota: 0,
    model_mapping: null,
    status_code_mapping: "",
    priority: 0,
    auto_ban: 1,
    other_info: "",
    tag: null,
    setting: null,
    param_override: null,
    channel_info: "",
    max_input_tokens: 0,
    ...fields,
  } as Channel;
}

/** Site options over the defaults, with overrides. */
export function site(overrides: Record<string, string> = {}): SiteOptions {
  const values: Record<string, string> = { ...OPTION_DEFAULTS, ...overrides };
  const get = (k: string) => values[k] ?? "";
  return {
    get,
    bool: (k) => get(k) === "true",
    number: (k, fb = 0) => (get(k) !== "" && Number.isFinite(Number(get(k))) ? Number(get(k)) : fb),
    json: <T>(k: string, fb: T) => {
      try {
        return get(k) ? (JSON.parse(get(k)) as T) : fb;
      } catch {
        return fb;
      }
    },
  };
}

export function makeCall(p: Partial<ProviderCall> & { baseUrl: string; key: string }): ProviderCall {
  return {
    mode: "chat" as RelayMode,
    format: "openai" as ClientFormat,
    channel: channel(),
    requestModel: p.upstreamModel ?? "m",
    upstreamModel: "m",
    stream: false,
    clientWantsUsage: false,
    path: "/v1/chat/completions",
    search: "",
    options: {},
    ...p,
  };
}

export interface Outcome {
  status: number;
  body: any;
  usage: Usage | null;
  /** The SSE text a client would receive (streams only). */
  text: string;
  events: { event?: string; data: any }[];
  error?: string;
}

export async function run(adaptor: ProviderAdaptor, call: ProviderCall, body: any): Promise<Outcome> {
  const a = nativeAware(adaptor);
  const up = await a.buildRequest(call, body);
  const res = await fetch(up.url, { method: up.method ?? "POST", headers: up.headers, body: fetchBody(up.body) });
  if (!res.ok) {
    const text = await res.text();
    return {
      status: res.status,
      body: text,
      usage: null,
      text: "",
      events: [],
      error: a.errorMessage?.(res.status, text),
    };
  }
  if (!call.stream) {
    const parsed = a.parseResponse(call, await res.json());
    return { status: res.status, body: parsed.body, usage: await answerUsage(parsed), text: "", events: [] };
  }
  const stream = a.decodeStream ? a.decodeStream(call, res.body!) : res.body!;
  const mapper = a.streamMapper(call);
  const reader = new SseReader();
  let text = "";
  for await (const chunk of stream as any as AsyncIterable<Uint8Array>)
    for (const ev of reader.push(chunk)) text += mapper.event(ev);
  for (const ev of reader.finish()) text += mapper.event(ev);
  text += mapper.end();
  const events = new SseReader().push(new TextEncoder().encode(text)).map((e) => {
    let data: any = e.data;
    try {
      data = JSON.parse(e.data);
    } catch {}
    return { event: e.event, data };
  });
  return { status: res.status, body: null, usage: mapper.usage(), text, events };
}

/** The OpenAI chunks of a converted stream, without [DONE]. */
export const chunksOf = (o: Outcome) => o.events.filter((e) => e.data !== "[DONE]").map((e) => e.data);
export const contentOf = (o: Outcome) =>
  chunksOf(o)
    .map((c) => c.choices?.[0]?.delta?.content ?? "")
    .join("");
