import { type Kysely, PostgresAdapter, MysqlAdapter } from "kysely";

export type Dialect = "sqlite" | "postgres" | "mysql";

export function dialectOf(db: Kysely<any>): Dialect {
  const adapter = db.getExecutor().adapter;
  if (adapter instanceof PostgresAdapter) return "postgres";
  if (adapter instanceof MysqlAdapter) return "mysql";
  return "sqlite";
}

/** How the dialect quotes an identifier (as Kysely writes it). */
export function identifierQuoter(dialect: Dialect): (id: string) => string {
  return dialect === "mysql" ? (id) => `\`${id}\`` : (id) => `"${id}"`;
}

/** Placeholders in order: `$1`, `$2`, … on PostgreSQL, `?` elsewhere. */
export function placeholders(dialect: Dialect): () => string {
  let n = 0;
  return dialect === "postgres" ? () => `$${++n}` : () => "?";
}
