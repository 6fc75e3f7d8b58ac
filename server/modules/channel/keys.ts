// Multi-key channels: one channel whose `key` holds several upstream keys, one per line, rotated by the
// relay. The rotation state lives in `channel_info` (JSON) so it survives restarts; the pure functions
// here compute the next key and the next state, the caller decides where to keep that state.
// channel_info is new-api's ChannelInfo object (model/channel.go), written by serializeChannelInfo for every
// channel, single-key ones included, so new-api can load the rows back: is_multi_key, multi_key_size,
// multi_key_status_list (key index → 2 disabled by hand, 3 disabled automatically; absent = enabled),
// multi_key_disabled_reason/_time, multi_key_polling_index, multi_key_mode. multi_key_failed_at is ours
// (a short cooldown after a failure); new-api ignores it.
import type { Channel } from "../../../db/schema.ts";

export type MultiKeyMode = "polling" | "random";

export interface ChannelInfo {
  is_multi_key: boolean;
  multi_key_size: number;
  multi_key_mode: MultiKeyMode;
  /** Index of the key the next polling pick starts from. */
  multi_key_polling_index: number;
  /** new-api's: key index → status (1 enabled, 2 disabled by hand, 3 disabled automatically); absent = enabled. */
  multi_key_status_list: Record<string, number>;
  multi_key_disabled_reason: Record<string, string>;
  multi_key_disabled_time: Record<string, number>;
  /** Key index → unix seconds of its last upstream failure. */
  multi_key_failed_at: Record<string, number>;
}

export const KEY_STATUS = { enabled: 1, manuallyDisabled: 2, autoDisabled: 3 } as const;

/** A key that failed within this many seconds is skipped while another key is available. */
export const KEY_FAILURE_COOLDOWN_SECONDS = 60;

/** Channel types whose key is one JSON document that may span lines (Vertex service accounts). */
export const JSON_KEY_TYPES: ReadonlySet<number> = new Set([41]);

export function splitKeys(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((k) => k.trim())
    .filter(Boolean);
}

const numberMap = (v: unknown): Record<string, number> => {
  const out: Record<string, number> = {};
  if (v && typeof v === "object")
    for (const [k, n] of Object.entries(v)) if (Number.isFinite(Number(n))) out[k] = Number(n);
  return out;
};
const textMap = (v: unknown): Record<string, string> => {
  const out: Record<string, string> = {};
  if (v && typeof v === "object") for (const [k, t] of Object.entries(v)) out[k] = String(t ?? "");
  return out;
};

export function parseChannelInfo(raw: string | ChannelInfo | null | undefined): ChannelInfo {
  let v: any = raw;
  if (typeof raw === "string") {
    try {
      v = raw ? JSON.parse(raw) : {};
    } catch {
      v = {};
    }
  }
  v ??= {};
  return {
    is_multi_key: Boolean(v.is_multi_key),
    multi_key_size: Number.isInteger(v.multi_key_size) ? v.multi_key_size : 0,
    multi_key_mode: v.multi_key_mode === "random" ? "random" : "polling",
    multi_key_polling_index: Number.isInteger(v.multi_key_polling_index) ? v.multi_key_polling_index : 0,
    multi_key_status_list: numberMap(v.multi_key_status_list),
    multi_key_disabled_reason: textMap(v.multi_key_disabled_reason),
    multi_key_disabled_time: numberMap(v.multi_key_disabled_time),
    multi_key_failed_at:
      v.multi_key_failed_at && typeof v.multi_key_failed_at === "object" ? { ...v.multi_key_failed_at } : {},
  };
}

const nonEmpty = <T>(m: Record<string, T>) => (Object.keys(m).length ? m : undefined);

/** The channel_info text to store: new-api's object, field for field (a single-key channel too). */
export function serializeChannelInfo(info: ChannelInfo | null | undefined): string {
  const i = info ?? parseChannelInfo(null);
  return JSON.stringify({
    is_multi_key: i.is_multi_key,
    multi_key_size: i.is_multi_key ? i.multi_key_size : 0,
    multi_key_status_list: nonEmpty(i.multi_key_status_list) ?? null,
    multi_key_disabled_reason: nonEmpty(i.multi_key_disabled_reason),
    multi_key_disabled_time: nonEmpty(i.multi_key_disabled_time),
    multi_key_polling_index: i.multi_key_polling_index,
    multi_key_mode: i.is_multi_key ? i.multi_key_mode : "",
    multi_key_failed_at: nonEmpty(i.multi_key_failed_at),
  });
}

