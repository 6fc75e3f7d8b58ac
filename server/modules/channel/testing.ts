// Channel tests: one real, minimal request through the channel's provider adaptor ("hi" with a few
// output tokens, or an embedding of "hi" for embedding models). The outcome feeds the automation rules.
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import { nowSeconds } from "../../../db/index.ts";
import { CHANNEL_STATUS } from "../../catalogue/index.ts";
import { probeChannel, type ProbeOutcome } from "../../relay/probe.ts";
import { commaList } from "./abilities.ts";
import { getChannel, parseOtherInfo } from "./service.ts";
import { recordChannelResult, recordProbeFailure, type HealthAction } from "./health.ts";
import { backgroundRun, runInBackground } from "../../jobs/background.ts";

export interface TestResult {
  success: boolean;
  message: string;
  /** seconds */
  time: number;
  /** What was stored on the channel: response_time in ms (0 after a failure, as one-api), test_time, status. */
  response_time?: number;
  test_time?: number;
  status?: number;
}

export const TEST_TIMEOUT_MS = 60_000;

export function testModelOf(channel: Pick<Channel, "test_model" | "models">, requested?: string): string {
  return (requested ?? "").trim() || (channel.test_model ?? "").trim() || commaList(channel.models)[0] || "gpt-4o-mini";
}

function scrub(text: string, key: string): string {
  let out = text;
  for (const k of key
    .split(/\r?\n/)
    .map((s) => s.trim())
    .filter((s) => s.length >= 6))
    out = out.split(k).join("***");
  return out.length > 500 ? out.slice(0, 500) + "..." : out;
}

export interface TestOptions {
  model?: string;
  /** Part of a full test run: a response slower than ChannelDisableThreshold counts as a failure. */
  full?: boolean;
  /** Half-open probe of an auto-disabled channel: a failure lengthens the wait before the next probe. */
  probe?: boolean;
  /** Cancels the test (shutdown): the upstream call is cut and nothing is recorded; the call throws. */
  cancel?: AbortSignal;
}

export async function testChannel(
  deps: AppDeps,
  channelOrId: Channel | number,
  opts: TestOptions = {},
): Promise<TestResult> {
  const channel = typeof channelOrId === "number" ? await getChannel(deps, channelOrId) : channelOrId;
  const timeout = AbortSignal.timeout(TEST_TIMEOUT_MS);
  const signal = opts.cancel ? AbortSignal.any([timeout, opts.cancel]) : timeout;
  const started = performance.now();
  let outcome: ProbeOutcome;
  try {
    outcome = await probeChannel(deps, channel, testModelOf(channel, opts.model), signal);
  } catch (e) {
    opts.cancel?.throwIfAborted();
    const err = e as Error;
    outcome = {
      ok: false,
      message:
        err.name === "TimeoutError" || timeout.aborted
          ? `no answer within ${TEST_TIMEOUT_MS / 1000} seconds`
          : err.message || "request failed",
      keyIndex: 0,
    };
  }
  const { ok: success, status, code, keyIndex } = outcome;
  let message = outcome.message;
  // A cancelled test says nothing about the channel: no time, no failure towards automatic disabling.
  opts.cancel?.throwIfAborted();
  // At least 1 ms when it worked: 0 means "not tested" to the console.
  const ms = Math.max(success ? 1 : 0, Math.round(performance.now() - started));
  message = scrub(message, channel.key);
  const thresholdMs = deps.options.number("ChannelDisableThreshold", 5) * 1000;
  const slow =
    success && opts.full && thresholdMs > 0 && ms > thresholdMs
      ? `response time ${(ms / 1000).toFixed(2)}s exceeds the threshold of ${thresholdMs / 1000}s`
      : null;
  // As one-api does: a failed test shows as "not tested" (0) instead of a misleading fast time. The reason
  // stays on the channel (other_info.test_error, "" once a test passes) so the list can still show it.
  const testTime = nowSeconds();
  const fresh = await deps.db
    .selectFrom("channels")
    .select("other_info")
    .where("id", "=", channel.id)
    .executeTakeFirst();
  const otherInfo = JSON.stringify({
    ...parseOtherInfo(fresh?.other_info),
    test_error: success ? (slow ?? "") : message,
  });
  await deps.db
    .updateTable("channels")
    .set({ response_time: success ? ms : 0, test_time: testTime, other_info: otherInfo })
    .where("id", "=", channel.id)
    .execute();
  const stored = { response_time: success ? ms : 0, test_time: testTime };
  const statusAfter = (action: HealthAction) =>
    action === "disabled"
      ? CHANNEL_STATUS.autoDisabled
      : action === "enabled"
        ? CHANNEL_STATUS.enabled
        : channel.status;
  if (slow) {
    const action = await recordChannelResult(deps, channel.id, {
      ok: false,
      source: "test",
      message: slow,
      slow: true,
    });
    return { success: false, message: slow, time: ms / 1000, ...stored, status: statusAfter(action) };
  }
  let action: HealthAction;
  if (success) action = await recordChannelResult(deps, channel.id, { ok: true, source: "test", elapsedMs: ms });
  else {
    action = await recordChannelResult(deps, channel.id, {
      ok: false,
      source: "test",
      status,
      message,
      code,
      keyIndex,
    });
    if (opts.probe) await recordProbeFailure(deps, channel.id);
  }
  return { success, message, time: ms / 1000, ...stored, status: statusAfter(action) };
}

