// Channel administration: create (single, batch, multi-key), list/search (optionally grouped by tag),
// update (full or partial), delete, tags, ability repair. Every change rewrites the changed channels'
// abilities in the same transaction and then tells the relay (notifyChannelsChanged).
import type { Insertable, Kysely } from "kysely";
import type { Channel, ChannelsTable, DB } from "../../../db/schema.ts";
import type { AppDeps } from "../../deps.ts";
import { dialectOf, nowSeconds } from "../../../db/index.ts";
import { badRequest, notFound } from "../../http/errors.ts";
import { CHANNEL_STATUS, DEFAULT_GROUP, channelType } from "../../catalogue/index.ts";
import { commaList, rebuildAllAbilities, refreshAbilities } from "./abilities.ts";
import { notifyChannelsChanged } from "./events.ts";
import {
  JSON_KEY_TYPES,
  multiKeyInfo,
  parseChannelInfo,
  serializeChannelInfo,
  splitKeys,
  type MultiKeyMode,
} from "./keys.ts";

export const MSG = {
  nameKeyRequired: "please fill in channel name and key",
  modelRequired: "select at least one model",
  badMapping: "model mapping must be valid JSON",
  badStatusCodeMapping: "status code mapping must be valid JSON",
  badSetting: "setting must be valid JSON",
  badParamOverride: "param override must be valid JSON",
  badPriority: "priority must be an integer",
  badWeight: "weight must be a non-negative integer",
  badStatus: "status must be 1 (enabled) or 2 (disabled)",
  badBaseUrl: "base URL must start with http:// or https://",
  badMode: "mode must be single, batch or multi_to_single",
  badMultiKeyMode: "multi_key_mode must be polling or random",
  badMaxInput: "max_input_tokens must be a non-negative integer",
  notFound: "channel not found, refresh and retry",
  noIdsDelete: "select channels to delete first",
  noIdsTag: "select channels to tag first",
  emptyTag: "tag cannot be empty",
  noChanges: "no changes",
  tagNotFound: "no channel has this tag",
} as const;

/** Fields an admin may send; numbers may arrive as numeric strings from the form. */
export interface ChannelInput {
  id?: number;
  type?: unknown;
  key?: string;
  name?: string;
  openai_organization?: string | null;
  test_model?: string | null;
  status?: unknown;
  weight?: unknown;
  priority?: unknown;
  base_url?: string | null;
  other?: string | null;
  models?: string | string[];
  group?: string | string[];
  model_mapping?: string | null;
  status_code_mapping?: string | null;
  auto_ban?: unknown;
  tag?: string | null;
  setting?: string | null;
  param_override?: string | null;
  max_input_tokens?: unknown;
  /** Create only: single (default for one key), batch (one channel per key line), multi_to_single. */
  mode?: string;
  multi_key_mode?: string;
  /** Update of a multi-key channel: replace (default) or append the given keys. */
  key_mode?: string;
}

type Db = Kysely<DB>;

// ---- views -------------------------------------------------------------------------------------------

/**
 * The channel as sent to the console, never with its key: lists leave the field out, the single read (the
 * edit form, `blankKey`) sends it empty as new-api does. The key itself is read only through
 * POST /api/channel/{id}/key (key-view.ts).
 */
export function channelView(ch: Channel, blankKey = false) {
  const { key, channel_info, ...rest } = ch;
  const info = parseChannelInfo(channel_info);
  const view: Record<string, unknown> = {
    ...rest,
    other_info: ch.other_info ?? "",
    channel_info: info,
    key_count: info.is_multi_key ? splitKeys(key).length : key ? 1 : 0,
  };
  if (blankKey) view.key = "";
  return view;
}

// ---- validation --------------------------------------------------------------------------------------

function int(v: unknown, msg: string): number | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  const n = typeof v === "string" ? Number(v.trim()) : v;
  if (typeof n !== "number" || !Number.isInteger(n)) throw badRequest(msg);
  return n;
}

