// new-api's prefill groups (table prefill_groups): named lists of models, tags or endpoints its channel form
// offers to fill in at once. Soft-deleted with a gorm datetime; items is a JSON array (a json column there).
import type { AppDeps } from "../../deps.ts";
import { nowSeconds } from "../../../db/index.ts";
import { dbTime } from "../../../db/datetime.ts";
import { insertId } from "../../../db/insert.ts";
import { badRequest, notFound } from "../../http/errors.ts";

export const PREFILL_TYPES = ["model", "tag", "endpoint"] as const;

export interface PrefillInput {
  id?: number;
  name?: string;
  type?: string;
  items?: unknown;
  description?: string;
}

function items(raw: string | null | undefined): unknown {
  if (!raw) return [];
  try {
    return JSON.parse(raw);
  } catch {
    return [];
  }
}

const view = (r: any) => ({
  id: Number(r.id),
  name: String(r.name ?? ""),
  type: String(r.type ?? ""),
  items: items(r.items),
  description: String(r.description ?? ""),
  created_time: Number(r.created_time ?? 0),
  updated_time: Number(r.updated_time ?? 0),
});

export async function listPrefillGroups(deps: AppDeps, type?: string) {
  let q = deps.db.selectFrom("prefill_groups").selectAll().where("deleted_at", "is", null);
  if (type) q = q.where("type", "=", type);
  return (await q.orderBy("updated_time", "desc").orderBy("id", "desc").execute()).map(view);
}

async function row(deps: AppDeps, id: number) {
  const r = await deps.db
    .selectFrom("prefill_groups")
    .selectAll()
    .where("id", "=", id)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!r) throw notFound("prefill group not found");
  return r;
}

function fields(input: PrefillInput) {
  const name = String(input.name ?? "").trim();
  if (!name || name.length > 64) throw badRequest("name is required (at most 64 characters)");
  if (!(PREFILL_TYPES as readonly string[]).includes(String(input.type)))
    throw badRequest(`type must be one of ${PREFILL_TYPES.join(", ")}`);
  let list = input.items ?? [];
  if (typeof list === "string") {
    try {
      list = JSON.parse(list);
    } catch {
      throw badRequest("items must be a JSON array of strings");
    }
  }
  if (!Array.isArray(list) || list.some((x) => typeof x !== "string"))
    throw badRequest("items must be a JSON array of strings");
  const description = String(input.description ?? "");
  if (description.length > 255) throw badRequest("description is at most 255 characters");
  return { name, type: String(input.type), items: JSON.stringify(list), description };
}

async function nameFree(deps: AppDeps, name: string, exceptId = 0) {
  const clash = await deps.db
    .selectFrom("prefill_groups")
    .select("id")
    .where("name", "=", name)
    .where("deleted_at", "is", null)
    .where("id", "!=", exceptId)
    .executeTakeFirst();
  if (clash) throw badRequest("a prefill group with this name already exists");
}

export async function savePrefillGroup(deps: AppDeps, input: PrefillInput, update: boolean) {
  const f = fields(input);
  const now = nowSeconds();
  if (update) {
    if (!Number.isInteger(input.id)) throw badRequest("id is required");
    await row(deps, input.id!);
    await nameFree(deps, f.name, input.id);
    await deps.db
      .updateTable("prefill_groups")
      .set({ ...f, updated_time: now })
      .where("id", "=", input.id!)
      .execute();
    return view(await row(deps, input.id!));
  }
  await nameFree(deps, f.name);
  const id = await insertId(deps.db, "prefill_groups", {
    ...f,
    created_time: now,
    updated_time: now,
    deleted_at: null,
  });
  return view(await row(deps, id));
}

export async function deletePrefillGroup(deps: AppDeps, id: number) {
  await row(deps, id);
  await deps.db
    .updateTable("prefill_groups")
    .set({ deleted_at: dbTime(deps.db, Date.now()) })
    .where("id", "=", id)
    .execute();
}
