// Periodic test of all channels (CHANNEL_TEST_FREQUENCY minutes). With several instances sharing a
// cache, a lock makes one instance run each round.
import type { AppDeps } from "../deps.ts";
import { startTestAll } from "../modules/channel/testing.ts";

export async function runScheduledChannelTest(deps: AppDeps, minutes: number): Promise<boolean> {
  // The lock lives a little shorter than the period so the next round is never blocked by this one.
  const ttl = Math.max(30, minutes * 60 - 5);
  if (!(await deps.cache.setNx("job:channel-test", String(Date.now()), ttl))) return false;
  await startTestAll(deps).done;
  return true;
}

/** Starts the timer when CHANNEL_TEST_FREQUENCY > 0; returns the stop function (also run on shutdown). */
export function startChannelTestJob(deps: AppDeps): () => void {
  const minutes = deps.config.channelTestFrequencyMinutes;
  if (!minutes || minutes <= 0) return () => {};
  const timer = setInterval(() => {
    runScheduledChannelTest(deps, minutes).catch((e) => console.error("scheduled channel test failed:", (e as Error).message));
  }, minutes * 60_000);
  timer.unref?.();
  const stop = () => clearInterval(timer);
  deps.shutdownHooks.push(async () => stop());
  return stop;
}
