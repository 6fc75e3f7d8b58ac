// The model list an upstream offers, read live (the channel form's "fetch models").
import type { AppDeps } from "../../deps.ts";
import { nowSeconds } from "../../../db/index.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import { channelType } from "../../catalogue/index.ts";
import { modelListSupported, upstreamModels } from "../../relay/probe.ts";
import type { Channel } from "../../../db/schema.ts";
import { pickChannelKey } from "./keys.ts";
import { getChannel } from "./service.ts";

async function fetchFrom(
  channel: Pick<Channel, "type" | "base_url"> & Partial<Channel>,
  key: string,
): Promise<string[]> {
  const type = channel.type;
  if (!modelListSupported(type))
    throw badRequest(`fetching models is not supported for this type (${channelType(type)?.name ?? type})`);
  try {
    const models = await upstreamModels(channel, key);
    return [...new Set(models)].sort();
  } catch (e) {
    const message = ((e as Error).message || "request failed").split(key).join("***");
    throw new AppError(502, `failed to get model list: ${message}`);
  }
}

export async function fetchChannelModels(deps: AppDeps, id: number): Promise<string[]> {
  const ch = await getChannel(deps, id);
  return fetchFrom(ch, pickChannelKey(ch, nowSeconds()).key);
}

/** For the create form: the channel does not exist yet, so the caller gives type, base URL and key. */
export async function fetchModelsFor(input: { base_url?: string; type?: number; key?: string }): Promise<string[]> {
  const key =
    (input.key ?? "")
      .split(/\r?\n/)
      .map((k) => k.trim())
      .find(Boolean) ?? "";
  if (!key) throw badRequest("fill in key");
  const type = Number(input.type ?? 1);
  if (!channelType(type)) throw badRequest(`unknown channel type ${input.type}`);
  const base = (input.base_url ?? "").trim();
  if (base && !/^https?:\/\//i.test(base)) throw badRequest("base URL must start with http:// or https://");
  return fetchFrom({ type, base_url: base }, key);
}
