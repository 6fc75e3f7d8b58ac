// Storage: migrations are idempotent and complete an existing one-api/new-api database; the cache works
// in memory and on Redis.
import { describe, expect, test } from "bun:test";
import { sql } from "kysely";
import { createKysely, migrate, dialectOf } from "../../db/index.ts";
import { TABLES } from "../../db/migrations/tables.ts";
import { MemoryCache, openCache, type Cache } from "../../server/infra/cache.ts";
import { storageKinds, tempDatabase } from "../helpers/db.ts";

for (const kind of storageKinds()) {
  describe(`migrations [${kind}]`, () => {
    test("create every table; running again changes nothing", async () => {
      const tmp = await tempDatabase(kind);
      const db = createKysely({ kind, url: tmp.url, sqlitePath: tmp.sqlitePath });
      try {
        await migrate(db);
        await migrate(db);
        const tables = await db.introspection.getTables();
        for (const t of TABLES) {
          const found = tables.find((x) => x.name === t.name);
          expect(found).toBeDefined();
          expect(found!.columns.map((c) => c.name).sort()).toEqual(t.columns.map((c) => c.name).sort());
        }
      } finally {
        await db.destroy();
        await tmp.drop();
      }
    });

    test("an existing one-api database keeps its rows and gains the missing columns", async () => {
      const tmp = await tempDatabase(kind);
      const db = createKysely({ kind, url: tmp.url, sqlitePath: tmp.sqlitePath });
      try {
        const d = dialectOf(db);
        const q = (s: string) => (d === "mysql" ? `\`${s}\`` : `"${s}"`);
        const idCol =
          d === "postgres"
            ? "serial primary key"
            : d === "mysql"
              ? "int auto_increment primary key"
              : "integer primary key autoincrement";
        // one-api's older users table: no setting, no linux_do_id, no oidc_id.
        await sql
          .raw(
            `create table users (id ${idCol}, username varchar(64) unique, password varchar(255) not null, display_name varchar(64), role integer default 1, status integer default 1, email varchar(255), quota bigint default 0, used_quota bigint default 0, request_count integer default 0, ${q("group")} varchar(32) default 'default', aff_code varchar(32), inviter_id integer default 0, access_token varchar(32))`,
          )
          .execute(db);
        await sql
          .raw(
            `insert into users (username, password, role, quota) values ('legacy', '$2a$10$abcdefghijklmnopqrstuv', 100, 42)`,
          )
          .execute(db);
        await migrate(db);
        const cols = (await db.introspection.getTables()).find((t) => t.name === "users")!.columns.map((c) => c.name);
        for (const c of ["setting", "linux_do_id", "oidc_id", "deleted_at", "aff_quota", "session_version"])
          expect(cols).toContain(c);
        const row = await db.selectFrom("users").selectAll().where("username", "=", "legacy").executeTakeFirstOrThrow();
        expect(row.quota).toBe(42);
        expect(row.role).toBe(100);
        expect(row.session_version).toBe(0);
      } finally {
        await db.destroy();
        await tmp.drop();
      }
    });

    test("a column added to the schema after 0001 ran reaches the database on the next start", async () => {
      const tmp = await tempDatabase(kind);
      const db = createKysely({ kind, url: tmp.url, sqlitePath: tmp.sqlitePath });
      try {
        await migrate(db);
        // As if this database was migrated by a release whose tokens table had no allow_ips yet.
        await db.schema.alterTable("tokens").dropColumn("allow_ips").execute();
        await migrate(db);
        const cols = (await db.introspection.getTables()).find((t) => t.name === "tokens")!.columns.map((c) => c.name);
        expect(cols).toContain("allow_ips");
      } finally {
        await db.destroy();
        await tmp.drop();
      }
    });

    test("instances starting together over one empty database all come up", async () => {
      if (kind === "sqlite") return; // one process owns a SQLite file
      const tmp = await tempDatabase(kind);
      const dbs = [0, 1, 2].map(() => createKysely({ kind, url: tmp.url, sqlitePath: tmp.sqlitePath }));
      try {
        await Promise.all(dbs.map((db) => migrate(db)));
        const tables = await dbs[0]!.introspection.getTables();
        for (const t of TABLES) expect(tables.some((x) => x.name === t.name)).toBe(true);
      } finally {
        for (const db of dbs) await db.destroy();
        await tmp.drop();
      }
    });
  });
}

async function cacheContract(cache: Cache) {
  await cache.set("a", "1");
  expect(await cache.get("a")).toBe("1");
  await cache.del("a");
  expect(await cache.get("a")).toBeNull();
  expect(await cache.setNx("once", "x", 10)).toBe(true);
  expect(await cache.setNx("once", "y", 10)).toBe(false);
  expect(await cache.get("once")).toBe("x");
  const counts = await Promise.all(Array.from({ length: 50 }, () => cache.incr("ctr", 10)));
  expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  await cache.set("short", "v", 1);
  await Bun.sleep(1100);
  expect(await cache.get("short")).toBeNull();
}

describe("cache", () => {
  test("memory", async () => {
    const c = new MemoryCache();
    await cacheContract(c);
    await c.close();
  });
  if (process.env.REDIS_CONN_STRING) {
    test("redis", async () => {
      const c = await openCache(process.env.REDIS_CONN_STRING!, `sytest:${Math.random().toString(36).slice(2)}:`);
      expect(c.kind).toBe("redis");
      await cacheContract(c);
      await c.close();
    });
  }
});
