// One insert that answers the new row's id on every dialect: PostgreSQL needs RETURNING, SQLite and MySQL report it.
import type { Insertable, Kysely } from "kysely";
import type { DB } from "./schema.ts";
import { dialectOf } from "./dialect.ts";

type WithId = { [T in keyof DB]: DB[T] extends { id: unknown } ? T : never }[keyof DB];

export async function insertId<T extends WithId>(db: Kysely<DB>, table: T, row: Insertable<DB[T]>): Promise<number> {
  const q = db.insertInto(table).values(row as any);
  if (dialectOf(db) === "postgres")
    return Number(((await q.returning("id" as any).executeTakeFirstOrThrow()) as { id: unknown }).id);
  return Number((await q.executeTakeFirstOrThrow()).insertId);
}
