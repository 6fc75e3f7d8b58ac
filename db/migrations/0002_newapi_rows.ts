// Rows earlier Switchyard versions wrote in a form new-api cannot load back: channels whose channel_info was ''
// or the JSON string "" (PostgreSQL's driver encoded the text once more). new-api's gorm reads channel_info into
// an object and fails on anything else, so they get the object a single-key channel carries. Runs once.
import { sql, type Kysely } from "kysely";
import { dialectOf } from "../dialect.ts";
import { up as reconcileSchema } from "./0001_init.ts";

/** new-api's ChannelInfo of a single-key channel (server/modules/channel/keys.ts serializeChannelInfo(null)). */
export const SINGLE_KEY_CHANNEL_INFO =
  '{"is_multi_key":false,"multi_key_size":0,"multi_key_status_list":null,"multi_key_polling_index":0,"multi_key_mode":""}';

export async function up(db: Kysely<any>): Promise<void> {
  const text = dialectOf(db) === "postgres" ? sql`channel_info::text` : sql`channel_info`;
  const repair = () =>
    sql`update channels set channel_info = ${SINGLE_KEY_CHANNEL_INFO}
    where channel_info is null or ${text} in ('', '""', 'null')`.execute(db);
  // A database from before channel_info existed gets its columns first (migrate() would add them only after the
  // numbered migrations). Not try/catch: on PostgreSQL a failed statement aborts the migration's transaction.
  const channels = (await db.introspection.getTables()).find((t) => t.name === "channels");
  if (!channels?.columns.some((c) => c.name === "channel_info")) await reconcileSchema(db);
  await repair();
}

export async function down(): Promise<void> {}
