// The books of one user and token, read straight from the database a gateway process runs on (SQLite in its
// data folder, or PostgreSQL / MySQL), for the tests that check money is conserved across failures.
import { Database } from "bun:sqlite";
import { join } from "node:path";
import postgres from "postgres";
import { createConnection } from "mysql2/promise";
import type { TempDb } from "./db.ts";

export interface Books {
  userQuota: number;
  userUsed: number;
  tokenRemain: number;
  tokenUsed: number;
  logged: number;
  logs: number;
  holds: number;
}

/** The books in one statement, so one snapshot: read apart, a refund committing between the user's row and the
 * hold count showed a balance short by exactly one hold with no hold left. `db` null: SQLite in `dataDir`. */
export async function readBooks(db: TempDb | null, dataDir: string, userId: number, tokenId: number): Promise<Books> {
  const one = `select
    (select quota from users where id = ${userId}) as user_quota, (select used_quota from users where id = ${userId}) as user_used,
    (select remain_quota from tokens where id = ${tokenId}) as token_remain, (select used_quota from tokens where id = ${tokenId}) as token_used,
    (select count(*) from logs where type = 2 and user_id = ${userId}) as logs, (select coalesce(sum(quota), 0) from logs where type = 2 and user_id = ${userId}) as logged,
    (select count(*) from quota_holds) as holds`;
  let row: any;
  if (!db || db.kind === "sqlite") {
    const lite = new Database(join(dataDir, "switchyard.db"), { readonly: true });
    row = lite.query(one).get();
    lite.close();
  } else if (db.kind === "postgres") {
    const pg = postgres(db.url, { max: 1, onnotice: () => {} });
    row = (await pg.unsafe(one))[0];
    await pg.end();
  } else {
    const my = await createConnection(db.url);
    row = ((await my.query(one)) as any)[0][0];
    await my.end();
  }
  return {
    userQuota: Number(row.user_quota),
    userUsed: Number(row.user_used),
    tokenRemain: Number(row.token_remain),
    tokenUsed: Number(row.token_used),
    logged: Number(row.logged),
    logs: Number(row.logs),
    holds: Number(row.holds),
  };
}
