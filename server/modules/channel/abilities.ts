// The abilities table is the relay's routing index: one row per (group, model, channel) with the
// channel's enabled flag, priority, weight and tag. It is derived data, rewritten from the channel rows
// inside the same transaction as every channel change, so routing never sees a half-applied edit.
import type { Kysely, Insertable } from "kysely";
import type { AbilitiesTable, Channel, DB } from "../../../db/schema.ts";
import { CHANNEL_STATUS, DEFAULT_GROUP } from "../../catalogue/index.ts";

type Db = Kysely<DB>;
type AbilitySource = Pick<Channel, "id" | "group" | "models" | "status" | "priority" | "weight" | "tag">;

/** Comma list → unique trimmed names, in order. */
export function commaList(text: string | null | undefined): string[] {
  return [
    ...new Set(
      (text ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
}

/** Every group × model of the channel. */
export function abilityRows(ch: AbilitySource): Insertable<AbilitiesTable>[] {
  const groups = commaList(ch.group);
  const models = commaList(ch.models);
  const rows: Insertable<AbilitiesTable>[] = [];
  for (const group of groups.length ? groups : [DEFAULT_GROUP]) {
    for (const model of models) {
      rows.push({
        group,
        model,
        channel_id: ch.id,
        enabled: ch.status === CHANNEL_STATUS.enabled,
        priority: ch.priority ?? 0,
        weight: ch.weight ?? 0,
        tag: ch.tag ?? null,
      });
    }
  }
  return rows;
}

// Several hundred rows per statement keeps every dialect under its bound-parameter limit.
const CHUNK = 500;

/** Replaces the abilities of the given channels (pass the channels' rows as they are after the change). */
export async function replaceAbilities(db: Db, channels: AbilitySource[]): Promise<number> {
  if (!channels.length) return 0;
  const ids = channels.map((c) => c.id);
  for (let i = 0; i < ids.length; i += CHUNK)
    await db
      .deleteFrom("abilities")
      .where("channel_id", "in", ids.slice(i, i + CHUNK))
      .execute();
  const rows = channels.flatMap(abilityRows);
  for (let i = 0; i < rows.length; i += CHUNK)
    await db
      .insertInto("abilities")
      .values(rows.slice(i, i + CHUNK))
      .execute();
  return rows.length;
}

/** Re-reads the channels by id (inside the caller's transaction) and rewrites their abilities. */
export async function refreshAbilities(db: Db, ids: number[]): Promise<number> {
  if (!ids.length) return 0;
  const channels: AbilitySource[] = [];
  for (let i = 0; i < ids.length; i += CHUNK) {
    channels.push(
      ...(await db
        .selectFrom("channels")
        .select(["id", "group", "models", "status", "priority", "weight", "tag"])
        .where("id", "in", ids.slice(i, i + CHUNK))
        .execute()),
    );
  }
  // Channels that no longer exist lose their abilities too.
  for (let i = 0; i < ids.length; i += CHUNK)
    await db
      .deleteFrom("abilities")
      .where("channel_id", "in", ids.slice(i, i + CHUNK))
      .execute();
  return replaceAbilities(db, channels);
}

/** Rebuilds the whole table from the channels (the "fix abilities" action); returns the channel count. */
export async function rebuildAllAbilities(db: Db): Promise<number> {
  const channels = await db
    .selectFrom("channels")
    .select(["id", "group", "models", "status", "priority", "weight", "tag"])
    .execute();
  await db.deleteFrom("abilities").execute();
  const rows = channels.flatMap(abilityRows);
  for (let i = 0; i < rows.length; i += CHUNK)
    await db
      .insertInto("abilities")
      .values(rows.slice(i, i + CHUNK))
      .execute();
  return channels.length;
}
