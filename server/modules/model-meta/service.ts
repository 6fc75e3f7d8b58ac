// new-api's model metadata and vendors (tables models, vendors; model/model_meta.go, vendor_meta.go): what its
// models page lists and edits. Rows are soft-deleted with a gorm datetime, so new-api reads them back alike.
// Each listed model also carries where it can be used (bound_channels, enable_groups, quota_types), computed
// from the abilities and pricing options. Switchyard's own GET /api/models (channel type → model names) is a
// different call; the list is served at GET /api/models/ (new-api's console asks with the trailing slash).
import type { AppDeps } from "../../deps.ts";
import type { ModelsTable, VendorsTable } from "../../../db/schema.ts";
import type { Selectable } from "kysely";
import { nowSeconds } from "../../../db/index.ts";
import { dbTime } from "../../../db/datetime.ts";
import { badRequest, notFound } from "../../http/errors.ts";
import { insertId } from "../../../db/insert.ts";

type ModelRow = Selectable<ModelsTable>;
type VendorRow = Selectable<VendorsTable>;
export interface Page {
  page: number;
  size: number;
  offset: number;
}

const num = (v: unknown) => Number(v ?? 0) || 0;
const str = (v: unknown) => (v === null || v === undefined ? "" : String(v));
const NAME_RULES = [0, 1, 2, 3];

export function vendorView(v: VendorRow, modelCount?: number) {
  return {
    id: num(v.id),
    name: str(v.name),
    description: str(v.description),
    icon: str(v.icon),
    status: num(v.status),
    created_time: num(v.created_time),
    updated_time: num(v.updated_time),
    ...(modelCount === undefined ? {} : { model_count: modelCount }),
  };
}

async function vendorCounts(deps: AppDeps): Promise<Record<string, number>> {
  const rows = await deps.db
    .selectFrom("models")
    .select(["vendor_id", (eb) => eb.fn.countAll<number>().as("n")])
    .where("deleted_at", "is", null)
    .groupBy("vendor_id")
    .execute();
  return Object.fromEntries(rows.map((r) => [String(num(r.vendor_id)), num(r.n)]));
}

export async function listVendors(deps: AppDeps, q: Page & { keyword?: string }) {
  let base = deps.db.selectFrom("vendors").where("deleted_at", "is", null);
  const kw = q.keyword?.trim();
  if (kw) base = base.where((eb) => eb.or([eb("name", "like", `%${kw}%`), eb("description", "like", `%${kw}%`)]));
  const [{ n }] = await base.select((eb) => eb.fn.countAll<number>().as("n")).execute();
  const rows = await base.selectAll().orderBy("id", "desc").limit(q.size).offset(q.offset).execute();
  const counts = await vendorCounts(deps);
  return {
    items: rows.map((v) => vendorView(v, counts[String(v.id)] ?? 0)),
    total: num(n),
    page: q.page,
    page_size: q.size,
  };
}

export async function getVendor(deps: AppDeps, id: number) {
  const v = await deps.db
    .selectFrom("vendors")
    .selectAll()
    .where("id", "=", id)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!v) throw notFound("vendor not found");
  return v;
}

export interface VendorInput {
  id?: number;
  name?: string;
  description?: string;
  icon?: string;
  status?: number;
}

async function vendorNameFree(deps: AppDeps, name: string, exceptId = 0) {
  const clash = await deps.db
    .selectFrom("vendors")
    .select("id")
    .where("name", "=", name)
    .where("deleted_at", "is", null)
    .where("id", "!=", exceptId)
    .executeTakeFirst();
  if (clash) throw badRequest("a vendor with this name already exists");
}