function jsonObjectText(v: string | null | undefined, msg: string): string | null | undefined {
  if (v === undefined) return undefined;
  const text = (v ?? "").trim();
  if (!text) return "";
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest(msg);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw badRequest(msg);
  return text;
}

function listText(v: string | string[] | undefined): string | undefined {
  if (v === undefined) return undefined;
  return commaList(Array.isArray(v) ? v.join(",") : v).join(",");
}

/** Validates what the input sets and returns the column values; `creating` applies create defaults. */
function channelPatch(input: ChannelInput, creating: boolean): Partial<Insertable<ChannelsTable>> {
  const p: Partial<Insertable<ChannelsTable>> = {};
  if (input.name !== undefined) p.name = String(input.name ?? "").trim();
  const type = int(input.type, "type must be an integer");
  if (type !== undefined) {
    if (!channelType(type)) throw badRequest(`unknown channel type ${type}`);
    p.type = type;
  }
  const models = listText(input.models);
  if (models !== undefined) {
    if (!models) throw badRequest(MSG.modelRequired);
    p.models = models;
  }
  const group = listText(input.group);
  if (group !== undefined) p.group = group || DEFAULT_GROUP;
  const mapping = jsonObjectText(input.model_mapping, MSG.badMapping);
  if (mapping !== undefined) p.model_mapping = mapping;
  const scm = jsonObjectText(input.status_code_mapping, MSG.badStatusCodeMapping);
  if (scm !== undefined) p.status_code_mapping = scm ?? "";
  const setting = jsonObjectText(input.setting, MSG.badSetting);
  if (setting !== undefined) p.setting = setting;
  const override = jsonObjectText(input.param_override, MSG.badParamOverride);
  if (override !== undefined) p.param_override = override;
  const priority = int(input.priority, MSG.badPriority);
  if (priority !== undefined) p.priority = priority;
  const weight = int(input.weight, MSG.badWeight);
  if (weight !== undefined) {
    if (weight < 0) throw badRequest(MSG.badWeight);
    p.weight = weight;
  }
  const status = int(input.status, MSG.badStatus);
  if (status !== undefined) {
    if (status !== CHANNEL_STATUS.enabled && status !== CHANNEL_STATUS.manuallyDisabled)
      throw badRequest(MSG.badStatus);
    p.status = status;
  }
  if (input.auto_ban !== undefined && input.auto_ban !== null)
    p.auto_ban = input.auto_ban === true || Number(input.auto_ban) === 1 ? 1 : 0;
  const maxInput = int(input.max_input_tokens, MSG.badMaxInput);
  if (maxInput !== undefined) {
    if (maxInput < 0) throw badRequest(MSG.badMaxInput);
    p.max_input_tokens = maxInput;
  }
  if (input.base_url !== undefined) {
    const url = String(input.base_url ?? "")
      .trim()
      .replace(/\/+$/, "");
    if (url && !/^https?:\/\/[^\s]+$/i.test(url)) throw badRequest(MSG.badBaseUrl);
    p.base_url = url;
  }
  if (input.other !== undefined) p.other = String(input.other ?? "").trim();
  if (input.openai_organization !== undefined) p.openai_organization = (input.openai_organization ?? "").trim() || null;
  if (input.test_model !== undefined) p.test_model = (input.test_model ?? "").trim() || null;
  if (input.tag !== undefined) p.tag = (input.tag ?? "").trim() || null;
  if (creating) {
    if (!p.name || !(input.key ?? "").trim()) throw badRequest(MSG.nameKeyRequired);
    if (!p.models) throw badRequest(MSG.modelRequired);
  } else if (input.name !== undefined && !p.name) {
    throw badRequest(MSG.nameKeyRequired);
  }
  return p;
}

/** Type 18 (iFlytek Spark) keeps its API version in `other`; an empty one means v2.1. */
function applyTypeDefaults(p: Partial<Insertable<ChannelsTable>>, currentOther?: string) {
  if (p.type === 18 && !(p.other ?? currentOther ?? "")) p.other = "v2.1";
}

// ---- create ------------------------------------------------------------------------------------------