export function multiKeyInfo(size: number, mode: MultiKeyMode): ChannelInfo {
  return {
    is_multi_key: true,
    multi_key_size: size,
    multi_key_mode: mode,
    multi_key_polling_index: 0,
    multi_key_status_list: {},
    multi_key_disabled_reason: {},
    multi_key_disabled_time: {},
    multi_key_failed_at: {},
  };
}

/** Whether key `index` may be used: not disabled (by hand or automatically) in multi_key_status_list. */
export function keyEnabled(info: ChannelInfo, index: number): boolean {
  const st = info.multi_key_status_list[index];
  return st === undefined || st === KEY_STATUS.enabled;
}

export interface KeyPick {
  key: string;
  /** Index of the key in the channel's key list (0 for single-key channels). */
  index: number;
  /** The channel_info to keep for the next pick (unchanged for single-key channels). */
  info: ChannelInfo;
}

/**
 * Chooses the key for the next upstream call. Single-key channels return their key. Multi-key channels
 * rotate (polling: round-robin from multi_key_polling_index; random: uniform), skipping keys that failed
 * within KEY_FAILURE_COOLDOWN_SECONDS; when every key failed recently, the one that failed longest ago
 * is used rather than refusing the call. `random` is injectable for tests.
 */
export function pickChannelKey(
  channel: Pick<Channel, "key"> & { channel_info?: string | ChannelInfo | null },
  now: number,
  random: () => number = Math.random,
): KeyPick {
  const info = parseChannelInfo(channel.channel_info);
  const keys = info.is_multi_key ? splitKeys(channel.key) : [];
  if (!info.is_multi_key || keys.length <= 1)
    return { key: info.is_multi_key ? (keys[0] ?? "") : channel.key.trim(), index: 0, info };
  // Keys disabled in multi_key_status_list are never picked while another key is enabled.
  const usable = keys.some((_, i) => keyEnabled(info, i));
  const allowed = (i: number) => !usable || keyEnabled(info, i);
  const healthy = (i: number) => allowed(i) && now - (info.multi_key_failed_at[i] ?? 0) >= KEY_FAILURE_COOLDOWN_SECONDS;
  let index = -1;
  if (info.multi_key_mode === "random") {
    const candidates = keys.map((_, i) => i).filter(healthy);
    if (candidates.length) index = candidates[Math.floor(random() * candidates.length) % candidates.length];
  } else {
    const start = ((info.multi_key_polling_index % keys.length) + keys.length) % keys.length;
    for (let step = 0; step < keys.length; step++) {
      const i = (start + step) % keys.length;
      if (healthy(i)) {
        index = i;
        break;
      }
    }
  }
  if (index === -1) {
    index = keys.findIndex((_, i) => allowed(i));
    for (let i = index + 1; i < keys.length; i++)
      if (allowed(i) && (info.multi_key_failed_at[i] ?? 0) < (info.multi_key_failed_at[index] ?? 0)) index = i;
  }
  const next: ChannelInfo = {
    ...info,
    multi_key_size: keys.length,
    multi_key_polling_index: (index + 1) % keys.length,
  };
  return { key: keys[index], index, info: next };
}

/** Key `index` of a multi-key channel when it may serve now (enabled, not cooling down after a failure), else
 * null: a conversation pinned to that key (relay/affinity.ts) goes back to it while it can. */
export function usableKeyAt(
  channel: Pick<Channel, "key">,
  info: ChannelInfo,
  index: number,
  now: number,
): string | null {
  if (
    !info.is_multi_key
    || !keyEnabled(info, index)
    || now - (info.multi_key_failed_at[index] ?? 0) < KEY_FAILURE_COOLDOWN_SECONDS
  )
    return null;
  return splitKeys(channel.key)[index] ?? null;
}

/** The channel_info after key `index` failed at `now` (pure; the caller stores it). */
export function markKeyFailed(info: ChannelInfo, index: number, now: number): ChannelInfo {
  return { ...info, multi_key_failed_at: { ...info.multi_key_failed_at, [index]: now } };
}

/** The channel_info with key `index` set to `status` (enabled clears the reason and time; pure). */
export function withKeyStatus(info: ChannelInfo, index: number, status: number, reason = "", now = 0): ChannelInfo {
  const statusList = { ...info.multi_key_status_list };
  const reasons = { ...info.multi_key_disabled_reason };
  const times = { ...info.multi_key_disabled_time };
  if (status === KEY_STATUS.enabled) {
    delete statusList[index];
    delete reasons[index];
    delete times[index];
  } else {
    statusList[index] = status;
    reasons[index] = reason;
    times[index] = now;
  }
  return {
    ...info,
    multi_key_status_list: statusList,
    multi_key_disabled_reason: reasons,
    multi_key_disabled_time: times,
  };
}
