// The channel background work main.ts starts: periodic tests (CHANNEL_TEST_FREQUENCY) and half-open
// probes of auto-disabled channels. Both stop on graceful shutdown.
import type { AppDeps } from "../deps.ts";
import { startChannelTestJob } from "./channel-test.ts";
import { startChannelProbeJob } from "./channel-probe.ts";

export function startChannelJobs(deps: AppDeps): () => void {
  const stops = [startChannelTestJob(deps), startChannelProbeJob(deps)];
  return () => stops.forEach((stop) => stop());
}