export async function insertChannel(db: Db, row: Insertable<ChannelsTable>): Promise<number> {
  if (dialectOf(db) === "postgres")
    return (await db.insertInto("channels").values(row).returning("id").executeTakeFirstOrThrow()).id;
  const res = await db.insertInto("channels").values(row).executeTakeFirstOrThrow();
  return Number(res.insertId);
}

export async function createChannels(deps: AppDeps, input: ChannelInput): Promise<{ ids: number[] }> {
  const patch = channelPatch(input, true);
  const type = patch.type ?? 1;
  const keys = JSON_KEY_TYPES.has(type) ? [(input.key ?? "").trim()] : splitKeys(input.key ?? "");
  const mode = input.mode ?? (keys.length > 1 ? "batch" : "single");
  if (!["single", "batch", "multi_to_single"].includes(mode)) throw badRequest(MSG.badMode);
  const multiMode = (input.multi_key_mode ?? "polling") as MultiKeyMode;
  if (multiMode !== "polling" && multiMode !== "random") throw badRequest(MSG.badMultiKeyMode);
  const base: Insertable<ChannelsTable> = {
    type,
    key: "",
    name: patch.name!,
    status: patch.status ?? CHANNEL_STATUS.enabled,
    weight: patch.weight ?? 0,
    priority: patch.priority ?? 0,
    created_time: nowSeconds(),
    test_time: 0,
    response_time: 0,
    base_url: patch.base_url ?? "",
    other: patch.other ?? "",
    balance: 0,
    balance_updated_time: 0,
    models: patch.models!,
    group: patch.group ?? DEFAULT_GROUP,
    used_quota: 0,
    model_mapping: patch.model_mapping ?? "",
    status_code_mapping: patch.status_code_mapping ?? "",
    auto_ban: patch.auto_ban ?? 1,
    other_info: "",
    tag: patch.tag ?? null,
    setting: patch.setting ?? "",
    param_override: patch.param_override ?? "",
    channel_info: serializeChannelInfo(null),
    max_input_tokens: patch.max_input_tokens ?? 0,
    openai_organization: patch.openai_organization ?? null,
    test_model: patch.test_model ?? null,
  };
  applyTypeDefaults(base);
  let rows: Insertable<ChannelsTable>[];
  if (mode === "batch") rows = keys.map((key) => ({ ...base, key }));
  else if (mode === "multi_to_single" && keys.length > 1)
    rows = [
      { ...base, key: keys.join("\n"), channel_info: serializeChannelInfo(multiKeyInfo(keys.length, multiMode)) },
    ];
  else rows = [{ ...base, key: mode === "multi_to_single" ? keys.join("\n") : (input.key ?? "").trim() }];
  const ids = await deps.db.transaction().execute(async (trx) => {
    const made: number[] = [];
    for (const row of rows) made.push(await insertChannel(trx, row));
    await refreshAbilities(trx, made);
    return made;
  });
  await notifyChannelsChanged(deps);
  return { ids };
}

// ---- read --------------------------------------------------------------------------------------------

export async function getChannel(deps: AppDeps, id: number): Promise<Channel> {
  const ch = await deps.db.selectFrom("channels").selectAll().where("id", "=", id).executeTakeFirst();
  if (!ch) throw notFound(MSG.notFound);
  return ch;
}

export interface ChannelListQuery {
  page: number;
  size: number;
  offset: number;
  idSort?: boolean;
  tagMode?: boolean;
  keyword?: string;
  group?: string;
  model?: string;
  status?: number;
  type?: number;
}

/** `column` holds a comma list: match one whole element. */
function commaContains(eb: any, column: string, value: string) {
  return eb.or([
    eb(column, "=", value),
    eb(column, "like", `${value},%`),
    eb(column, "like", `%,${value}`),
    eb(column, "like", `%,${value},%`),
  ]);
}