export async function saveVendor(deps: AppDeps, input: VendorInput, update: boolean) {
  const name = str(input.name).trim();
  if (!name || name.length > 128) throw badRequest("vendor name is required (at most 128 characters)");
  const now = nowSeconds();
  const fields = {
    name,
    description: str(input.description),
    icon: str(input.icon).slice(0, 128),
    status: input.status === 0 ? 0 : num(input.status ?? 1) || 1,
  };
  if (update) {
    if (!Number.isInteger(input.id)) throw badRequest("id is required");
    await getVendor(deps, input.id!);
    await vendorNameFree(deps, name, input.id);
    await deps.db
      .updateTable("vendors")
      .set({ ...fields, updated_time: now })
      .where("id", "=", input.id!)
      .execute();
    return vendorView(await getVendor(deps, input.id!));
  }
  await vendorNameFree(deps, name);
  const id = await insertId(deps.db, "vendors", { ...fields, created_time: now, updated_time: now, deleted_at: null });
  return vendorView(await getVendor(deps, id));
}

export async function deleteVendor(deps: AppDeps, id: number) {
  await getVendor(deps, id);
  await deps.db
    .updateTable("vendors")
    .set({ deleted_at: dbTime(deps.db, Date.now()) })
    .where("id", "=", id)
    .execute();
}

/** Which channels, groups and billing kinds serve each model name (new-api's enriched fields). */
async function usage(deps: AppDeps, names: string[]) {
  const out = new Map<string, { channels: Map<string, { name: string; type: number }>; groups: Set<string> }>();
  if (!names.length) return out;
  const rows = await deps.db
    .selectFrom("abilities")
    .innerJoin("channels", "channels.id", "abilities.channel_id")
    .select(["abilities.model as model", "abilities.group as group", "channels.name as name", "channels.type as type"])
    .where("abilities.model", "in", names)
    .where("abilities.enabled", "=", true)
    .execute();
  for (const r of rows) {
    const u = out.get(r.model) ?? { channels: new Map(), groups: new Set<string>() };
    u.channels.set(`${r.name}_${r.type}`, { name: str(r.name), type: num(r.type) });
    u.groups.add(str(r.group));
    out.set(r.model, u);
  }
  return out;
}

async function modelViews(deps: AppDeps, rows: ModelRow[]) {
  const used = await usage(
    deps,
    rows.map((r) => str(r.model_name)),
  );
  const prices = deps.options.json<Record<string, number>>("ModelPrice", {});
  const ratios = deps.options.json<Record<string, number>>("ModelRatio", {});
  return rows.map((r) => {
    const name = str(r.model_name);
    const u = used.get(name);
    const quotaTypes = [...(name in ratios ? [0] : []), ...(name in prices ? [1] : [])];
    return {
      id: num(r.id),
      model_name: name,
      description: str(r.description),
      icon: str(r.icon),
      tags: str(r.tags),
      vendor_id: num(r.vendor_id),
      endpoints: str(r.endpoints),
      status: num(r.status),
      sync_official: num(r.sync_official),
      created_time: num(r.created_time),
      updated_time: num(r.updated_time),
      name_rule: num(r.name_rule),
      bound_channels: u ? [...u.channels.values()] : [],
      enable_groups: u ? [...u.groups].sort() : [],
      quota_types: quotaTypes,
    };
  });
}

export async function listModels(deps: AppDeps, q: Page & { keyword?: string; vendor?: string }) {
  let base = deps.db.selectFrom("models").where("models.deleted_at", "is", null);
  const kw = q.keyword?.trim();
  if (kw)
    base = base.where((eb) =>
      eb.or([
        eb("model_name", "like", `%${kw}%`),
        eb("models.description", "like", `%${kw}%`),
        eb("tags", "like", `%${kw}%`),
      ]),
    );
  const vendor = q.vendor?.trim();
  if (vendor) {
    if (/^\d+$/.test(vendor)) base = base.where("vendor_id", "=", Number(vendor));
    else {
      const ids = (
        await deps.db
          .selectFrom("vendors")
          .select("id")
          .where("name", "like", `%${vendor}%`)
          .where("deleted_at", "is", null)
          .execute()
      ).map((v) => v.id);
      base = base.where("vendor_id", "in", ids.length ? ids : [-1]);
    }
  }
  const [{ n }] = await base.select((eb) => eb.fn.countAll<number>().as("n")).execute();
  const rows = await base.selectAll().orderBy("models.id", "desc").limit(q.size).offset(q.offset).execute();
  return {
    items: await modelViews(deps, rows),
    total: num(n),
    page: q.page,
    page_size: q.size,
    vendor_counts: await vendorCounts(deps),
  };
}

