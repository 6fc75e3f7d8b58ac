// Usernames are unique without regard to case ("ROOT" is root's name) on every database. MySQL's tables compare
// through a case-insensitive collation, so their unique index on username already is; SQLite and PostgreSQL get
// a unique index on lower(username), which sign-in and the taken-name check look names up by as well.
// A database made elsewhere (one-api, new-api, an older Switchyard) may already hold names that differ only in
// case: the index cannot be unique there, so the same index is made without it (lookups stay fast, sign-in picks
// the exact spelling, else the oldest account) and the names are reported. Every start looks again (db/index.ts
// migrate), so once the duplicates are renamed the index becomes unique. Several instances may start at once.
import { sql, type Kysely } from "kysely";
import { dialectOf } from "../dialect.ts";

export const USERNAME_LOWER_INDEX = "idx_users_username_lower";

export async function up(db: Kysely<any>): Promise<void> {
  const d = dialectOf(db);
  if (d === "mysql") return;
  const existing =
    d === "sqlite"
      ? sql<{
          def: string | null;
        }>`select sql as def from sqlite_master where type = 'index' and name = ${USERNAME_LOWER_INDEX}`
      : sql<{
          def: string | null;
        }>`select indexdef as def from pg_indexes where schemaname = current_schema() and indexname = ${USERNAME_LOWER_INDEX}`;
  const def = (await existing.execute(db)).rows[0]?.def;
  if (def && /^\s*create\s+unique/i.test(def)) return;
  const clashes = (
    await sql<{
      name: string;
    }>`select lower(username) as name from users group by lower(username) having count(*) > 1`.execute(db)
  ).rows;
  if (clashes.length > 0) {
    if (!def)
      await sql.raw(`create index if not exists ${USERNAME_LOWER_INDEX} on users (lower(username))`).execute(db);
    const names = clashes
      .slice(0, 20)
      .map((r) => r.name)
      .join(", ");
    console.warn(
      `[database] ${clashes.length} usernames are held by several accounts in different letter case (${names}${clashes.length > 20 ? ", ..." : ""}): `
        + "new names are checked without regard to case, but the database enforces it only once these are renamed (docs/security.md)",
    );
    return;
  }
  if (def) await sql.raw(`drop index if exists ${USERNAME_LOWER_INDEX}`).execute(db);
  try {
    await sql.raw(`create unique index if not exists ${USERNAME_LOWER_INDEX} on users (lower(username))`).execute(db);
  } catch {
    // Another instance made it at the same moment, or a clashing name arrived since the check: what exists stays.
    if (!(await existing.execute(db)).rows[0])
      await sql.raw(`create index if not exists ${USERNAME_LOWER_INDEX} on users (lower(username))`).execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== "mysql") await sql.raw(`drop index if exists ${USERNAME_LOWER_INDEX}`).execute(db);
}
