// Azure OpenAI's Realtime API: the deployment's websocket, authorised with the api-key header. The v1 API
// ("v1" or "preview" as the channel's version) takes /openai/v1/realtime?model=<deployment>; dated preview
// versions take /openai/realtime?api-version=...&deployment=<deployment>.
import type { ProviderCall, RealtimeTarget } from "../types.ts";
import { azureApiVersion, deploymentName } from "./index.ts";
import { wsBase } from "../openai/realtime.ts";

export function azureRealtime(call: ProviderCall): RealtimeTarget {
  const base = wsBase(call.baseUrl.replace(/\/openai$/, ""));
  const version = azureApiVersion(call);
  const deployment = encodeURIComponent(deploymentName(call.upstreamModel));
  const url =
    version === "v1" || version === "preview"
      ? `${base}/openai/v1/realtime?model=${deployment}`
      : `${base}/openai/realtime?api-version=${encodeURIComponent(version)}&deployment=${deployment}`;
  const headers: Record<string, string> = { "api-key": call.key };
  const beta = call.clientHeaders?.["openai-beta"];
  if (beta) headers["openai-beta"] = beta;
  return { url, headers };
}