export async function listChannels(deps: AppDeps, q: ChannelListQuery) {
  let base = deps.db.selectFrom("channels");
  const kw = q.keyword?.trim();
  if (kw) {
    const like = `%${kw}%`;
    // Never the key: a search must not reveal which channel holds a given secret.
    base = base.where((eb) => {
      const ors = [
        eb("name", "like", like),
        eb("base_url", "like", like),
        eb("tag", "like", like),
        eb("models", "like", like),
      ];
      if (/^\d+$/.test(kw)) ors.push(eb("id", "=", Number(kw)));
      return eb.or(ors);
    });
  }
  if (q.group?.trim()) base = base.where((eb) => commaContains(eb, "group", q.group!.trim()));
  if (q.model?.trim()) base = base.where((eb) => commaContains(eb, "models", q.model!.trim()));
  if (q.status !== undefined) base = base.where("status", "=", q.status);
  if (q.type !== undefined) base = base.where("type", "=", q.type);
  const ordered = (qb: typeof base) => {
    const s = qb.selectAll();
    return q.idSort ? s.orderBy("id", "desc") : s.orderBy("priority", "desc").orderBy("id", "desc");
  };
  if (!q.tagMode) {
    const [{ n }] = await base.select((eb) => eb.fn.countAll<number>().as("n")).execute();
    const rows = await ordered(base).limit(q.size).offset(q.offset).execute();
    return { items: rows.map((r) => channelView(r)), page: q.page, page_size: q.size, total: Number(n) };
  }
  const entries = tagEntries(await ordered(base).execute());
  return { items: entries.slice(q.offset, q.offset + q.size), page: q.page, page_size: q.size, total: entries.length };
}

/** Tag mode: channels sharing a tag collapse into one aggregate row (children inside); untagged ones stay. */
export function tagEntries(rows: Channel[]) {
  const out: Record<string, unknown>[] = [];
  const byTag = new Map<string, Channel[]>();
  for (const r of rows) {
    if (!r.tag) {
      out.push(channelView(r));
      continue;
    }
    let members = byTag.get(r.tag);
    if (!members) {
      members = [];
      byTag.set(r.tag, members);
      out.push({ tag: r.tag }); // placeholder keeps the position of the tag's first channel
    }
    members.push(r);
  }
  return out.map((e) => {
    if (!("tag" in e) || "id" in e) return e;
    const members = byTag.get(e.tag as string)!;
    const tested = members.filter((m) => m.response_time > 0);
    const enabled = members.filter((m) => m.status === CHANNEL_STATUS.enabled).length;
    return {
      is_tag: true,
      tag: e.tag,
      name: e.tag,
      type: members[0].type,
      channel_count: members.length,
      enabled_count: enabled,
      status: enabled > 0 ? CHANNEL_STATUS.enabled : CHANNEL_STATUS.manuallyDisabled,
      group: commaList(members.map((m) => m.group).join(",")).join(","),
      models: commaList(members.map((m) => m.models).join(",")).join(","),
      priority: Math.max(...members.map((m) => m.priority)),
      weight: members[0].weight,
      used_quota: members.reduce((s, m) => s + Number(m.used_quota), 0),
      balance: members.reduce((s, m) => s + Number(m.balance), 0),
      response_time: tested.length ? Math.round(tested.reduce((s, m) => s + m.response_time, 0) / tested.length) : 0,
      children: members.map((m) => channelView(m)),
    };
  });
}

// ---- update ------------------------------------------------------------------------------------------

