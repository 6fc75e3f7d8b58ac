// Channel type id → provider adaptor. Adding a provider is one import and one entry in ADAPTORS.
import { channelType } from "../../catalogue/index.ts";
import type { Channel } from "../../../db/schema.ts";
import type { ProviderAdaptor } from "./types.ts";
import { openaiAdaptor } from "./openai/index.ts";
import { claudeAdaptor } from "./claude/index.ts";
import { geminiAdaptor } from "./gemini/index.ts";
import { azureAdaptor } from "./azure/index.ts";
import { awsAdaptor } from "./aws/index.ts";
import { vertexAdaptor } from "./vertex/index.ts";
import { nativeAware } from "../formats/bridge.ts";

export type * from "./types.ts";

/** Keyed by ChannelKind from the catalogue. */
export const ADAPTORS: Record<string, ProviderAdaptor> = {
  openai: openaiAdaptor,
  claude: claudeAdaptor,
  gemini: geminiAdaptor,
  azure: azureAdaptor,
  aws: awsAdaptor,
  vertex: vertexAdaptor,
};

/** The adaptor for a channel type id, or undefined when Switchyard cannot relay that type yet. */
export function adaptorFor(type: number): ProviderAdaptor | undefined {
  const kind = channelType(type)?.kind;
  const adaptor = kind ? ADAPTORS[kind] : undefined;
  // Claude/Gemini-format clients reach every adaptor: converted through OpenAI when it speaks another format.
  return adaptor && nativeAware(adaptor);
}

/** The channel's base URL, or its type's default, without trailing slashes. */
export function baseUrlOf(channel: Pick<Channel, "type" | "base_url">): string {
  const url = (channel.base_url || channelType(channel.type)?.baseUrl || "").trim();
  return url.replace(/\/+$/, "");
}
