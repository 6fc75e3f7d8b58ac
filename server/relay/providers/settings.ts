// A channel's `setting` JSON (new-api's channel settings, which imported channels carry), applied around
// every adaptor so no provider has to know about it:
//   proxy                      http(s):// or socks5(h):// — every upstream request of the channel goes through it
//   system_prompt              put in front of the conversation when the client sent no system prompt
//   system_prompt_override     and, when the client did send one, prepended to it (new-api's "concatenate")
//   pass_through_body_enabled  the client's body goes upstream unchanged (read by the exchange, see call.passThroughBody)
//   force_format, thinking_to_content   read by the OpenAI-compatible adaptor (providers/openai/index.ts)
//   forward_headers            client headers forwarded besides the wire format's defaults (relay/forward.ts)
//   responses_api              "native" or "chat": whether the upstream serves the Responses API itself, over
//                              the channel type's default (catalogue nativeEndpoints; see withResponsesSetting)
import type { ClientFormat, ProviderAdaptor, ProviderCall, RelayMode } from "./types.ts";
import { proxyUrl } from "../../infra/proxy.ts";
import { streamFetch } from "../../infra/stream-client.ts";
import { RESPONSES_API_SETTINGS, type ResponsesApiSetting } from "../../catalogue/channel-types.ts";

/** The channel settings a relay call reads, typed. Unknown or wrongly typed values count as unset. */
export interface ChannelSettings {
  proxy: string;
  systemPrompt: string;
  systemPromptOverride: boolean;
  passThroughBody: boolean;
  forceFormat: boolean;
  thinkingToContent: boolean;
  /** "" when the channel type's default applies */
  responsesApi: ResponsesApiSetting | "";
}

const settingsMemo = new WeakMap<object, ChannelSettings>();

/** Memoised per options object (the relay parses a channel's settings once per loaded row: core/route.ts). */
export function channelSettings(options: Record<string, unknown> | undefined): ChannelSettings {
  if (!options) return readSettings({});
  let s = settingsMemo.get(options);
  if (!s) settingsMemo.set(options, (s = readSettings(options)));
  return s;
}

function readSettings(o: Record<string, unknown>): ChannelSettings {
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  return {
    proxy: str(o.proxy).trim(),
    systemPrompt: str(o.system_prompt),
    systemPromptOverride: o.system_prompt_override === true,
    passThroughBody: o.pass_through_body_enabled === true,
    forceFormat: o.force_format === true,
    thinkingToContent: o.thinking_to_content === true,
    responsesApi: (RESPONSES_API_SETTINGS as readonly unknown[]).includes(o.responses_api)
      ? (o.responses_api as ResponsesApiSetting)
      : "",
  };
}

/** The request options for one upstream request of the call: `init` with the channel's proxy, if it has one. */
export async function withChannelProxy(
  call: Pick<ProviderCall, "options">,
  init: RequestInit = {},
): Promise<RequestInit> {
  const proxy = await proxyUrl(channelSettings(call.options).proxy);
  return proxy ? ({ ...init, proxy } as RequestInit) : init;
}

/** A call's main upstream request: a streamed call through the stream client (infra/stream-client.ts, which
 * hands a proxied request to fetch), any other through fetch. */
export function sendUpstream(call: Pick<ProviderCall, "stream">, url: string, init: RequestInit): Promise<Response> {
  return call.stream ? streamFetch(url, init) : fetch(url, init);
}

/** fetch through the channel's proxy (for the extra requests an adaptor makes: tokens, task polls, audio files). */
export async function channelFetch(
  call: Pick<ProviderCall, "options">,
  url: string,
  init: RequestInit = {},
): Promise<Response> {
  return fetch(url, await withChannelProxy(call, init));
}

const SYSTEM_ROLES = new Set(["system", "developer"]);

/**
 * The client's body with the channel's system prompt: added when the conversation has none; with
 * `override`, prepended (a line apart) to the one the client sent. Chat-like calls only.
 */