export async function updateChannel(deps: AppDeps, input: ChannelInput) {
  if (!input.id) throw badRequest("id is required");
  const current = await getChannel(deps, input.id);
  const patch = channelPatch(input, false);
  if (patch.type !== undefined) applyTypeDefaults(patch, patch.other ?? current.other);
  const newKey = (input.key ?? "").trim();
  if (newKey) {
    const info = parseChannelInfo(current.channel_info);
    if (info.is_multi_key) {
      const keys =
        input.key_mode === "append"
          ? [...new Set([...splitKeys(current.key), ...splitKeys(newKey)])]
          : splitKeys(newKey);
      patch.key = keys.join("\n");
      // Appended keys keep the indexes of the ones before them (and their disabled states); a new key list starts over.
      const kept =
        input.key_mode === "append"
          ? info
          : { ...info, multi_key_status_list: {}, multi_key_disabled_reason: {}, multi_key_disabled_time: {} };
      patch.channel_info = serializeChannelInfo({
        ...kept,
        multi_key_size: keys.length,
        multi_key_polling_index: 0,
        multi_key_failed_at: {},
      });
    } else {
      patch.key = newKey;
    }
  }
  // A multi-key channel's rotation mode (new-api's console sends it with the channel).
  if (input.multi_key_mode !== undefined && input.multi_key_mode !== "") {
    const info = parseChannelInfo(patch.channel_info ?? current.channel_info);
    if (info.is_multi_key) {
      if (input.multi_key_mode !== "polling" && input.multi_key_mode !== "random")
        throw badRequest(MSG.badMultiKeyMode);
      patch.channel_info = serializeChannelInfo({
        ...info,
        multi_key_mode: input.multi_key_mode,
        multi_key_polling_index: 0,
      });
    }
  }
  // Turning a channel back on by hand clears the automation's verdict.
  if (patch.status === CHANNEL_STATUS.enabled && current.status !== CHANNEL_STATUS.enabled) {
    patch.other_info = JSON.stringify({
      ...parseOtherInfo(current.other_info),
      status_reason: "",
      status_time: nowSeconds(),
      probe_failures: 0,
    });
  }
  if (Object.keys(patch).length) {
    await deps.db.transaction().execute(async (trx) => {
      await trx.updateTable("channels").set(patch).where("id", "=", current.id).execute();
      await refreshAbilities(trx, [current.id]);
    });
    await notifyChannelsChanged(deps);
  }
  return channelView(await getChannel(deps, current.id));
}

