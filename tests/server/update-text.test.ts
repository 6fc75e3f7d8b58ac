// db/update-text.ts: the write-behind's balance updates as plain SQL. The text must be what Kysely compiles for
// the same update (every shape the write-behind writes, in the three dialects), and it must run: counters add
// up on every database the suite has.
import { describe, expect, test } from "bun:test";
import {
  DummyDriver,
  Kysely,
  MysqlAdapter,
  MysqlIntrospector,
  MysqlQueryCompiler,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  sql,
  type Dialect as KyselyDialect,
} from "kysely";
import { createKysely, migrate } from "../../db/index.ts";
import type { Dialect } from "../../db/dialect.ts";
import { updateStatement, type SetTerm } from "../../db/update-text.ts";
import { compileInserts } from "../../db/bulk.ts";
import { storageKinds, tempDatabase } from "../helpers/db.ts";

const compilers: Record<Dialect, KyselyDialect> = {
  sqlite: {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  },
  postgres: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
  mysql: {
    createAdapter: () => new MysqlAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new MysqlIntrospector(db),
    createQueryCompiler: () => new MysqlQueryCompiler(),
  },
};

/** The same update through Kysely's builder. */
function viaKysely(dialect: Dialect, table: string, sets: SetTerm[], where: [string, unknown][]) {
  const db = new Kysely<any>({ dialect: compilers[dialect] });
  let q = db
    .updateTable(table)
    .set((eb) => Object.fromEntries(sets.map(([c, op, v]) => [c, op === "=" ? v : eb(c, op, v)])));
  for (const [c, v] of where) q = q.where(c, "=", v);
  const { sql, parameters } = q.compile();
  return { sql, parameters: [...parameters] };
}

const SHAPES: [string, SetTerm[], [string, unknown][]][] = [
  [
    "tokens",
    [
      ["used_quota", "+", 120],
      ["accessed_time", "=", 1700000000],
      ["remain_quota", "+", -120],
    ],
    [["id", 7]],
  ],
  [
    "tokens",
    [
      ["used_quota", "+", 5],
      ["accessed_time", "=", 1700000001],
    ],
    [["id", 8]],
  ],
  ["tokens", [["remain_quota", "-", 40]], [["id", 9]]],
  [
    "users",
    [
      ["used_quota", "+", 120],
      ["request_count", "+", 3],
      ["quota", "+", -120],
    ],
    [["id", 1]],
  ],
  ["users", [["quota", "-", 40]], [["id", 2]]],
  ["channels", [["used_quota", "+", 77]], [["id", 3]]],
  ["quota_holds", [["amount", "-", 12]], [["id", "lease-a"]]],
  [
    "quota_data",
    [
      ["token_used", "+", 20],
      ["count", "+", 1],
      ["quota", "+", 100],
    ],
    [
      ["user_id", 1],
      ["model_name", "gpt-4o"],
      ["created_at", 1699999200],
    ],
  ],
];

describe("updateStatement", () => {
  for (const dialect of ["sqlite", "postgres", "mysql"] as const) {
    test(`${dialect}: the text and parameters Kysely compiles, for every shape the write-behind writes`, () => {
      for (const [table, sets, where] of SHAPES) {
        // Twice: the second answer comes from the text cache and must not differ.
        for (let i = 0; i < 2; i++)
          expect(updateStatement(dialect, table, sets, where)).toEqual(viaKysely(dialect, table, sets, where));
      }
    });
  }

  test("the rollup's insert (when its update finds no row) is what Kysely compiles too", () => {
    const r = {
      user_id: 1,
      username: "ann",
      model_name: "gpt-4o",
      created_at: 1699999200,
      token_used: 20,
      count: 1,
      quota: 100,
    };
    for (const dialect of ["sqlite", "postgres", "mysql"] as const) {
      const { sql: text, parameters } = new Kysely<any>({ dialect: compilers[dialect] })
        .insertInto("quota_data")
        .values(r)
        .compile();
      expect(compileInserts(dialect, "quota_data", [r])).toEqual([{ sql: text, parameters: [...parameters] }]);
    }
  });

  test("the same columns with a different operator are a different text", () => {
    expect(updateStatement("sqlite", "users", [["quota", "+", 1]], [["id", 1]]).sql).toBe(
      `update "users" set "quota" = "quota" + ? where "id" = ?`,
    );
    expect(updateStatement("sqlite", "users", [["quota", "-", 1]], [["id", 1]]).sql).toBe(
      `update "users" set "quota" = "quota" - ? where "id" = ?`,
    );
    expect(updateStatement("sqlite", "users", [["quota", "=", 1]], [["id", 1]]).sql).toBe(
      `update "users" set "quota" = ? where "id" = ?`,
    );
  });
});

for (const kind of storageKinds()) {
  test(`updateStatement [${kind}]: increments, decrements and assignments land on the row they name`, async () => {
    const tmp = await tempDatabase(kind);
    const db = createKysely({ kind, url: tmp.url, sqlitePath: tmp.sqlitePath });
    try {
      await migrate(db);
      const dialect: Dialect = kind === "postgres" ? "postgres" : kind === "mysql" ? "mysql" : "sqlite";
      for (const id of [1, 2])
        await db
          .insertInto("channels")
          .values({ id, type: 1, key: "k", name: `c${id}`, created_time: 0, used_quota: 100 } as any)
          .execute();
      const run = async (st: { sql: string; parameters: unknown[] }) =>
        db.executeQuery({ ...sql.raw("").compile(db), sql: st.sql, parameters: st.parameters });
      await run(
        updateStatement(
          dialect,
          "channels",
          [
            ["used_quota", "+", 25],
            ["name", "=", "renamed"],
          ],
          [["id", 2]],
        ),
      );
      await run(updateStatement(dialect, "channels", [["used_quota", "-", 10]], [["id", 2]]));
      const rows = await db.selectFrom("channels").select(["id", "used_quota", "name"]).orderBy("id").execute();
      expect(rows.map((r) => [Number(r.id), Number(r.used_quota), r.name])).toEqual([
        [1, 100, "c1"],
        [2, 115, "renamed"],
      ]);
    } finally {
      await db.destroy();
      await tmp.drop();
    }
  });
}
