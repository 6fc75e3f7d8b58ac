// The token cache's database read: a token by its key (not deleted) and the user columns the relay needs, in
// one statement of fixed text on PostgreSQL and MySQL (two on SQLite, below; hot-path rule 13). Built through
// Kysely, the two queries it replaces cost several times the CPU per reload (and two round trips on the servers);
// with a thousand users' tokens each reloaded every CACHE_TTL_MS that was several percent of a core.
import { CompiledQuery } from "kysely";
import type { Database, Dialect } from "../../db/index.ts";
import type { Token, User } from "../../db/schema.ts";
import { identifierQuoter, placeholders } from "../../db/dialect.ts";
import { rawSqlite } from "../../db/index.ts";

export type TokenUser = Pick<
  User,
  "id" | "username" | "role" | "status" | "group" | "setting" | "deleted_at" | "quota"
>;

const USER_COLUMNS = ["id", "username", "role", "status", "group", "setting", "deleted_at", "quota"] as const;
/** The user's columns come back under this prefix, next to every column of the token's row. */
const PREFIX = "sy_user_";

const texts = new Map<Dialect, string>();

function textFor(dialect: Dialect): string {
  let text = texts.get(dialect);
  if (text) return text;
  const q = identifierQuoter(dialect);
  const ph = placeholders(dialect);
  const user = USER_COLUMNS.map((c) => `u.${q(c)} as ${q(PREFIX + c)}`).join(", ");
  text = `select t.*, ${user} from ${q("tokens")} t inner join ${q("users")} u on u.${q("id")} = t.${q("user_id")} where t.${q("key")} = ${ph()} and t.${q("deleted_at")} is null`;
  texts.set(dialect, text);
  return text;
}

/** SQLite: two statements prepared once on the raw handle (db/index.ts rawSqlite), read without Kysely's promise
 * and driver round, which with a thousand users' tokens reloaded every CACHE_TTL_MS was a visible part of every
 * relay call. Two statements, not the join the servers get: bun:sqlite reads this schema's join several times
 * slower than the token and then its user by key, and on SQLite a second statement costs no round trip. Like the ledger's balance reads, they use Kysely's own connection. */
type Loaded = { token: Token; user: TokenUser } | null;
const sqliteReads = new WeakMap<object, (key: string) => Loaded>();

function sqliteRead(db: Database): ((key: string) => Loaded) | null {
  const raw = rawSqlite(db);
  if (!raw) return null;
  let read = sqliteReads.get(raw);
  if (!read) {
    const q = identifierQuoter("sqlite");
    const token = raw.query<Token, [string]>(
      `select * from ${q("tokens")} where ${q("key")} = ? and ${q("deleted_at")} is null`,
    );
    const user = raw.query<TokenUser, [number]>(
      `select ${USER_COLUMNS.map(q).join(", ")} from ${q("users")} where ${q("id")} = ?`,
    );
    read = (key) => {
      const t = token.get(key);
      const u = t && user.get(t.user_id);
      return u ? { token: t, user: u } : null;
    };
    sqliteReads.set(raw, read);
  }
  return read;
}

/** The token of `key` and its user, or null when either is missing (a deleted token counts as missing). */
export async function loadToken(db: Database, dialect: Dialect, key: string): Promise<Loaded> {
  const read = sqliteRead(db);
  if (read) return read(key);
  const row = (await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(textFor(dialect), [key]))).rows[0];
  if (!row) return null;
  const token: Record<string, unknown> = {};
  const user: Record<string, unknown> = {};
  for (const k in row) {
    if (k.startsWith(PREFIX)) user[k.slice(PREFIX.length)] = row[k];
    else token[k] = row[k];
  }
  return { token: token as Token, user: user as TokenUser };
}
