// Writing one log row from any module (redemption, top-up, admin actions). Accepts a transaction so the
// log commits or rolls back together with the quota movement it describes.
import type { Kysely, Transaction } from "kysely";
import type { DB, NewLog } from "../../../db/schema.ts";
import { nowSeconds } from "../../../db/index.ts";

export type LogEntry = Omit<NewLog, "created_at"> & { created_at?: number };

export async function writeLog(db: Kysely<DB> | Transaction<DB>, entry: LogEntry): Promise<void> {
  await db
    .insertInto("logs")
    .values({ created_at: nowSeconds(), ...entry })
    .execute();
}
