// Upstream account balances, for the provider kinds that expose one (read through relay/probe.ts); the
// result is stored on the channel (balance, balance_updated_time).
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import { nowSeconds } from "../../../db/index.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import { CHANNEL_STATUS, channelType } from "../../catalogue/index.ts";
import { balanceSupported, readBalance } from "../../relay/probe.ts";

export { balanceSupported };
import { pickChannelKey } from "./keys.ts";
import { getChannel } from "./service.ts";
import { backgroundRun, runInBackground } from "../../jobs/background.ts";

/** Reads the balance of one channel from its upstream and stores it; returns the balance. */
export async function updateBalance(
  deps: AppDeps,
  channelOrId: Channel | number,
  cancel?: AbortSignal,
): Promise<number> {
  const ch = typeof channelOrId === "number" ? await getChannel(deps, channelOrId) : channelOrId;
  if (!balanceSupported(ch.type))
    throw badRequest(`balance query is not supported for this type (${channelType(ch.type)?.name ?? ch.type})`);
  const { key } = pickChannelKey(ch, nowSeconds());
  let balance: number;
  try {
    balance = await readBalance(ch, key, cancel);
  } catch (e) {
    const message = ((e as Error).message || "balance query failed").split(key).join("***");
    throw new AppError(502, `balance query failed: ${message}`);
  }
  // A refresh cancelled by shutdown writes nothing more.
  cancel?.throwIfAborted();
  await deps.db
    .updateTable("channels")
    .set({ balance, balance_updated_time: nowSeconds() })
    .where("id", "=", ch.id)
    .execute();
  return balance;
}

/** One channel's outcome in an update-all run, as the console patches it into its row. */
export interface BalanceOutcome {
  id: number;
  name: string;
  success: boolean;
  /** The type has no balance to read. */
  skipped?: boolean;
  balance?: number;
  balance_updated_time?: number;
  message?: string;
}

export interface BalanceRefreshProgress {
  running: boolean;
  total: number;
  done: number;
  updated: number;
  failed: number;
  skipped: number;
  started_at: number;
  finished_at: number;
  /** In the order the channels were done. */
  results: BalanceOutcome[];
}

/** The background job name of "update all balances" (server/jobs/background.ts). */
export const BALANCE_REFRESH_JOB = "channel-balances";

/**
 * Updates every enabled channel whose type has a balance reader, one after another (as one-api does);
 * failures are counted, not thrown. Stops between channels once `cancel` fires.
 */
export async function updateAllBalances(
  deps: AppDeps,
  cancel?: AbortSignal,
  progress = newProgress(),
): Promise<BalanceRefreshProgress> {
  try {
    const channels = await deps.db
      .selectFrom("channels")
      .selectAll()
      .where("status", "=", CHANNEL_STATUS.enabled)
      .orderBy("id")
      .execute();
    progress.total = channels.length;
    for (const ch of channels) {
      if (cancel?.aborted) break;
      if (!balanceSupported(ch.type)) {
        progress.skipped++;
        progress.results.push({ id: ch.id, name: ch.name, success: false, skipped: true });
      } else {
        try {
          const balance = await updateBalance(deps, ch, cancel);
          progress.updated++;
          progress.results.push({
            id: ch.id,
            name: ch.name,
            success: true,
            balance,
            balance_updated_time: nowSeconds(),
          });
        } catch (e) {
          if (cancel?.aborted) break;
          progress.failed++;
          progress.results.push({
            id: ch.id,
            name: ch.name,
            success: false,
            message: (e as Error).message || "balance query failed",
          });
        }
      }
      progress.done++;
    }
  } finally {
    progress.running = false;
    progress.finished_at = nowSeconds();
  }
  return progress;
}

function newProgress(): BalanceRefreshProgress {
  return {
    running: true,
    total: 0,
    done: 0,
    updated: 0,
    failed: 0,
    skipped: 0,
    started_at: nowSeconds(),
    finished_at: 0,
    results: [],
  };
}

/** The latest run of each app, kept after it ends so the progress route can show how it went. */
const latest = new WeakMap<AppDeps, BalanceRefreshProgress>();

/** Starts "update all balances" in the background, or joins the run already going. */
export function startBalanceRefresh(deps: AppDeps) {
  const run = runInBackground(deps, BALANCE_REFRESH_JOB, newProgress(), async (cancel, progress) => {
    await updateAllBalances(deps, cancel, progress);
  });
  if (run.started) latest.set(deps, run.progress);
  return run;
}

/** The running or latest run; `since` leaves out the results a poller already has. */
export function balanceRefreshProgress(deps: AppDeps, since = 0): BalanceRefreshProgress | null {
  const p = backgroundRun<BalanceRefreshProgress>(deps, BALANCE_REFRESH_JOB)?.progress ?? latest.get(deps);
  return p ? { ...p, results: p.results.slice(Math.max(0, since)) } : null;
}
