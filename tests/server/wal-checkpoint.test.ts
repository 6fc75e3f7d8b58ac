// The WAL is checkpointed by a worker thread's own connection, never by a commit on the event loop: the
// main connection's automatic checkpoint is off while the worker runs, and the log is still copied back.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, rawSqlite } from "../../db/index.ts";
import { startWalCheckpointer } from "../../server/infra/wal-checkpoint.ts";
import { insertRows } from "../../db/bulk.ts";

test("a worker checkpoints the WAL; the main connection does not", async () => {
  const dir = mkdtempSync(join(tmpdir(), "sy-wal-"));
  const path = join(dir, "x.db");
  const db = await openDatabase({ kind: "sqlite", url: "", sqlitePath: path });
  const cp = startWalCheckpointer(db, path, 50)!;
  try {
    expect(cp).not.toBeNull();
    await cp.next();
    const raw = rawSqlite(db)!;
    expect((raw.query("PRAGMA wal_autocheckpoint").get() as any).wal_autocheckpoint).toBe(0);
    const rows = Array.from({ length: 5000 }, (_, i) => ({ user_id: 1, created_at: i, type: 2, content: "x".repeat(200), username: "u", quota: 1 }));
    await insertRows(db, "logs", rows);
    // The main connection never checkpoints now, so only the worker can have copied the ~1 MB of rows from
    // the log into the database file: wait for a checkpoint that took every frame, then look at the file.
    let r = await cp.next();
    for (let i = 0; i < 40 && (r.checkpointed < r.log || statSync(path).size < 1_000_000); i++) r = await cp.next();
    expect(r.checkpointed).toBe(r.log);
    expect(statSync(path).size).toBeGreaterThan(1_000_000);
  } finally {
    await cp.stop();
    expect((rawSqlite(db)!.query("PRAGMA wal_autocheckpoint").get() as any).wal_autocheckpoint).toBe(1000);
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
});
