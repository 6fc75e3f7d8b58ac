// The background work main.ts starts: periodic channel tests (CHANNEL_TEST_FREQUENCY), half-open probes of
// auto-disabled channels, log retention and the response cache's clean-up. All stop on graceful shutdown.
import type { AppDeps } from "../deps.ts";
import { startChannelTestJob } from "./channel-test.ts";
import { startChannelProbeJob } from "./channel-probe.ts";
import { startLogRetentionJob } from "./log-retention.ts";
import { startResponseCacheCleanup } from "./response-cache-cleanup.ts";

export function startChannelJobs(deps: AppDeps): () => void {
  const stops = [
    startChannelTestJob(deps),
    startChannelProbeJob(deps),
    startLogRetentionJob(deps),
    startResponseCacheCleanup(deps),
  ];
  return () => stops.forEach((stop) => stop());
}
