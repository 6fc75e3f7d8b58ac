// The relay's response cache (server/relay/cache) when no Redis is configured: one row per cached answer,
// named by the hash of its request. expires_at (epoch seconds) is indexed for the background clean-up
// (server/jobs/response-cache-cleanup.ts), which deletes expired rows in small batches.
import { sql, type Kysely } from "kysely";
import { dialectOf } from "../dialect.ts";

export async function up(db: Kysely<any>): Promise<void> {
  const mysql = dialectOf(db) === "mysql";
  await db.schema
    .createTable("response_cache")
    .ifNotExists()
    .addColumn("cache_key", "varchar(64)", (c) => c.notNull().primaryKey())
    .addColumn("model", "varchar(255)", (c) => c.notNull().defaultTo(""))
    // A stored answer is up to ResponseCacheMaxEntryBytes (1 MiB by default): MySQL's text holds 64 KiB.
    .addColumn("entry", mysql ? sql`longtext` : "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("expires_at", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex("idx_response_cache_expires_at").on("response_cache").column("expires_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("response_cache").ifExists().execute();
}
