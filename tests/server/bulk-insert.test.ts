// db/bulk.ts insertRows: plain-SQL multi-row inserts land every row, with the right values and column
// defaults for keys a row leaves out, on every dialect (the write-behind writes consume logs with it).
import { describe, expect, test } from "bun:test";
import { createKysely, migrate } from "../../db/index.ts";
import { compileInserts, insertRows } from "../../db/bulk.ts";
import { storageKinds, tempDatabase } from "../helpers/db.ts";

for (const kind of storageKinds()) {
  describe(`insertRows [${kind}]`, () => {
    test("rows of two shapes, split across statements, all land with their values", async () => {
      const tmp = await tempDatabase(kind);
      const db = createKysely({ kind, url: tmp.url, sqlitePath: tmp.sqlitePath });
      try {
        await migrate(db);
        const consume = (i: number) => ({
          user_id: 7,
          created_at: 1700000000 + i,
          type: 2,
          content: `row ${i} 'quoted' "twice"`,
          username: "ann",
          token_name: "t",
          model_name: "gpt-4o",
          quota: 100 + i,
          prompt_tokens: i,
          completion_tokens: 2 * i,
          use_time: 1,
          is_stream: i % 2 === 0,
          channel_id: 3,
          token_id: 9,
          group: "vip",
          ip: "127.0.0.1",
          other: JSON.stringify({ i }),
        });
        // An error log leaves the token counts out: their column defaults (0) apply.
        const error = (i: number) => ({
          user_id: 7,
          created_at: 1700001000 + i,
          type: 5,
          content: "failed",
          username: "ann",
          model_name: "gpt-4o",
          quota: 0,
          group: "vip",
        });
        const rows = [...Array.from({ length: 7 }, (_, i) => consume(i)), error(0), error(1), consume(7)];
        await insertRows(db, "logs", rows, 3);
        const got = await db.selectFrom("logs").selectAll().orderBy("created_at").execute();
        expect(got.length).toBe(10);
        const c5 = got.find((r) => r.created_at === 1700000005)!;
        expect(c5.content).toBe(`row 5 'quoted' "twice"`);
        expect(Number(c5.quota)).toBe(105);
        expect(Number(c5.completion_tokens)).toBe(10);
        expect(Boolean(c5.is_stream)).toBe(false);
        expect(Boolean(got.find((r) => r.created_at === 1700000004)!.is_stream)).toBe(true);
        expect(c5.group).toBe("vip");
        expect(JSON.parse(c5.other!)).toEqual({ i: 5 });
        const e = got.find((r) => r.created_at === 1700001001)!;
        expect(e.type).toBe(5);
        expect(Number(e.prompt_tokens)).toBe(0);
        expect(Number(e.completion_tokens)).toBe(0);
      } finally {
        await db.destroy();
        await tmp.drop();
      }
    });
  });
}

// compileInserts: rows of one shape share statements; a row with other keys (or an undefined value, which leaves
// the column to its default) goes into a statement of its own shape; values stay in row order.
test("rows are grouped by their defined columns, at most perStatement rows per statement", () => {
  const rows = [
    { a: 1, b: "x" },
    { a: 2, b: "y" },
    { a: 3, b: undefined },
    { a: 4, b: "z" },
    { b: "w", a: 5 },
    { a: 6, b: "v" },
  ];
  const out = compileInserts("sqlite", "t", rows, 2);
  expect(out).toEqual([
    { sql: `insert into "t" ("a", "b") values (?, ?), (?, ?)`, parameters: [1, "x", 2, "y"] },
    { sql: `insert into "t" ("a", "b") values (?, ?), (?, ?)`, parameters: [4, "z", 6, "v"] },
    { sql: `insert into "t" ("a") values (?)`, parameters: [3] },
    { sql: `insert into "t" ("b", "a") values (?, ?)`, parameters: ["w", 5] },
  ]);
  // After a run of one shape: an extra key is never dropped, null is a value (not the default), and the last
  // statement holds the rows left over.
  const run = [
    { a: 1, b: 2 },
    { a: 3, b: null },
    { a: 5, b: 6, c: 7 },
    { a: 8, b: 9 },
    { a: 10, b: 11 },
  ];
  expect(compileInserts("sqlite", "t", run, 2)).toEqual([
    { sql: `insert into "t" ("a", "b") values (?, ?), (?, ?)`, parameters: [1, 2, 3, null] },
    { sql: `insert into "t" ("a", "b") values (?, ?), (?, ?)`, parameters: [8, 9, 10, 11] },
    { sql: `insert into "t" ("a", "b", "c") values (?, ?, ?)`, parameters: [5, 6, 7] },
  ]);
  expect(compileInserts("postgres", "t", [{ a: 1 }, { a: 2 }])).toEqual([
    { sql: `insert into "t" ("a") values ($1), ($2)`, parameters: [1, 2] },
  ]);
  expect(compileInserts("mysql", "t", [])).toEqual([]);
});

// The drivers keep a prepared statement per SQL text and connection (PostgreSQL held ~125 MB in one backend for
// the 255 leftover sizes of a log INSERT): whatever the number of rows, a column set is written with few texts.
test("any number of rows is written in statements of perStatement rows or a power of two, in order", () => {
  const shapes = new Set<string>();
  for (let count = 1; count <= 700; count++) {
    const rows = Array.from({ length: count }, (_, i) => ({ a: i, b: `r${i}` }));
    const out = compileInserts("postgres", "logs", rows, 256);
    const sizes = out.map((st) => st.parameters.length / 2);
    for (const n of sizes) expect(n === 256 || (n & (n - 1)) === 0).toBe(true);
    expect(out.flatMap((st) => st.parameters)).toEqual(rows.flatMap((r) => [r.a, r.b]));
    for (const st of out) shapes.add(st.sql);
  }
  expect(shapes.size).toBe(9);
});