export function parseOtherInfo(raw: string | null | undefined): Record<string, any> {
  try {
    const v = raw ? JSON.parse(raw) : {};
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

// ---- delete ------------------------------------------------------------------------------------------

async function deleteWhere(deps: AppDeps, ids: number[]): Promise<number> {
  if (!ids.length) return 0;
  const n = await deps.db.transaction().execute(async (trx) => {
    let count = 0;
    for (let i = 0; i < ids.length; i += 500) {
      const slice = ids.slice(i, i + 500);
      await trx.deleteFrom("abilities").where("channel_id", "in", slice).execute();
      const r = await trx.deleteFrom("channels").where("id", "in", slice).executeTakeFirst();
      count += Number(r.numDeletedRows);
    }
    return count;
  });
  await notifyChannelsChanged(deps);
  return n;
}

export async function deleteChannel(deps: AppDeps, id: number): Promise<void> {
  if ((await deleteWhere(deps, [id])) === 0) throw notFound(MSG.notFound);
}

export async function deleteDisabled(deps: AppDeps): Promise<number> {
  const rows = await deps.db
    .selectFrom("channels")
    .select("id")
    .where("status", "in", [CHANNEL_STATUS.manuallyDisabled, CHANNEL_STATUS.autoDisabled])
    .execute();
  return deleteWhere(
    deps,
    rows.map((r) => r.id),
  );
}

function cleanIds(ids: unknown, emptyMessage: string): number[] {
  if (!Array.isArray(ids) || ids.length === 0) throw badRequest(emptyMessage);
  const out = [...new Set(ids.map(Number))];
  if (out.some((n) => !Number.isInteger(n) || n < 1)) throw badRequest("ids must be positive integers");
  return out;
}

export async function batchDelete(deps: AppDeps, ids: unknown): Promise<number> {
  return deleteWhere(deps, cleanIds(ids, MSG.noIdsDelete));
}

// ---- tags --------------------------------------------------------------------------------------------

/** Sets (or with null clears) the tag of the given channels; returns how many changed. */
export async function batchSetTag(deps: AppDeps, ids: unknown, tag: string | null | undefined): Promise<number> {
  const list = cleanIds(ids, MSG.noIdsTag);
  if (tag !== null && (tag ?? "").trim() === "") throw badRequest(MSG.emptyTag);
  const value = tag === null ? null : tag!.trim();
  const n = await deps.db.transaction().execute(async (trx) => {
    const r = await trx.updateTable("channels").set({ tag: value }).where("id", "in", list).executeTakeFirst();
    await refreshAbilities(trx, list);
    return Number(r.numUpdatedRows);
  });
  await notifyChannelsChanged(deps);
  return n;
}

async function idsWithTag(db: Db, tag: string): Promise<number[]> {
  return (await db.selectFrom("channels").select("id").where("tag", "=", tag).execute()).map((r) => r.id);
}

export interface TagEditInput {
  tag?: string;
  new_tag?: string | null;
  model_mapping?: string | null;
  groups?: string | string[] | null;
  models?: string | string[] | null;
  priority?: unknown;
  weight?: unknown;
}

/** Edits every channel of a tag at once: rename, model mapping, groups, models, priority, weight. */
export async function editTag(deps: AppDeps, input: TagEditInput): Promise<number> {
  const tag = (input.tag ?? "").trim();
  if (!tag) throw badRequest(MSG.emptyTag);
  const patch: Partial<Insertable<ChannelsTable>> = {};
  const newTag = (input.new_tag ?? "").trim();
  if (newTag && newTag !== tag) patch.tag = newTag;
  if (input.model_mapping !== undefined && input.model_mapping !== null)
    patch.model_mapping = jsonObjectText(input.model_mapping, MSG.badMapping);
  if (input.groups !== undefined && input.groups !== null) {
    const g = listText(input.groups)!;
    if (g) patch.group = g;
  }
  if (input.models !== undefined && input.models !== null) {
    const m = listText(input.models)!;
    if (m) patch.models = m;
  }
  const priority = int(input.priority, MSG.badPriority);
  if (priority !== undefined) patch.priority = priority;
  const weight = int(input.weight, MSG.badWeight);
  if (weight !== undefined) {
    if (weight < 0) throw badRequest(MSG.badWeight);
    patch.weight = weight;
  }
  if (!Object.keys(patch).length) throw badRequest(MSG.noChanges);
  const n = await deps.db.transaction().execute(async (trx) => {
    const ids = await idsWithTag(trx, tag);
    if (!ids.length) throw notFound(MSG.tagNotFound);
    await trx.updateTable("channels").set(patch).where("id", "in", ids).execute();
    await refreshAbilities(trx, ids);
    return ids.length;
  });
  await notifyChannelsChanged(deps);
  return n;
}

/** Enable-all (1) or disable-all (2) for a tag; returns how many channels it touched. */
export async function setTagStatus(deps: AppDeps, tag: string | undefined, status: 1 | 2): Promise<number> {
  const name = (tag ?? "").trim();
  if (!name) throw badRequest(MSG.emptyTag);
  const n = await deps.db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom("channels")
      .select(["id", "status", "other_info"])
      .where("tag", "=", name)
      .execute();
    if (!rows.length) throw notFound(MSG.tagNotFound);
    const ids = rows.map((r) => r.id);
    await trx.updateTable("channels").set({ status }).where("id", "in", ids).execute();
    if (status === CHANNEL_STATUS.enabled) {
      // As with a single enable: the automation's verdict no longer applies.
      for (const r of rows.filter((r) => r.status !== CHANNEL_STATUS.enabled)) {
        const info = {
          ...parseOtherInfo(r.other_info),
          status_reason: "",
          status_time: nowSeconds(),
          probe_failures: 0,
        };
        await trx
          .updateTable("channels")
          .set({ other_info: JSON.stringify(info) })
          .where("id", "=", r.id)
          .execute();
      }
    }
    await refreshAbilities(trx, ids);
    return ids.length;
  });
  await notifyChannelsChanged(deps);
  return n;
}

/** Rebuilds the abilities table from the channels; returns the number of channels indexed. */
export async function fixAbilities(deps: AppDeps): Promise<number> {
  const n = await deps.db.transaction().execute((trx) => rebuildAllAbilities(trx));
  await notifyChannelsChanged(deps);
  return n;
}
