// Channel type id → provider adaptor. Adding a provider is one import and one entry in ADAPTORS.
import { channelType } from "../../catalogue/index.ts";
import type { Channel } from "../../../db/schema.ts";
import type { ProviderAdaptor } from "./types.ts";
import { openaiAdaptor } from "./openai/index.ts";
import { quirksFor } from "./openai/quirks.ts";
import { claudeAdaptor } from "./claude/index.ts";
import { geminiAdaptor } from "./gemini/index.ts";
import { azureAdaptor } from "./azure/index.ts";
import { awsAdaptor } from "./aws/index.ts";
import { vertexAdaptor } from "./vertex/index.ts";
import { aliAdaptor } from "./ali/index.ts";
import { baiduAdaptor } from "./baidu/index.ts";
import { zhipuAdaptor } from "./zhipu/index.ts";
import { sparkAdaptor } from "./spark/index.ts";
import { aiproxyAdaptor } from "./aiproxy/index.ts";
import { tencentAdaptor } from "./tencent/index.ts";
import { cohereAdaptor } from "./cohere/index.ts";
import { difyAdaptor } from "./dify/index.ts";
import { retiredAdaptor } from "./retired/index.ts";
import { nativeAware } from "../formats/bridge.ts";
import { withChannelSettings, withResponsesSetting } from "./settings.ts";

export type * from "./types.ts";

/** Keyed by ChannelKind from the catalogue. */
export const ADAPTORS: Record<string, ProviderAdaptor> = {
  openai: openaiAdaptor,
  claude: claudeAdaptor,
  gemini: geminiAdaptor,
  azure: azureAdaptor,
  aws: awsAdaptor,
  vertex: vertexAdaptor,
  ali: aliAdaptor,
  baidu: baiduAdaptor,
  zhipu: zhipuAdaptor,
  spark: sparkAdaptor,
  aiproxy: aiproxyAdaptor,
  tencent: tencentAdaptor,
  cohere: cohereAdaptor,
  dify: difyAdaptor,
  retired: retiredAdaptor,
};

const byType = new Map<number, ProviderAdaptor | undefined>();

/** The adaptor for a channel type id, or undefined when Switchyard cannot relay that type (task-only types). */
export function adaptorFor(type: number): ProviderAdaptor | undefined {
  if (byType.has(type)) return byType.get(type);
  const kind = channelType(type)?.kind;
  let adaptor = kind ? ADAPTORS[kind] : undefined;
  // OpenAI-compatible types that serve only some endpoints say so per type (providers/openai/quirks.ts).
  const modes = kind === "openai" ? quirksFor(type).modes : undefined;
  if (adaptor && modes) adaptor = { ...adaptor, supports: (mode) => modes.includes(mode) };
  // Claude/Gemini-format clients reach every adaptor (converted through OpenAI when it speaks another
  // format), and the channel's settings (proxy, system prompt) apply around all of it.
  const out = adaptor && withChannelSettings(nativeAware(withResponsesSetting(adaptor)));
  byType.set(type, out);
  return out;
}

/** The channel's base URL, or its type's default, without trailing slashes. */
export function baseUrlOf(channel: Pick<Channel, "type" | "base_url">): string {
  const url = (channel.base_url || channelType(channel.type)?.baseUrl || "").trim();
  return url.replace(TRAILING_SLASHES, "");
}

/** Made once: a regular expression literal inside a function is a new object on every call (every attempt here). */
const TRAILING_SLASHES = /\/+$/;