// ---- test all ----------------------------------------------------------------------------------------

/** One channel's outcome in a test-all run, as the console patches it into its row. */
export interface ChannelTestOutcome {
  id: number;
  name: string;
  success: boolean;
  message: string;
  /** seconds */
  time: number;
  response_time: number;
  test_time: number;
  status: number;
}

export interface TestAllProgress {
  running: boolean;
  total: number;
  done: number;
  succeeded: number;
  failed: number;
  started_at: number;
  finished_at: number;
  /** In the order the tests finished. */
  results: ChannelTestOutcome[];
}

/** The background job name of "test all channels" (server/jobs/background.ts). */
export const TEST_ALL_JOB = "channel-tests";
const CONCURRENCY = 4;
/** The latest run of each app, kept after it ends so the progress route can show how it went. */
const latest = new WeakMap<AppDeps, TestAllProgress>();

/** The running or latest run; `since` leaves out the results a poller already has. */
export function testAllProgress(deps: AppDeps, since = 0): TestAllProgress | null {
  const p = backgroundRun<TestAllProgress>(deps, TEST_ALL_JOB)?.progress ?? latest.get(deps);
  return p ? { ...p, results: p.results.slice(Math.max(0, since)) } : null;
}

/**
 * Tests every channel that is enabled or auto-disabled (manually disabled ones stay untouched), a few at
 * a time. Stops once `cancel` fires: waiting channels are not tested, in-flight tests are cut and not counted.
 */
export async function testAllChannels(deps: AppDeps, cancel: AbortSignal, progress: TestAllProgress): Promise<void> {
  try {
    const channels = await deps.db
      .selectFrom("channels")
      .selectAll()
      .where("status", "in", [CHANNEL_STATUS.enabled, CHANNEL_STATUS.autoDisabled])
      .orderBy("id")
      .execute();
    progress.total = channels.length;
    let next = 0;
    const worker = async () => {
      while (next < channels.length && !cancel.aborted) {
        const ch = channels[next++];
        try {
          const r = await testChannel(deps, ch, { full: true, cancel });
          if (r.success) progress.succeeded++;
          else progress.failed++;
          progress.results.push({
            id: ch.id,
            name: ch.name,
            success: r.success,
            message: r.message,
            time: r.time,
            response_time: r.response_time ?? 0,
            test_time: r.test_time ?? 0,
            status: r.status ?? ch.status,
          });
        } catch (e) {
          if (cancel.aborted) return;
          progress.failed++;
          const message = (e as Error).message || "test failed";
          progress.results.push({
            id: ch.id,
            name: ch.name,
            success: false,
            message,
            time: 0,
            response_time: ch.response_time,
            test_time: ch.test_time,
            status: ch.status,
          });
          console.error(`channel test of #${ch.id} failed:`, message);
        }
        progress.done++;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  } finally {
    progress.running = false;
    progress.finished_at = nowSeconds();
  }
}

/** Starts "test all channels" in the background (at most one run at a time), or joins the run already going. */
export function startTestAll(deps: AppDeps) {
  const progress: TestAllProgress = {
    running: true,
    total: 0,
    done: 0,
    succeeded: 0,
    failed: 0,
    started_at: nowSeconds(),
    finished_at: 0,
    results: [],
  };
  const run = runInBackground(deps, TEST_ALL_JOB, progress, (cancel, p) => testAllChannels(deps, cancel, p));
  if (run.started) latest.set(deps, progress);
  return run;
}
