// Periodic test of all channels: every CHANNEL_TEST_FREQUENCY minutes when that is set (it wins, as in new-api),
// else every monitor_setting.auto_test_channel_minutes while monitor_setting.auto_test_channel_enabled is on.
// The options are read on every tick, so turning the schedule on, off or changing its period from the console
// takes effect without a restart. With several instances sharing a cache, a lock makes one instance run each round.
import type { AppDeps } from "../deps.ts";
import { startTestAll } from "../modules/channel/testing.ts";

/** How often the schedule is looked at; a round starts at most this late. */
export const TICK_SECONDS = 10;

/** Seconds between scheduled rounds, or 0 when no schedule is on. */
export function channelTestPeriodSeconds(deps: AppDeps): number {
  const env = deps.config.channelTestFrequencyMinutes;
  if (env > 0) return env * 60;
  if (!deps.options.bool("monitor_setting.auto_test_channel_enabled")) return 0;
  const minutes = deps.options.number("monitor_setting.auto_test_channel_minutes", 10);
  return minutes > 0 ? minutes * 60 : 0;
}

export async function runScheduledChannelTest(deps: AppDeps, minutes: number): Promise<boolean> {
  // The lock lives a little shorter than the period so the next round is never blocked by this one.
  const ttl = Math.max(1, Math.floor(minutes * 60) - 5);
  if (!(await deps.cache.setNx("job:channel-test", String(Date.now()), ttl))) return false;
  await startTestAll(deps).done;
  return true;
}

/** One look at the schedule: runs a round when one is due. `state.next` is when (ms), 0 before the first look. */
export async function tickChannelTestSchedule(
  deps: AppDeps,
  state: { next: number; period: number },
  now = Date.now(),
): Promise<boolean> {
  const period = channelTestPeriodSeconds(deps);
  if (period <= 0) {
    state.next = 0;
    state.period = 0;
    return false;
  }
  // A new or changed period starts counting from now: the first round comes one period after switching on.
  if (state.next === 0 || state.period !== period) {
    state.period = period;
    state.next = now + period * 1000;
    return false;
  }
  if (now < state.next) return false;
  state.next = now + period * 1000;
  return runScheduledChannelTest(deps, period / 60);
}

/** Starts the schedule's ticker; returns the stop function (also run on shutdown). */
export function startChannelTestJob(deps: AppDeps, tickSeconds = TICK_SECONDS): () => void {
  const state = { next: 0, period: 0 };
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    tickChannelTestSchedule(deps, state)
      .catch((e) => console.error("scheduled channel test failed:", (e as Error).message))
      .finally(() => (running = false));
  }, tickSeconds * 1000);
  timer.unref?.();
  const stop = () => clearInterval(timer);
  deps.shutdownHooks.push(async () => stop());
  return stop;
}