async function modelRow(deps: AppDeps, id: number) {
  const m = await deps.db
    .selectFrom("models")
    .selectAll()
    .where("id", "=", id)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!m) throw notFound("model not found");
  return m;
}

export async function getModel(deps: AppDeps, id: number) {
  return (await modelViews(deps, [await modelRow(deps, id)]))[0]!;
}

export interface ModelInput {
  id?: number;
  model_name?: string;
  description?: string;
  icon?: string;
  tags?: string;
  vendor_id?: number;
  endpoints?: string;
  status?: number;
  sync_official?: number;
  name_rule?: number;
}

async function modelNameFree(deps: AppDeps, name: string, exceptId = 0) {
  const clash = await deps.db
    .selectFrom("models")
    .select("id")
    .where("model_name", "=", name)
    .where("deleted_at", "is", null)
    .where("id", "!=", exceptId)
    .executeTakeFirst();
  if (clash) throw badRequest("a model with this name already exists");
}

function modelFields(input: ModelInput) {
  const name = str(input.model_name).trim();
  if (!name || name.length > 128) throw badRequest("model_name is required (at most 128 characters)");
  const rule = input.name_rule ?? 0;
  if (!NAME_RULES.includes(rule))
    throw badRequest("name_rule must be 0 (exact), 1 (prefix), 2 (contains) or 3 (suffix)");
  const endpoints = str(input.endpoints);
  if (endpoints) {
    try {
      JSON.parse(endpoints);
    } catch {
      throw badRequest("endpoints must be JSON");
    }
  }
  return {
    model_name: name,
    description: str(input.description),
    icon: str(input.icon).slice(0, 128),
    tags: str(input.tags).slice(0, 255),
    vendor_id: num(input.vendor_id),
    endpoints,
    status: input.status === 0 ? 0 : 1,
    sync_official: input.sync_official === 0 ? 0 : 1,
    name_rule: rule,
  };
}

export async function saveModel(deps: AppDeps, input: ModelInput, update: boolean, statusOnly = false) {
  const now = nowSeconds();
  if (update) {
    if (!Number.isInteger(input.id)) throw badRequest("id is required");
    await modelRow(deps, input.id!);
    if (statusOnly) {
      await deps.db
        .updateTable("models")
        .set({ status: input.status === 0 ? 0 : 1, updated_time: now })
        .where("id", "=", input.id!)
        .execute();
      return getModel(deps, input.id!);
    }
    const fields = modelFields(input);
    await modelNameFree(deps, fields.model_name, input.id);
    await deps.db
      .updateTable("models")
      .set({ ...fields, updated_time: now })
      .where("id", "=", input.id!)
      .execute();
    return getModel(deps, input.id!);
  }
  const fields = modelFields(input);
  await modelNameFree(deps, fields.model_name);
  const id = await insertId(deps.db, "models", { ...fields, created_time: now, updated_time: now, deleted_at: null });
  return getModel(deps, id);
}

export async function deleteModel(deps: AppDeps, id: number) {
  await modelRow(deps, id);
  await deps.db
    .updateTable("models")
    .set({ deleted_at: dbTime(deps.db, Date.now()) })
    .where("id", "=", id)
    .execute();
}

/** GET /api/models/missing: models channels serve that have no metadata row yet. */
export async function missingModels(deps: AppDeps): Promise<string[]> {
  const served = await deps.db.selectFrom("abilities").select("model").distinct().execute();
  const known = new Set(
    (await deps.db.selectFrom("models").select("model_name").where("deleted_at", "is", null).execute()).map(
      (m) => m.model_name,
    ),
  );
  return served
    .map((r) => r.model)
    .filter((m) => !known.has(m))
    .sort();
}
