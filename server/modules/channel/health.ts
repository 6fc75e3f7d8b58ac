// Channel automation: decide from call and test outcomes whether a channel should be taken out of
// routing (status 3, auto-disabled) or brought back. Unlike one-api, one stray error from live traffic
// does not disable a channel: a disabling failure must repeat FAILURE_THRESHOLD times within
// FAILURE_WINDOW_SECONDS (counted in the shared cache, so several instances agree). A failed test is
// decisive on its own, because a test is already a deliberate probe. Auto-disabled channels come back
// through a half-open probe (server/jobs/channel-probe.ts) or a successful manual test, when
// AutomaticEnableChannelEnabled is on. Manually disabled channels (status 2) are never touched.
import type { AppDeps } from "../../deps.ts";
import { nowSeconds } from "../../../db/index.ts";
import { CHANNEL_STATUS } from "../../catalogue/index.ts";
import { refreshAbilities } from "./abilities.ts";
import { notifyChannelsChanged } from "./events.ts";
import { parseOtherInfo } from "./service.ts";
import {
  KEY_FAILURE_COOLDOWN_SECONDS,
  KEY_STATUS,
  keyEnabled,
  markKeyFailed,
  parseChannelInfo,
  serializeChannelInfo,
  splitKeys,
  withKeyStatus,
} from "./keys.ts";
import { sendToRoot } from "../../infra/notify.ts";
import { statusInList } from "./status-codes.ts";

export const FAILURE_THRESHOLD = 3;
export const FAILURE_WINDOW_SECONDS = 60;

export type OutcomeSource = "relay" | "test";

export type ChannelOutcome =
  | { ok: true; source: OutcomeSource; elapsedMs?: number }
  | {
      ok: false;
      source: OutcomeSource;
      /** Upstream HTTP status, when there was an answer. */
      status?: number;
      /** The upstream's error message (never containing the key). */
      message: string;
      /** The upstream's error code or type (e.g. invalid_api_key, insufficient_quota). */
      code?: string;
      /** A full test took longer than ChannelDisableThreshold seconds. */
      slow?: boolean;
      /** Which key of a multi-key channel was used (KeyPick.index). */
      keyIndex?: number;
    };

/** key-failed: one key of a multi-key channel was set aside; the channel stays while another key is healthy. */
export type HealthAction = "none" | "counted" | "key-failed" | "disabled" | "enabled";

/** How root hears about automation (replaceable, e.g. by tests). */
export type ChannelNotifier = (deps: AppDeps, subject: string, content: string) => Promise<void>;

/** By root's own notification setting (email or webhook); logged when root has no recipient set. */
export const notifyRootOfChannel: ChannelNotifier = async (deps, subject, content) => {
  const outcome = await sendToRoot(deps, { title: subject, content });
  if (outcome !== "sent") console.warn(`[channel automation] ${subject}: ${content} (not delivered: ${outcome})`);
};

let notifier: ChannelNotifier = notifyRootOfChannel;

export function setChannelNotifier(fn: ChannelNotifier): void {
  notifier = fn;
}

const DISABLING_CODES = new Set([
  "invalid_api_key",
  "account_deactivated",
  "insufficient_quota",
  "billing_not_active",
  "billing_hard_limit_reached",
  "authentication_error",
  "permission_error",
  "permission_denied",
  "unauthenticated",
  "access_terminated",
  "organization_deactivated",
]);

const STATUS_WORDS: Record<number, string> = {
  401: "authentication failed",
  402: "payment required",
  403: "permission denied",
};

/**
 * Why this failure should take the channel out of routing, or null when it should not (e.g. 429, 5xx).
 * `statusCodes` is AutomaticDisableStatusCodes (new-api's option, e.g. "401,402,403,500-503").
 */
export function disableReason(outcome: ChannelOutcome, keywordsText: string, statusCodes = "401-403"): string | null {
  if (outcome.ok) return null;
  if (outcome.slow) return outcome.message;
  if (statusInList(statusCodes, outcome.status))
    return `${STATUS_WORDS[outcome.status!] ?? "upstream status"} (${outcome.status}): ${outcome.message}`;
  const code = (outcome.code ?? "").toLowerCase();
  if (code && DISABLING_CODES.has(code)) return `${code}: ${outcome.message}`;
  const text = outcome.message.toLowerCase();
  for (const line of keywordsText.split(/\r?\n/)) {
    const kw = line.trim().toLowerCase();
    if (kw && text.includes(kw)) return `matched keyword "${line.trim()}": ${outcome.message}`;
  }
  return null;
}

const failureKey = (id: number) => `channel-failures:${id}`;

/**
 * Reports one outcome of a channel (from the relay after an upstream call, or from a channel test) and
 * applies the automation rules. Returns what it did. Safe to call without awaiting on the hot path.
 */
