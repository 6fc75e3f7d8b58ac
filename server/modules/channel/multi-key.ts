// POST /api/channel/multi_key/manage (new-api's route and shapes): list a multi-key channel's keys with their
// states, disable or enable one or all, delete one or the automatically disabled ones. States live in
// channel_info.multi_key_status_list (keys.ts), so new-api reads them back; the relay skips disabled keys. When no
// key is left enabled the channel itself is disabled (2 when every key was disabled by hand, else 3), and it is
// enabled again when a key comes back, if that was why it went.
import type { AppDeps } from "../../deps.ts";
import type { Channel } from "../../../db/schema.ts";
import { nowSeconds } from "../../../db/index.ts";
import { badRequest } from "../../http/errors.ts";
import { CHANNEL_STATUS } from "../../catalogue/index.ts";
import { KEY_STATUS, keyEnabled, parseChannelInfo, serializeChannelInfo, splitKeys, type ChannelInfo } from "./keys.ts";
import { getChannel, parseOtherInfo } from "./service.ts";
import { refreshAbilities } from "./abilities.ts";
import { notifyChannelsChanged } from "./events.ts";

export const NO_KEYS_REASON = "all keys of this multi-key channel are disabled";

export interface MultiKeyRequest {
  channel_id?: number;
  action?: string;
  key_index?: number;
  page?: number;
  page_size?: number;
  status?: number;
}

const preview = (key: string) => (key.length > 10 ? `${key.slice(0, 10)}...` : key);
const statusOf = (info: ChannelInfo, i: number) =>
  keyEnabled(info, i) ? KEY_STATUS.enabled : info.multi_key_status_list[i]!;

function keyStates(ch: Channel, info: ChannelInfo) {
  return splitKeys(ch.key).map((key, index) => {
    const status = statusOf(info, index);
    const disabled = status !== KEY_STATUS.enabled;
    return {
      index,
      status,
      key_preview: preview(key),
      ...(disabled && info.multi_key_disabled_time[index]
        ? { disabled_time: info.multi_key_disabled_time[index] }
        : {}),
      ...(disabled && info.multi_key_disabled_reason[index] ? { reason: info.multi_key_disabled_reason[index] } : {}),
    };
  });
}

function keyStatusPage(ch: Channel, info: ChannelInfo, req: MultiKeyRequest) {
  const all = keyStates(ch, info);
  const filtered = req.status === undefined || req.status === null ? all : all.filter((k) => k.status === req.status);
  const pageSize = Number.isInteger(req.page_size) && req.page_size! > 0 ? Math.min(req.page_size!, 500) : 50;
  const totalPages = Math.max(1, Math.ceil(filtered.length / pageSize));
  const page = Math.min(Number.isInteger(req.page) && req.page! > 0 ? req.page! : 1, totalPages);
  const count = (s: number) => all.filter((k) => k.status === s).length;
  return {
    keys: filtered.slice((page - 1) * pageSize, page * pageSize),
    total: filtered.length,
    page,
    page_size: pageSize,
    total_pages: totalPages,
    enabled_count: count(KEY_STATUS.enabled),
    manual_disabled_count: count(KEY_STATUS.manuallyDisabled),
    auto_disabled_count: count(KEY_STATUS.autoDisabled),
  };
}

/** Keys and their states after removing the indexes in `drop` (states move with their keys). */
function withoutKeys(
  keys: string[],
  info: ChannelInfo,
  drop: (i: number) => boolean,
): { keys: string[]; info: ChannelInfo } {
  const next: ChannelInfo = {
    ...info,
    multi_key_status_list: {},
    multi_key_disabled_reason: {},
    multi_key_disabled_time: {},
    multi_key_failed_at: {},
    multi_key_polling_index: 0,
  };
  const kept: string[] = [];
  keys.forEach((key, i) => {
    if (drop(i)) return;
    const j = kept.length;
    kept.push(key);
    if (!keyEnabled(info, i)) next.multi_key_status_list[j] = info.multi_key_status_list[i]!;
    if (info.multi_key_disabled_reason[i] !== undefined)
      next.multi_key_disabled_reason[j] = info.multi_key_disabled_reason[i]!;
    if (info.multi_key_disabled_time[i] !== undefined)
      next.multi_key_disabled_time[j] = info.multi_key_disabled_time[i]!;
  });
  return { keys: kept, info: { ...next, multi_key_size: kept.length } };
}

