import { type Kysely, PostgresAdapter, MysqlAdapter } from "kysely";

export type Dialect = "sqlite" | "postgres" | "mysql";

export function dialectOf(db: Kysely<any>): Dialect {
  const adapter = db.getExecutor().adapter;
  if (adapter instanceof PostgresAdapter) return "postgres";
  if (adapter instanceof MysqlAdapter) return "mysql";
  return "sqlite";
}