export function withSystemPrompt(
  format: ClientFormat,
  mode: RelayMode,
  body: any,
  prompt: string,
  override: boolean,
): any {
  if (!prompt || !body || typeof body !== "object" || Array.isArray(body)) return body;
  if (format === "openai" && mode === "responses") {
    const given = typeof body.instructions === "string" && body.instructions ? body.instructions : "";
    if (!given) return { ...body, instructions: prompt };
    return override ? { ...body, instructions: `${prompt}\n${given}` } : body;
  }
  if (format === "openai") {
    if (mode !== "chat" || !Array.isArray(body.messages)) return body;
    const at = body.messages.findIndex((m: any) => SYSTEM_ROLES.has(m?.role));
    if (at === -1) return { ...body, messages: [{ role: "system", content: prompt }, ...body.messages] };
    if (!override) return body;
    const messages = [...body.messages];
    const m = messages[at];
    messages[at] = {
      ...m,
      content: Array.isArray(m.content)
        ? [{ type: "text", text: prompt }, ...m.content]
        : `${prompt}\n${m.content ?? ""}`,
    };
    return { ...body, messages };
  }
  if (format === "claude") {
    const sys = body.system;
    const empty = sys === undefined || sys === null || sys === "" || (Array.isArray(sys) && sys.length === 0);
    if (empty) return { ...body, system: prompt };
    if (!override) return body;
    return { ...body, system: Array.isArray(sys) ? [{ type: "text", text: prompt }, ...sys] : `${prompt}\n${sys}` };
  }
  const key =
    body.systemInstruction !== undefined
      ? "systemInstruction"
      : body.system_instruction !== undefined
        ? "system_instruction"
        : null;
  const parts = key && Array.isArray(body[key]?.parts) ? body[key].parts : [];
  if (!key || parts.length === 0) {
    const { system_instruction: _drop, ...rest } = body;
    return { ...rest, systemInstruction: { parts: [{ text: prompt }] } };
  }
  if (!override) return body;
  return { ...body, [key]: { ...body[key], parts: [{ text: prompt }, ...parts] } };
}

/**
 * The adaptor with the channel's `responses_api` setting deciding, where set, whether a Responses call goes
 * upstream as it is or through chat completions (formats/bridge.ts reads nativeResponses). "chat" converts
 * compaction too; "native" vouches for /v1/responses only (compaction stays with the type's catalogue row).
 */
export function withResponsesSetting(adaptor: ProviderAdaptor): ProviderAdaptor {
  if (!adaptor.supports("responses")) return adaptor;
  const own = adaptor.nativeResponses;
  return {
    ...adaptor,
    nativeResponses(call) {
      const setting = channelSettings(call.options).responsesApi;
      if (setting === "chat") return false;
      if (setting === "native" && call.mode === "responses") return true;
      return own ? own(call) : true;
    },
  };
}

const wrapped = new WeakMap<ProviderAdaptor, ProviderAdaptor>();

/** The adaptor with the channel's settings applied around it (memoised per adaptor). */
export function withChannelSettings(adaptor: ProviderAdaptor): ProviderAdaptor {
  const hit = wrapped.get(adaptor);
  if (hit) return hit;
  const out: ProviderAdaptor = {
    ...adaptor,
    buildRequest(call, body) {
      const s = channelSettings(call.options);
      if (s.systemPrompt && !call.passThroughBody && !(body instanceof FormData)) {
        body = withSystemPrompt(call.format, call.mode, body, s.systemPrompt, s.systemPromptOverride);
      }
      return adaptor.buildRequest(call, body);
    },
    send(call, url, init) {
      // Most channels have no proxy: no extra promise on the hot path for them.
      if (!channelSettings(call.options).proxy)
        return adaptor.send ? adaptor.send(call, url, init) : sendUpstream(call, url, init);
      return withChannelProxy(call, init).then((proxied) =>
        adaptor.send ? adaptor.send(call, url, proxied) : sendUpstream(call, url, proxied),
      );
    },
  };
  wrapped.set(adaptor, out);
  return out;
}