/** Writes key list and states, and the channel's own status where the keys decide it; then routing reloads. */
async function save(deps: AppDeps, ch: Channel, keys: string[], info: ChannelInfo): Promise<void> {
  const anyEnabled = keys.some((_, i) => keyEnabled(info, i));
  const other = parseOtherInfo(ch.other_info);
  let status = ch.status;
  if (!anyEnabled && ch.status === CHANNEL_STATUS.enabled) {
    const allByHand = keys.every((_, i) => info.multi_key_status_list[i] === KEY_STATUS.manuallyDisabled);
    status = allByHand ? CHANNEL_STATUS.manuallyDisabled : CHANNEL_STATUS.autoDisabled;
    Object.assign(other, { status_reason: NO_KEYS_REASON, status_time: nowSeconds() });
  } else if (anyEnabled && ch.status !== CHANNEL_STATUS.enabled && other.status_reason === NO_KEYS_REASON) {
    status = CHANNEL_STATUS.enabled;
    Object.assign(other, { status_reason: "", status_time: nowSeconds() });
  }
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .updateTable("channels")
      .set({
        key: keys.join("\n"),
        channel_info: serializeChannelInfo(info),
        status,
        other_info: JSON.stringify(other),
      })
      .where("id", "=", ch.id)
      .execute();
    if (status !== ch.status) await refreshAbilities(trx, [ch.id]);
  });
  await notifyChannelsChanged(deps);
}

export async function manageMultiKeys(
  deps: AppDeps,
  req: MultiKeyRequest,
): Promise<{ message: string; data?: unknown }> {
  if (!Number.isInteger(req.channel_id)) throw badRequest("channel_id is required");
  const ch = await getChannel(deps, req.channel_id!);
  const info = parseChannelInfo(ch.channel_info);
  if (!info.is_multi_key) throw badRequest("this channel is not in multi-key mode");
  const keys = splitKeys(ch.key);
  const index = () => {
    const i = req.key_index;
    if (!Number.isInteger(i) || i! < 0 || i! >= keys.length) throw badRequest("key_index is out of range");
    return i!;
  };
  const setStatus = (i: number, status: number | null, reason = "") => {
    if (status === null) {
      delete info.multi_key_status_list[i];
      delete info.multi_key_disabled_reason[i];
      delete info.multi_key_disabled_time[i];
      delete info.multi_key_failed_at[i];
    } else {
      info.multi_key_status_list[i] = status;
      info.multi_key_disabled_time[i] = nowSeconds();
      if (reason) info.multi_key_disabled_reason[i] = reason;
    }
  };
  switch (req.action) {
    case "get_key_status":
      return { message: "", data: keyStatusPage(ch, info, req) };
    case "disable_key":
      setStatus(index(), KEY_STATUS.manuallyDisabled, "disabled by hand");
      await save(deps, ch, keys, info);
      return { message: "key disabled" };
    case "enable_key":
      setStatus(index(), null);
      await save(deps, ch, keys, info);
      return { message: "key enabled" };
    case "enable_all_keys": {
      const n = keys.filter((_, i) => !keyEnabled(info, i)).length;
      keys.forEach((_, i) => setStatus(i, null));
      await save(deps, ch, keys, info);
      return { message: `${n} keys enabled` };
    }
    case "disable_all_keys": {
      const targets = keys.map((_, i) => i).filter((i) => keyEnabled(info, i));
      if (!targets.length) throw badRequest("no enabled key to disable");
      for (const i of targets) setStatus(i, KEY_STATUS.manuallyDisabled, "disabled by hand");
      await save(deps, ch, keys, info);
      return { message: `${targets.length} keys disabled` };
    }
    case "delete_key": {
      const i = index();
      if (keys.length === 1) throw badRequest("the last key cannot be deleted");
      const next = withoutKeys(keys, info, (k) => k === i);
      await save(deps, ch, next.keys, next.info);
      return { message: "key deleted" };
    }
    case "delete_disabled_keys": {
      const auto = (i: number) => info.multi_key_status_list[i] === KEY_STATUS.autoDisabled;
      const n = keys.filter((_, i) => auto(i)).length;
      if (!n) throw badRequest("no automatically disabled key to delete");
      if (n === keys.length) throw badRequest("every key is disabled: at least one must stay");
      const next = withoutKeys(keys, info, auto);
      await save(deps, ch, next.keys, next.info);
      return { message: `${n} automatically disabled keys deleted`, data: n };
    }
    default:
      throw badRequest(
        "unknown action: use get_key_status, disable_key, enable_key, enable_all_keys, disable_all_keys, delete_key or delete_disabled_keys",
      );
  }
}

/** GET /api/channel/tag/models?tag= (new-api): the models of the tag's channel that lists the most, for the tag editor. */
export async function tagModels(deps: AppDeps, tag: string | undefined): Promise<string> {
  if (!tag) throw badRequest("tag is required");
  const rows = await deps.db.selectFrom("channels").select("models").where("tag", "=", tag).execute();
  return rows.map((r) => String(r.models ?? "")).reduce((best, m) => (m.length > best.length ? m : best), "");
}
