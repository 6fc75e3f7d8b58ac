// Half-open probes: a channel the automation disabled (status 3) is tested again after a back-off
// (1, 2, 4 ... 30 minutes since it was disabled or last probed). A passing probe re-enables it when
// AutomaticEnableChannelEnabled is on; a failing one doubles the wait. Manually disabled channels are
// never probed.
import type { AppDeps } from "../deps.ts";
import { nowSeconds } from "../../db/index.ts";
import { CHANNEL_STATUS } from "../catalogue/index.ts";
import { parseOtherInfo } from "../modules/channel/service.ts";
import { probeDelaySeconds } from "../modules/channel/health.ts";
import { testChannel } from "../modules/channel/testing.ts";

export const PROBE_TICK_SECONDS = 60;

/** Probes every auto-disabled channel that is due; returns the ids probed. */
export async function probeDueChannels(deps: AppDeps, now = nowSeconds()): Promise<number[]> {
  if (!deps.options.bool("AutomaticEnableChannelEnabled")) return [];
  const rows = await deps.db
    .selectFrom("channels")
    .selectAll()
    .where("status", "=", CHANNEL_STATUS.autoDisabled)
    .execute();
  const probed: number[] = [];
  for (const ch of rows) {
    const info = parseOtherInfo(ch.other_info);
    const since = Math.max(Number(info.status_time ?? 0), Number(info.probe_time ?? 0));
    if (now < since + probeDelaySeconds(Number(info.probe_failures ?? 0))) continue;
    // One instance per channel and round.
    if (!(await deps.cache.setNx(`job:channel-probe:${ch.id}`, "1", PROBE_TICK_SECONDS - 5))) continue;
    probed.push(ch.id);
    try {
      await testChannel(deps, ch, { probe: true });
    } catch (e) {
      console.error(`probe of channel #${ch.id} failed:`, (e as Error).message);
    }
  }
  return probed;
}

export function startChannelProbeJob(deps: AppDeps): () => void {
  const timer = setInterval(() => {
    probeDueChannels(deps).catch((e) => console.error("channel probe round failed:", (e as Error).message));
  }, PROBE_TICK_SECONDS * 1000);
  timer.unref?.();
  const stop = () => clearInterval(timer);
  deps.shutdownHooks.push(async () => stop());
  return stop;
}
