// Upstream account balances, for the provider kinds that expose one. Each reader is a URL plus a parser
// of that provider's answer; the result is stored on the channel (balance, balance_updated_time).
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import { nowSeconds } from "../../../db/index.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import { CHANNEL_STATUS, channelType } from "../../catalogue/index.ts";
import { adaptorFor, baseUrlOf } from "../../relay/providers/index.ts";
import { pickChannelKey } from "./keys.ts";
import { getChannel } from "./service.ts";
import { runInBackground } from "../../jobs/background.ts";

export const BALANCE_TIMEOUT_MS = 15_000;

type Json = any;

interface BalanceReader {
  /** The GET requests to make, in order (OpenAI needs two). */
  urls(base: string): string[];
  parse(answers: Json[]): number;
}

/** base + "/v1/..." unless the base already ends in a version segment. */
function v1(base: string, path: string): string {
  return /\/v\d+$/.test(base) ? base + path : base + "/v1" + path;
}

function num(v: unknown, what: string): number {
  const n = typeof v === "string" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isFinite(n)) throw new Error(`the upstream answer has no ${what}`);
  return n;
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

function isoDate(d: Date) {
  return d.toISOString().slice(0, 10);
}

/** OpenAI-style billing: the subscription's hard limit minus this period's usage (reported in cents). */
const openaiBilling: BalanceReader = {
  urls(base) {
    const now = new Date();
    const start = new Date(now.getTime() - 100 * 86400_000);
    const end = new Date(now.getTime() + 86400_000);
    return [v1(base, "/dashboard/billing/subscription"), v1(base, `/dashboard/billing/usage?start_date=${isoDate(start)}&end_date=${isoDate(end)}`)];
  },
  parse([sub, usage]) {
    return round(num(sub?.hard_limit_usd, "hard_limit_usd") - num(usage?.total_usage, "total_usage") / 100);
  },
};

export const BALANCE_READERS: Record<number, BalanceReader> = {
  1: openaiBilling,
  8: openaiBilling,
  // OpenRouter: purchased credits minus usage, both in dollars.
  20: {
    urls: (base) => [v1(base, "/credits")],
    parse: ([j]) => round(num(j?.data?.total_credits, "total_credits") - num(j?.data?.total_usage, "total_usage")),
  },
  // DeepSeek: one entry per currency; prefer USD, else the first listed.
  43: {
    urls: (base) => [base.replace(/\/v\d+$/, "") + "/user/balance"],
    parse([j]) {
      const infos: Json[] = Array.isArray(j?.balance_infos) ? j.balance_infos : [];
      const info = infos.find((i) => i?.currency === "USD") ?? infos[0];
      if (!info) throw new Error("the upstream answer has no balance_infos");
      return round(num(info.total_balance, "total_balance"));
    },
  },
  // SiliconCloud: /v1/user/info → data.totalBalance (a decimal string).
  40: {
    urls: (base) => [v1(base, "/user/info")],
    parse: ([j]) => round(num(j?.data?.totalBalance ?? j?.data?.balance, "totalBalance")),
  },
  // Moonshot: /v1/users/me/balance → data.available_balance.
  25: {
    urls: (base) => [v1(base, "/users/me/balance")],
    parse: ([j]) => round(num(j?.data?.available_balance, "available_balance")),
  },
};

async function getJson(url: string, key: string, cancel?: AbortSignal): Promise<Json> {
  const timeout = AbortSignal.timeout(BALANCE_TIMEOUT_MS);
  const signal = cancel ? AbortSignal.any([timeout, cancel]) : timeout;
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, accept: "application/json" }, signal });
  const text = await res.text();
  if (!res.ok) {
    let detail = "";
    try {
      const j = JSON.parse(text);
      detail = j?.error?.message ?? j?.message ?? "";
    } catch {}
    throw new Error(`the balance endpoint answered ${res.status}${detail ? `: ${detail}` : ""}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new Error("the balance endpoint did not answer JSON");
  }
}

export function balanceSupported(type: number): boolean {
  return type in BALANCE_READERS || !!adaptorFor(type)?.balance;
}

/** Reads the balance of one channel from its upstream and stores it; returns the balance. */
export async function updateBalance(deps: AppDeps, channelOrId: Channel | number, cancel?: AbortSignal): Promise<number> {
  const ch = typeof channelOrId === "number" ? await getChannel(deps, channelOrId) : channelOrId;
  const reader = BALANCE_READERS[ch.type];
  const adaptor = adaptorFor(ch.type);
  if (!reader && !adaptor?.balance) throw badRequest(`balance query is not supported for this type (${channelType(ch.type)?.name ?? ch.type})`);
  const { key } = pickChannelKey(ch, nowSeconds());
  const base = baseUrlOf(ch);
  let balance: number;
  try {
    if (reader) balance = reader.parse(await Promise.all(reader.urls(base).map((u) => getJson(u, key, cancel))));
    else balance = await adaptor!.balance!(base, key, ch);
  } catch (e) {
    const message = ((e as Error).message || "balance query failed").split(key).join("***");
    throw new AppError(502, `balance query failed: ${message}`);
  }
  // A refresh cancelled by shutdown writes nothing more.
  cancel?.throwIfAborted();
  await deps.db.updateTable("channels").set({ balance, balance_updated_time: nowSeconds() }).where("id", "=", ch.id).execute();
  return balance;
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
}

/** The background job name of "update all balances" (server/jobs/background.ts). */
export const BALANCE_REFRESH_JOB = "channel-balances";

/**
 * Updates every enabled channel whose type has a balance reader, one after another (as one-api does);
 * failures are counted, not thrown. Stops between channels once `cancel` fires.
 */
export async function updateAllBalances(deps: AppDeps, cancel?: AbortSignal, progress = newProgress()): Promise<BalanceRefreshProgress> {
  try {
    const channels = await deps.db.selectFrom("channels").selectAll().where("status", "=", CHANNEL_STATUS.enabled).orderBy("id").execute();
    progress.total = channels.length;
    for (const ch of channels) {
      if (cancel?.aborted) break;
      if (!balanceSupported(ch.type)) progress.skipped++;
      else {
        try {
          await updateBalance(deps, ch, cancel);
          progress.updated++;
        } catch {
          if (cancel?.aborted) break;
          progress.failed++;
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
  return { running: true, total: 0, done: 0, updated: 0, failed: 0, skipped: 0, started_at: nowSeconds(), finished_at: 0 };
}

/** Starts "update all balances" in the background, or joins the run already going. */
export function startBalanceRefresh(deps: AppDeps) {
  return runInBackground(deps, BALANCE_REFRESH_JOB, newProgress(), async (cancel, progress) => {
    await updateAllBalances(deps, cancel, progress);
  });
}
