// First start must be quick (the target is a first 200 within 150 ms; docs/performance.md): creating a fresh SQLite database is one
// transaction, and a restart does not redo schema work that is already there.
import { afterAll, describe, expect, test } from "bun:test";
import { sql, type Kysely } from "kysely";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKysely, migrate } from "../../db/index.ts";
import { migrations } from "../../db/migrations/index.ts";

const dir = mkdtempSync(join(tmpdir(), "sy-startup-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function walFrames(db: Kysely<any>): Promise<{ frames: number; pages: number }> {
  const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0].page_count);
  const frames = Number((await sql<{ log: number }>`pragma wal_checkpoint(PASSIVE)`.execute(db)).rows[0].log);
  return { frames, pages };
}

describe("creating and reopening the SQLite database", () => {
  test("a fresh database is created in one transaction: each page reaches the WAL about once", async () => {
    const db = createKysely({ kind: "sqlite", url: "", sqlitePath: join(dir, "fresh.db") });
    try {
      await migrate(db);
      const { frames, pages } = await walFrames(db);
      // Statement by statement, the schema page and the table roots were written again for every CREATE
      // (122 frames for 52 pages). A few frames remain for Kysely's own migration bookkeeping, per migration.
      expect(frames).toBeLessThanOrEqual(pages + 4 + 4 * Object.keys(migrations).length);
    } finally {
      await db.destroy();
    }
  });

  test("reopening a migrated database writes nothing and creates no index again", async () => {
    const path = join(dir, "again.db");
    const first = createKysely({ kind: "sqlite", url: "", sqlitePath: path });
    await migrate(first);
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(first);
    await first.destroy();

    const statements: string[] = [];
    const again = createKysely({ kind: "sqlite", url: "", sqlitePath: path });
    const watched = again.withPlugin({
      transformQuery: (args) => {
        const node = args.node as any;
        statements.push(node.kind === "RawNode" ? node.sqlFragments.join("?") : node.kind);
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    try {
      await migrate(watched);
      expect(statements.filter((s) => /^\s*create/i.test(s))).toEqual([]);
      expect((await walFrames(again)).frames).toBe(0);
    } finally {
      await again.destroy();
    }
  });
});
