// Channel types whose upstream no longer exists (PaLM2, type 11: Google shut the PaLM API down and
// replaced it with Gemini). Calls are answered with what happened and which type to use instead, in the
// caller's format, rather than a bare "not supported"; no request leaves the gateway.
import type { ProviderAdaptor } from "../types.ts";
import { AppError } from "../../../http/errors.ts";
import { channelType } from "../../../catalogue/index.ts";

export function retiredMessage(type: number): string {
  const t = channelType(type);
  const instead = t?.replacedBy !== undefined ? channelType(t.replacedBy) : undefined;
  const name = t?.name ?? `type ${type}`;
  return (
    `the ${name} API has been shut down by its provider; this channel cannot answer any more`
    + (instead ? ` — use a ${instead.name} channel (type ${instead.id}) instead` : "")
  );
}

export const retiredAdaptor: ProviderAdaptor = {
  kind: "retired",
  supports: () => true,
  buildRequest(call) {
    // 410 Gone: the upstream is gone for good; the channel should be replaced.
    throw new AppError(410, retiredMessage(call.channel.type), "channel_retired");
  },
  parseResponse: (_call, json) => ({ body: json, usage: null }),
  streamMapper() {
    throw new AppError(410, "this channel type has been retired", "channel_retired");
  },
};