export async function recordChannelResult(
  deps: AppDeps,
  channelId: number,
  outcome: ChannelOutcome,
): Promise<HealthAction> {
  const ch = await deps.db
    .selectFrom("channels")
    .select(["id", "name", "status", "auto_ban", "other_info", "key", "channel_info"])
    .where("id", "=", channelId)
    .executeTakeFirst();
  if (!ch) return "none";
  if (outcome.ok) {
    if (outcome.source === "relay") return "none";
    await deps.cache.del(failureKey(channelId));
    if (ch.status !== CHANNEL_STATUS.autoDisabled || !deps.options.bool("AutomaticEnableChannelEnabled")) return "none";
    const enabled = await setStatus(deps, ch.id, CHANNEL_STATUS.autoDisabled, CHANNEL_STATUS.enabled, {
      ...parseOtherInfo(ch.other_info),
      status_reason: "",
      status_time: nowSeconds(),
      probe_failures: 0,
      auto_disabled: false,
    });
    if (enabled)
      await notify(
        deps,
        `Channel "${ch.name}" (#${ch.id}) has been enabled`,
        `Channel "${ch.name}" (#${ch.id}) passed a test and was enabled again automatically.`,
      );
    return enabled ? "enabled" : "none";
  }
  if (
    !deps.options.bool("AutomaticDisableChannelEnabled")
    || Number(ch.auto_ban) !== 1
    || ch.status !== CHANNEL_STATUS.enabled
  )
    return "none";
  const reason = disableReason(
    outcome,
    deps.options.get("AutomaticDisableKeywords"),
    deps.options.get("AutomaticDisableStatusCodes"),
  );
  if (!reason) return "none";
  if (outcome.keyIndex !== undefined && (await setKeyAside(deps, ch, outcome.keyIndex, reason))) return "key-failed";
  if (outcome.source === "relay") {
    const count = await deps.cache.incr(failureKey(channelId), FAILURE_WINDOW_SECONDS);
    if (count < FAILURE_THRESHOLD) return "counted";
  }
  await deps.cache.del(failureKey(channelId));
  const disabled = await setStatus(deps, ch.id, CHANNEL_STATUS.enabled, CHANNEL_STATUS.autoDisabled, {
    ...parseOtherInfo(ch.other_info),
    status_reason: reason,
    status_time: nowSeconds(),
    probe_failures: 0,
    auto_disabled: true,
  });
  if (disabled)
    await notify(
      deps,
      `Channel "${ch.name}" (#${ch.id}) has been disabled`,
      `Channel "${ch.name}" (#${ch.id}) was disabled automatically. Reason: ${reason}`,
    );
  return disabled ? "disabled" : "none";
}

/**
 * Takes one key of a multi-key channel out of rotation, as new-api does: the key is auto-disabled (status 3
 * in multi_key_status_list, with the reason and time the console shows) and its failure time recorded, in
 * channel_info so every instance skips it. True while another key is still enabled and not cooling down,
 * in which case the channel itself stays enabled.
 */
async function setKeyAside(
  deps: AppDeps,
  ch: { id: number; key: string; channel_info: string },
  keyIndex: number,
  reason: string,
): Promise<boolean> {
  const info = parseChannelInfo(ch.channel_info);
  const keys = splitKeys(ch.key);
  if (!info.is_multi_key || keys.length <= 1 || keyIndex < 0 || keyIndex >= keys.length) return false;
  const now = nowSeconds();
  const next = withKeyStatus(markKeyFailed(info, keyIndex, now), keyIndex, KEY_STATUS.autoDisabled, reason, now);
  await deps.db
    .updateTable("channels")
    .set({ channel_info: serializeChannelInfo(next) })
    .where("id", "=", ch.id)
    .execute();
  await notifyChannelsChanged(deps);
  return keys.some(
    (_, i) => keyEnabled(next, i) && now - (next.multi_key_failed_at[i] ?? 0) >= KEY_FAILURE_COOLDOWN_SECONDS,
  );
}

/** Moves the channel from one status to another only if it is still in `from` (so two reporters never race). */
async function setStatus(
  deps: AppDeps,
  id: number,
  from: number,
  to: number,
  otherInfo: Record<string, unknown>,
): Promise<boolean> {
  const changed = await deps.db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable("channels")
      .set({ status: to, other_info: JSON.stringify(otherInfo) })
      .where("id", "=", id)
      .where("status", "=", from)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await refreshAbilities(trx, [id]);
    return true;
  });
  if (changed) await notifyChannelsChanged(deps);
  return changed;
}

async function notify(deps: AppDeps, subject: string, content: string) {
  try {
    await notifier(deps, subject, content);
  } catch (e) {
    console.error("channel notification failed:", (e as Error).message);
  }
}

/** Seconds to wait before the next half-open probe of an auto-disabled channel: 1, 2, 4 ... 30 minutes. */
export function probeDelaySeconds(probeFailures: number): number {
  return Math.min(60 * 2 ** Math.max(0, probeFailures), 30 * 60);
}

/** Records a failed half-open probe so the next one waits longer. */
export async function recordProbeFailure(deps: AppDeps, channelId: number): Promise<void> {
  const ch = await deps.db
    .selectFrom("channels")
    .select(["other_info", "status"])
    .where("id", "=", channelId)
    .executeTakeFirst();
  if (!ch || ch.status !== CHANNEL_STATUS.autoDisabled) return;
  const info = parseOtherInfo(ch.other_info);
  await deps.db
    .updateTable("channels")
    .set({
      other_info: JSON.stringify({
        ...info,
        probe_failures: Number(info.probe_failures ?? 0) + 1,
        probe_time: nowSeconds(),
      }),
    })
    .where("id", "=", channelId)
    .where("status", "=", CHANNEL_STATUS.autoDisabled)
    .execute();
}
