// A database as new-api (QuantumNous/new-api) leaves it: its tables with the column types gorm gives its model/
// structs on SQLite, PostgreSQL and MySQL, and realistic rows (bcrypt passwords, tokens stored without "sk-",
// json columns, gorm datetimes, columns added by later releases still NULL in older rows). Used by
// tests/server/newapi-dropin.test.ts, which opens it with Switchyard, and by newApiReadable(), which checks
// after Switchyard wrote to it that new-api could load every row again.
import { sql, type Kysely } from "kysely";
import { dialectOf, type Dialect } from "../../db/dialect.ts";
import { timeMillis } from "../../db/datetime.ts";

/** gorm's column kinds: "int" is Go int (bigint on PostgreSQL and MySQL), "int32" a `type:int` tag, "itext" an
 * indexed string without size (varchar(191) on MySQL), "json" `type:json`, "datetime" time.Time/gorm.DeletedAt. */
type Kind =
  | "pk"
  | "int"
  | "int32"
  | "bool"
  | "float"
  | "text"
  | "itext"
  | "json"
  | "datetime"
  | `varchar(${number})`
  | `char(${number})`;
interface Col {
  name: string;
  kind: Kind;
  notNull?: boolean;
  def?: string | number | boolean;
}
interface Table {
  name: string;
  cols: Col[];
  pk?: string[];
  indexes?: { name: string; cols: string[]; unique?: boolean }[];
}

const c = (name: string, kind: Kind, extra: Omit<Col, "name" | "kind"> = {}): Col => ({ name, kind, ...extra });
const pk = c("id", "pk");

/** new-api's tables (model/*.go of its 0.9 releases), as gorm's AutoMigrate creates them. */
export const NEW_API_TABLES: Table[] = [
  {
    name: "users",
    cols: [
      pk,
      c("username", "itext"),
      c("password", "text", { notNull: true }),
      c("display_name", "itext"),
      c("role", "int32", { def: 1 }),
      c("status", "int32", { def: 1 }),
      c("email", "itext"),
      c("github_id", "itext"),
      c("discord_id", "itext"),
      c("oidc_id", "itext"),
      c("wechat_id", "itext"),
      c("telegram_id", "itext"),
      c("access_token", "char(32)"),
      c("quota", "int32", { def: 0 }),
      c("used_quota", "int32", { def: 0 }),
      c("request_count", "int32", { def: 0 }),
      c("group", "varchar(64)", { def: "default" }),
      c("aff_code", "varchar(32)"),
      c("aff_count", "int32", { def: 0 }),
      c("aff_quota", "int32", { def: 0 }),
      c("aff_history", "int32", { def: 0 }),
      c("inviter_id", "int32"),
      c("deleted_at", "datetime"),
      c("linux_do_id", "itext"),
      c("setting", "text"),
      c("remark", "varchar(255)"),
      c("stripe_customer", "varchar(64)"),
    ],
    indexes: [
      { name: "idx_users_username", cols: ["username"], unique: true },
      { name: "idx_users_access_token", cols: ["access_token"], unique: true },
      { name: "idx_users_aff_code", cols: ["aff_code"], unique: true },
      { name: "idx_users_deleted_at", cols: ["deleted_at"] },
      { name: "idx_users_email", cols: ["email"] },
    ],
  },
  { name: "options", cols: [c("key", "itext", { notNull: true }), c("value", "text")], pk: ["key"] },
  {
    name: "setups",
    cols: [pk, c("version", "varchar(50)", { notNull: true }), c("initialized_at", "int", { notNull: true })],
  },
  {
    name: "tokens",
    cols: [
      pk,
      c("user_id", "int"),
      c("key", "char(48)"),
      c("status", "int", { def: 1 }),
      c("name", "itext"),
      c("created_time", "int"),
      c("accessed_time", "int"),
      c("expired_time", "int", { def: -1 }),
      c("remain_quota", "int", { def: 0 }),
      c("unlimited_quota", "bool"),
      c("model_limits_enabled", "bool"),
      c("model_limits", "varchar(1024)", { def: "" }),
      c("allow_ips", "text"),
      c("used_quota", "int", { def: 0 }),
      c("group", "text", { def: "" }),
      c("deleted_at", "datetime"),
    ],
    indexes: [
      { name: "idx_tokens_key", cols: ["key"], unique: true },
      { name: "idx_tokens_user_id", cols: ["user_id"] },
      { name: "idx_tokens_deleted_at", cols: ["deleted_at"] },
    ],
  },
  {
    name: "channels",
    cols: [
      pk,
      c("type", "int", { def: 0 }),
      c("key", "text", { notNull: true }),
      c("openai_organization", "text"),
      c("test_model", "text"),
      c("status", "int", { def: 1 }),
      c("name", "itext"),
      c("weight", "int", { def: 0 }),
      c("created_time", "int"),
      c("test_time", "int"),
      c("response_time", "int"),
      c("base_url", "text", { def: "" }),
      c("other", "text"),
      c("balance", "float"),
      c("balance_updated_time", "int"),
      c("models", "text"),
      c("group", "varchar(64)", { def: "default" }),
      c("used_quota", "int", { def: 0 }),
      c("model_mapping", "text"),
      c("status_code_mapping", "varchar(1024)", { def: "" }),
      c("priority", "int", { def: 0 }),
      c("auto_ban", "int", { def: 1 }),
      c("other_info", "text"),
      c("tag", "itext"),
      c("setting", "text"),
      c("param_override", "text"),
      c("header_override", "text"),
      c("remark", "varchar(255)"),
      c("channel_info", "json"),
      c("settings", "text"),
    ],
    indexes: [
      { name: "idx_channels_name", cols: ["name"] },
      { name: "idx_channels_tag", cols: ["tag"] },
    ],
  },
  {
    name: "abilities",
    cols: [
      c("group", "varchar(64)", { notNull: true }),
      c("model", "varchar(255)", { notNull: true }),
      c("channel_id", "int", { notNull: true }),
      c("enabled", "bool"),
      c("priority", "int", { def: 0 }),
      c("weight", "int", { def: 0 }),
      c("tag", "itext"),
    ],
    pk: ["group", "model", "channel_id"],
    indexes: [
      { name: "idx_abilities_channel_id", cols: ["channel_id"] },
      { name: "idx_abilities_tag", cols: ["tag"] },
    ],
  },
  {
    name: "redemptions",
    cols: [
      pk,
      c("user_id", "int"),
      c("key", "char(32)"),
      c("status", "int", { def: 1 }),
      c("name", "itext"),
      c("quota", "int", { def: 100 }),
      c("created_time", "int"),
      c("redeemed_time", "int"),
      c("used_user_id", "int"),
      c("deleted_at", "datetime"),
      c("expired_time", "int"),
    ],
    indexes: [
      { name: "idx_redemptions_key", cols: ["key"], unique: true },
      { name: "idx_redemptions_deleted_at", cols: ["deleted_at"] },
    ],
  },
  {
    name: "logs",
    cols: [
      pk,
      c("user_id", "int"),
      c("created_at", "int"),
      c("type", "int"),
      c("content", "text"),
      c("username", "itext", { def: "" }),
      c("token_name", "itext", { def: "" }),
      c("model_name", "itext", { def: "" }),
      c("quota", "int", { def: 0 }),
      c("prompt_tokens", "int", { def: 0 }),
      c("completion_tokens", "int", { def: 0 }),
      c("use_time", "int", { def: 0 }),
      c("is_stream", "bool"),
      c("channel_id", "int"),
      c("token_id", "int", { def: 0 }),
      c("group", "itext"),
      c("ip", "itext", { def: "" }),
      c("other", "text"),
    ],
    indexes: [
      { name: "idx_created_at_type", cols: ["created_at", "type"] },
      { name: "idx_logs_user_id", cols: ["user_id"] },
    ],
  },
  {
    name: "quota_data",
    cols: [
      pk,
      c("user_id", "int"),
      c("username", "varchar(64)", { def: "" }),
      c("model_name", "varchar(64)", { def: "" }),
      c("created_at", "int"),
      c("token_used", "int", { def: 0 }),
      c("count", "int", { def: 0 }),
      c("quota", "int", { def: 0 }),
    ],
    indexes: [
      { name: "idx_qdt_model_user_name", cols: ["model_name", "username"] },
      { name: "idx_qdt_created_at", cols: ["created_at"] },
    ],
  },
  {
    name: "top_ups",
    cols: [
      pk,
      c("user_id", "int"),
      c("amount", "int"),
      c("money", "float"),
      c("trade_no", "varchar(255)"),
      c("payment_method", "varchar(50)"),
      c("create_time", "int"),
      c("complete_time", "int"),
      c("status", "text"),
    ],
    indexes: [{ name: "idx_top_ups_trade_no", cols: ["trade_no"], unique: true }],
  },
  {
    name: "midjourneys",
    cols: [
      pk,
      c("code", "int"),
      c("user_id", "int"),
      c("action", "varchar(40)"),
      c("mj_id", "itext"),
      c("prompt", "text"),
      c("prompt_en", "text"),
      c("description", "text"),
      c("state", "text"),
      c("submit_time", "int"),
      c("start_time", "int"),
      c("finish_time", "int"),
      c("image_url", "text"),
      c("video_url", "text"),
      c("video_urls", "text"),
      c("status", "varchar(20)"),
      c("progress", "varchar(30)"),
      c("fail_reason", "text"),
      c("channel_id", "int"),
      c("quota", "int"),
      c("buttons", "text"),
      c("properties", "text"),
    ],
    indexes: [{ name: "idx_midjourneys_mj_id", cols: ["mj_id"] }],
  },
  {
    name: "tasks",
    cols: [
      pk,
      c("created_at", "int"),
      c("updated_at", "int"),
      c("task_id", "varchar(191)"),
      c("platform", "varchar(30)"),
      c("user_id", "int"),
      c("group", "varchar(50)"),
      c("channel_id", "int"),
      c("quota", "int"),
      c("action", "varchar(40)"),
      c("status", "varchar(20)"),
      c("fail_reason", "text"),
      c("submit_time", "int"),
      c("start_time", "int"),
      c("finish_time", "int"),
      c("progress", "varchar(20)"),
      c("properties", "json"),
      c("private_data", "json"),
      c("data", "json"),
    ],
    indexes: [{ name: "idx_tasks_task_id", cols: ["task_id"] }],
  },
  {
    name: "two_fas",
    cols: [
      pk,
      c("user_id", "int", { notNull: true }),
      c("secret", "varchar(255)", { notNull: true }),
      c("is_enabled", "bool"),
      c("failed_attempts", "int", { def: 0 }),
      c("locked_until", "datetime"),
      c("last_used_at", "datetime"),
      c("created_at", "datetime"),
      c("updated_at", "datetime"),
      c("deleted_at", "datetime"),
    ],
    indexes: [{ name: "idx_two_fas_user_id", cols: ["user_id"], unique: true }],
  },
  {
    name: "two_fa_backup_codes",
    cols: [
      pk,
      c("user_id", "int", { notNull: true }),
      c("code_hash", "varchar(255)", { notNull: true }),
      c("is_used", "bool"),
      c("used_at", "datetime"),
      c("created_at", "datetime"),
      c("deleted_at", "datetime"),
    ],
  },
  {
    name: "passkey_credentials",
    cols: [
      pk,
      c("user_id", "int", { notNull: true }),
      c("credential_id", "varchar(512)", { notNull: true }),
      c("public_key", "text", { notNull: true }),
      c("attestation_type", "varchar(255)"),
      c("aaguid", "varchar(512)"),
      c("sign_count", "int"),
      c("clone_warning", "bool"),
      c("user_present", "bool"),
      c("user_verified", "bool"),
      c("backup_eligible", "bool"),
      c("backup_state", "bool"),
      c("transports", "text"),
      c("attachment", "varchar(32)"),
      c("last_used_at", "datetime"),
      c("created_at", "datetime"),
      c("updated_at", "datetime"),
      c("deleted_at", "datetime"),
    ],
  },
  {
    name: "checkins",
    cols: [
      pk,
      c("user_id", "int", { notNull: true }),
      c("checkin_date", "varchar(10)", { notNull: true }),
      c("quota_awarded", "int", { notNull: true }),
      c("created_at", "int"),
    ],
    indexes: [{ name: "idx_user_checkin_date", cols: ["user_id", "checkin_date"], unique: true }],
  },
  {
    name: "vendors",
    cols: [
      pk,
      c("name", "varchar(128)", { notNull: true }),
      c("description", "text"),
      c("icon", "varchar(128)"),
      c("status", "int", { def: 1 }),
      c("created_time", "int"),
      c("updated_time", "int"),
      c("deleted_at", "datetime"),
    ],
    indexes: [{ name: "uk_vendor_name_delete_at", cols: ["name", "deleted_at"], unique: true }],
  },
  {
    name: "models",
    cols: [
      pk,
      c("model_name", "varchar(128)", { notNull: true }),
      c("description", "text"),
      c("icon", "varchar(128)"),
      c("tags", "varchar(255)"),
      c("vendor_id", "int"),
      c("endpoints", "text"),
      c("status", "int", { def: 1 }),
      c("sync_official", "int", { def: 1 }),
      c("created_time", "int"),
      c("updated_time", "int"),
      c("deleted_at", "datetime"),
      c("name_rule", "int", { def: 0 }),
    ],
    indexes: [{ name: "uk_model_name_delete_at", cols: ["model_name", "deleted_at"], unique: true }],
  },
  {
    name: "prefill_groups",
    cols: [
      pk,
      c("name", "varchar(64)", { notNull: true }),
      c("type", "varchar(32)", { notNull: true }),
      c("items", "json"),
      c("description", "varchar(255)"),
      c("created_time", "int"),
      c("updated_time", "int"),
      c("deleted_at", "datetime"),
    ],
  },
];

function typeOf(col: Col, d: Dialect): string {
  const k = col.kind;
  if (k === "pk")
    return d === "postgres"
      ? "bigserial primary key"
      : d === "mysql"
        ? "bigint unsigned auto_increment primary key"
        : "integer primary key autoincrement";
  if (k.startsWith("varchar") || k.startsWith("char")) return k;
  switch (k) {
    case "int":
      return d === "sqlite" ? "integer" : "bigint";
    case "int32":
      return d === "mysql" ? "int" : "integer";
    case "bool":
      return d === "sqlite" ? "numeric" : "boolean";
    case "float":
      return d === "postgres" ? "decimal" : d === "mysql" ? "double" : "real";
    case "text":
      return d === "mysql" ? "longtext" : "text";
    case "itext":
      return d === "mysql" ? "varchar(191)" : "text";
    case "json":
      return "json";
    case "datetime":
      return d === "postgres" ? "timestamptz" : d === "mysql" ? "datetime(3)" : "datetime";
  }
  throw new Error(`unknown kind ${k}`);
}

/** Creates new-api's tables (no rows). */
export async function createNewApiSchema(db: Kysely<any>): Promise<void> {
  const d = dialectOf(db);
  const q = (s: string) => (d === "mysql" ? `\`${s}\`` : `"${s}"`);
  for (const t of NEW_API_TABLES) {
    const cols = t.cols.map((col) => {
      let s = `${q(col.name)} ${typeOf(col, d)}`;
      if (col.notNull) s += " not null";
      const noDefault = d === "mysql" && ["text", "json"].includes(col.kind);
      if (col.def !== undefined && !noDefault)
        s += ` default ${typeof col.def === "string" ? `'${col.def}'` : typeof col.def === "boolean" ? (d === "postgres" ? col.def : Number(col.def)) : col.def}`;
      return s;
    });
    if (t.pk) cols.push(`primary key (${t.pk.map(q).join(", ")})`);
    await sql.raw(`create table ${q(t.name)} (${cols.join(", ")})`).execute(db);
    for (const i of t.indexes ?? [])
      await sql
        .raw(`create ${i.unique ? "unique " : ""}index ${q(i.name)} on ${q(t.name)} (${i.cols.map(q).join(", ")})`)
        .execute(db);
  }
}

export const OLD_PASSWORDS = { root: "oldroot1234", alice: "alicepass1", bob: "bobpass123" } as const;
export const ALICE_TOKEN = "aliceOldToken000000000000000000000000000000000001".slice(0, 48);
export const BOB_TOKEN = "bobOldToken00000000000000000000000000000000000002".slice(0, 48);
export const DELETED_TOKEN = "deletedToken0000000000000000000000000000000000003".slice(0, 48);
export const REDEMPTION = {
  unused: "U".repeat(32),
  used: "S".repeat(32),
  expired: "E".repeat(32),
  disabled: "D".repeat(32),
};
/** channel_info exactly as gorm marshals new-api's ChannelInfo for a single-key channel. */
export const GORM_CHANNEL_INFO =
  '{"is_multi_key":false,"multi_key_size":0,"multi_key_status_list":null,"multi_key_polling_index":0,"multi_key_mode":""}';

const now = () => Math.floor(Date.now() / 1000);

/**
 * Fills the tables with rows as new-api writes them. `upstream` is the mock OpenAI base URL the channels point at.
 * Returns the ids the test refers to.
 */
export async function seedNewApiRows(db: Kysely<any>, upstream: string, hash: (p: string) => Promise<string>) {
  const d = dialectOf(db);
  const bool = (b: boolean) => (d === "postgres" ? b : b ? 1 : 0);
  // gorm's datetime: text with nanoseconds and an offset on SQLite, native on the others
  const time = (ms: number) =>
    d === "sqlite"
      ? `${new Date(ms + 8 * 3600_000).toISOString().slice(0, 19).replace("T", " ")}.123456789+08:00`
      : new Date(ms);
  // gorm hands the driver a json column's value as bytes: a BLOB on SQLite, json on the others
  const json = (text: string | null) => (d === "sqlite" && text !== null ? Buffer.from(text) : text);
  const ins = async (table: string, rows: Record<string, unknown>[]) => {
    for (const r of rows) await db.insertInto(table).values(r).execute();
  };
  const t = now();
  await ins("setups", [{ version: "v0.9.0", initialized_at: t - 86400 * 30 }]);
  // Columns a later new-api release added (discord_id, linux_do_id, remark, stripe_customer ...) stay NULL in older rows.
  await ins("users", [
    {
      username: "root",
      password: await hash(OLD_PASSWORDS.root),
      display_name: "Root User",
      role: 100,
      status: 1,
      email: "",
      github_id: "",
      oidc_id: "",
      wechat_id: "",
      telegram_id: "",
      access_token: "rootaccesstoken0000000000000000x",
      quota: 100000000,
      used_quota: 0,
      request_count: 0,
      group: "default",
      aff_code: "ROOT",
      setting: "",
    },
    {
      username: "alice",
      password: await hash(OLD_PASSWORDS.alice),
      display_name: "Alice",
      role: 1,
      status: 1,
      email: "alice@example.com",
      github_id: null,
      oidc_id: null,
      wechat_id: null,
      telegram_id: null,
      quota: 1_000_000,
      used_quota: 250_000,
      request_count: 12,
      group: "default",
      aff_code: "ALIC",
      aff_count: 0,
      inviter_id: 0,
      setting: null,
    },
    {
      username: "bob",
      password: await hash(OLD_PASSWORDS.bob),
      display_name: "Bob",
      role: 1,
      status: 1,
      email: "",
      quota: 2_000_000,
      used_quota: 0,
      request_count: 0,
      group: "vip",
      aff_code: "BOBB",
      setting: '{"notify_type":"email","quota_warning_threshold":1000}',
    },
    {
      username: "gone",
      password: await hash("gonepass12"),
      display_name: "Gone",
      role: 1,
      status: 1,
      quota: 0,
      group: "default",
      aff_code: "GONE",
      deleted_at: time(Date.now() - 86400_000),
    },
  ]);
  const ids = Object.fromEntries(
    (await db.selectFrom("users").select(["id", "username"]).execute()).map((u: any) => [u.username, Number(u.id)]),
  );
  await ins(
    "options",
    [
      ["SystemName", "Old New API"],
      ["ModelRatio", JSON.stringify({ "gpt-3.5-turbo": 0.25, "gpt-4o": 1.25, "gpt-4o-mini": 0.075 })],
      ["CompletionRatio", JSON.stringify({ "gpt-4o-mini": 4 })],
      ["GroupRatio", JSON.stringify({ default: 1, vip: 1.5 })],
      ["UserUsableGroups", JSON.stringify({ default: "默认分组", vip: "vip分组" })],
      ["ModelPrice", JSON.stringify({ "dall-e-3": 0.04 })],
      ["DisplayInCurrencyEnabled", "true"],
      ["general_setting.quota_display_type", "CNY"],
      ["USDExchangeRate", "7.2"],
      [
        "console_setting.announcements",
        JSON.stringify([{ content: "维护通知", publishDate: "2025-05-01T08:00:00+08:00", type: "warning" }]),
      ],
      ["console_setting.faq", JSON.stringify([{ question: "怎么充值？", answer: "兑换码" }])],
      ["console_setting.api_info_enabled", "false"],
      ["AutomaticDisableStatusCodes", "401,403"],
      ["monitor_setting.auto_test_channel_enabled", "false"],
      ["checkin_setting.enabled", "true"],
      ["checkin_setting.min_quota", "1000"],
      ["checkin_setting.max_quota", "2000"],
      ["DataExportEnabled", "true"],
      ["RetryTimes", "0"],
      ["fetch_setting.enable_ssrf_protection", "true"],
      ["passkey.enabled", "false"],
      ["StripeApiSecret", "sk_live_old_stripe"],
      [
        "HeaderNavModules",
        '{"home":true,"console":true,"pricing":{"enabled":true,"requireAuth":false},"docs":true,"about":true}',
      ],
    ].map(([key, value]) => ({ key, value })),
  );
  await ins("tokens", [
    {
      user_id: ids.alice,
      key: ALICE_TOKEN,
      status: 1,
      name: "alice-main",
      created_time: t - 86400,
      accessed_time: t - 3600,
      expired_time: -1,
      remain_quota: 500_000,
      unlimited_quota: bool(false),
      model_limits_enabled: bool(false),
      model_limits: "",
      allow_ips: "",
      used_quota: 10_000,
      group: "",
    },
    {
      user_id: ids.bob,
      key: BOB_TOKEN,
      status: 1,
      name: "bob-main",
      created_time: t - 86400,
      accessed_time: t,
      expired_time: -1,
      remain_quota: 0,
      unlimited_quota: bool(true),
      model_limits_enabled: bool(false),
      model_limits: "",
      allow_ips: null,
      used_quota: 0,
      group: "",
    },
    {
      user_id: ids.alice,
      key: DELETED_TOKEN,
      status: 1,
      name: "alice-deleted",
      created_time: t - 86400 * 2,
      accessed_time: t - 86400,
      expired_time: -1,
      remain_quota: 500_000,
      unlimited_quota: bool(false),
      model_limits_enabled: bool(false),
      model_limits: "",
      allow_ips: "",
      used_quota: 0,
      group: "",
      deleted_at: time(Date.now() - 3600_000),
    },
  ]);
  const channel = (over: Record<string, unknown>) => ({
    type: 1,
    key: "sk-upstream-old",
    openai_organization: null,
    test_model: null,
    status: 1,
    name: "openai",
    weight: 0,
    created_time: t - 86400 * 10,
    test_time: 0,
    response_time: 0,
    base_url: upstream,
    other: "",
    balance: 12.5,
    balance_updated_time: 0,
    models: "gpt-3.5-turbo",
    group: "default",
    used_quota: 0,
    model_mapping: null,
    status_code_mapping: "",
    priority: 0,
    auto_ban: 1,
    other_info: "",
    tag: null,
    setting: null,
    param_override: null,
    ...over,
    channel_info: json((over.channel_info ?? GORM_CHANNEL_INFO) as string | null),
  });
  await ins("channels", [
    channel({ name: "openai-default", models: "gpt-3.5-turbo,gpt-4o", group: "default,vip" }),
    // A multi-key channel whose second key new-api disabled (status list keys are Go ints, JSON strings).
    channel({
      name: "multi",
      key: "sk-multi-k0\nsk-multi-k1",
      models: "gpt-4o-mini",
      group: "default",
      tag: "team",
      channel_info:
        '{"is_multi_key":true,"multi_key_size":2,"multi_key_status_list":{"1":2},"multi_key_disabled_reason":{"1":"manual"},"multi_key_disabled_time":{"1":1700000000},"multi_key_polling_index":0,"multi_key_mode":"polling"}',
    }),
    channel({
      name: "old-disabled",
      status: 3,
      models: "gpt-4",
      other_info: '{"status_reason":"401","status_time":1700000000}',
      channel_info: null,
      tag: "team",
    }),
  ]);
  const ch = Object.fromEntries(
    (await db.selectFrom("channels").select(["id", "name"]).execute()).map((r: any) => [r.name, Number(r.id)]),
  );
  await ins("abilities", [
    {
      group: "default",
      model: "gpt-3.5-turbo",
      channel_id: ch["openai-default"],
      enabled: bool(true),
      priority: 0,
      weight: 0,
      tag: null,
    },
    {
      group: "default",
      model: "gpt-4o",
      channel_id: ch["openai-default"],
      enabled: bool(true),
      priority: 0,
      weight: 0,
      tag: null,
    },
    {
      group: "vip",
      model: "gpt-3.5-turbo",
      channel_id: ch["openai-default"],
      enabled: bool(true),
      priority: 0,
      weight: 0,
      tag: null,
    },
    {
      group: "vip",
      model: "gpt-4o",
      channel_id: ch["openai-default"],
      enabled: bool(true),
      priority: 0,
      weight: 0,
      tag: null,
    },
    {
      group: "default",
      model: "gpt-4o-mini",
      channel_id: ch.multi,
      enabled: bool(true),
      priority: 0,
      weight: 0,
      tag: "team",
    },
    {
      group: "default",
      model: "gpt-4",
      channel_id: ch["old-disabled"],
      enabled: bool(false),
      priority: 0,
      weight: 0,
      tag: "team",
    },
  ]);
  await ins("redemptions", [
    {
      user_id: ids.root,
      key: REDEMPTION.unused,
      status: 1,
      name: "promo",
      quota: 300_000,
      created_time: t - 100,
      redeemed_time: 0,
      used_user_id: 0,
      expired_time: 0,
    },
    {
      user_id: ids.root,
      key: REDEMPTION.used,
      status: 3,
      name: "promo",
      quota: 300_000,
      created_time: t - 100,
      redeemed_time: t - 50,
      used_user_id: ids.alice,
      expired_time: 0,
    },
    {
      user_id: ids.root,
      key: REDEMPTION.expired,
      status: 1,
      name: "old-promo",
      quota: 300_000,
      created_time: t - 86400 * 5,
      redeemed_time: 0,
      used_user_id: 0,
      expired_time: t - 86400,
    },
    {
      user_id: ids.root,
      key: REDEMPTION.disabled,
      status: 2,
      name: "off",
      quota: 1,
      created_time: t - 100,
      redeemed_time: 0,
      used_user_id: 0,
      expired_time: null,
    },
  ]);
  await ins("logs", [
    {
      user_id: ids.alice,
      created_at: t - 7200,
      type: 2,
      content: "模型倍率 0.25，补全倍率 3",
      username: "alice",
      token_name: "alice-main",
      model_name: "gpt-3.5-turbo",
      quota: 6,
      prompt_tokens: 9,
      completion_tokens: 5,
      use_time: 1,
      is_stream: bool(false),
      channel_id: ch["openai-default"],
      token_id: 1,
      group: "default",
      ip: "",
      other: '{"model_ratio":0.25,"group_ratio":1,"completion_ratio":3,"frt":-1000}',
    },
    {
      user_id: ids.alice,
      created_at: t - 7000,
      type: 1,
      content: "通过兑换码充值 $0.60",
      username: "alice",
      quota: 300_000,
      is_stream: bool(false),
      channel_id: 0,
      other: "",
    },
  ]);
  await ins("quota_data", [
    {
      user_id: ids.alice,
      username: "alice",
      model_name: "gpt-3.5-turbo",
      created_at: t - (t % 3600) - 3600,
      token_used: 14,
      count: 1,
      quota: 6,
    },
  ]);
  await ins("top_ups", [
    {
      user_id: ids.alice,
      amount: 10,
      money: 73,
      trade_no: "USR2NOoldtrade1",
      payment_method: "alipay",
      create_time: t - 86400,
      complete_time: t - 86300,
      status: "success",
    },
    {
      user_id: ids.alice,
      amount: 5,
      money: 36.5,
      trade_no: "USR2NOoldtrade2",
      payment_method: "wxpay",
      create_time: t - 3600,
      complete_time: 0,
      status: "pending",
    },
  ]);
  await ins("midjourneys", [
    {
      code: 1,
      user_id: ids.alice,
      action: "IMAGINE",
      mj_id: "1700000000123456",
      prompt: "a cat",
      prompt_en: "a cat",
      description: "",
      state: "",
      submit_time: (t - 600) * 1000,
      start_time: (t - 590) * 1000,
      finish_time: (t - 500) * 1000,
      image_url: "https://cdn.example.com/cat.png",
      status: "SUCCESS",
      progress: "100%",
      fail_reason: "",
      channel_id: ch["openai-default"],
      quota: 50_000,
      buttons: "[]",
      properties: "",
    },
  ]);
  await ins("tasks", [
    {
      created_at: t - 300,
      updated_at: t - 200,
      task_id: "suno-old-1",
      platform: "suno",
      user_id: ids.alice,
      group: "default",
      channel_id: ch["openai-default"],
      quota: 50_000,
      action: "MUSIC",
      status: "SUCCESS",
      fail_reason: "",
      submit_time: t - 300,
      start_time: t - 290,
      finish_time: t - 200,
      progress: "100%",
      properties: json('{"input":"a song"}'),
      private_data: json('{"key":"sk-upstream-old"}'),
      data: json('[{"id":"clip1","status":"complete"}]'),
    },
  ]);
  await ins("two_fas", [
    {
      user_id: ids.bob,
      secret: "JBSWY3DPEHPK3PXP",
      is_enabled: bool(false),
      failed_attempts: 0,
      created_at: time(Date.now() - 86400_000),
      updated_at: time(Date.now() - 86400_000),
    },
  ]);
  await ins("checkins", [
    { user_id: ids.alice, checkin_date: "2025-01-01", quota_awarded: 1500, created_at: 1735689600 },
  ]);
  await ins("vendors", [
    { name: "OpenAI", description: "", icon: "OpenAI", status: 1, created_time: t, updated_time: t },
  ]);
  await ins("models", [
    {
      model_name: "gpt-4o",
      description: "omni",
      icon: "",
      tags: "chat",
      vendor_id: 1,
      endpoints: '["openai"]',
      status: 1,
      sync_official: 1,
      created_time: t,
      updated_time: t,
      name_rule: 0,
    },
  ]);
  await ins("prefill_groups", [
    {
      name: "openai-models",
      type: "model",
      items: json('["gpt-4o","gpt-4o-mini"]'),
      description: "",
      created_time: t,
      updated_time: t,
    },
  ]);
  return { users: ids, channels: ch };
}

/** Columns gorm reads as these kinds, per table: what newApiReadable checks. */
const KINDS = new Map(NEW_API_TABLES.map((t) => [t.name, new Map(t.cols.map((c) => [c.name, c.kind]))]));

/** modernc.org/sqlite's time layouts (what new-api's SQLite driver parses a datetime column's text with). */
const SQLITE_TIME = /^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * What new-api would fail on when loading these tables again: a json column holding text that is not JSON (or
 * channel_info not an object in ChannelInfo's shape), a datetime it cannot parse, a number stored as text, a
 * bool that is neither 0/1 nor true/false. Returns one line per problem (empty when new-api can read it all).
 */
export async function newApiReadable(db: Kysely<any>): Promise<string[]> {
  const d = dialectOf(db);
  const problems: string[] = [];
  for (const [table, kinds] of KINDS) {
    const present = (await db.introspection.getTables()).find((t) => t.name === table);
    if (!present) continue;
    const cols = [...kinds.keys()].filter((k) => present.columns.some((c) => c.name === k));
    // SQLite keeps each value's own type: ask it, so an integer column holding '5' is caught.
    const typed = d === "sqlite" ? cols.map((c) => sql`typeof(${sql.ref(c)})`.as(`t_${c}`)) : [];
    const rows = await db
      .selectFrom(table)
      .select([...cols.map((c) => sql.ref(c).as(c)), ...typed] as any)
      .execute();
    for (const [i, row] of rows.entries()) {
      for (const col of cols) {
        const kind = kinds.get(col)!;
        const v = (row as any)[col];
        const where = `${table}[${i}].${col}`;
        if (v === null || v === undefined) continue;
        const storage = (row as any)[`t_${col}`];
        if (kind === "json") {
          // new-api's readers of these columns take only bytes on SQLite: TEXT fails the row or reads empty
          if (d === "sqlite" && storage !== "blob")
            problems.push(`${where}: ${storage} where new-api writes and reads a blob`);
          let parsed: unknown;
          try {
            parsed = JSON.parse(v instanceof Uint8Array ? new TextDecoder().decode(v) : String(v));
          } catch {
            problems.push(`${where}: not JSON: ${JSON.stringify(v)}`);
            continue;
          }
          if (table === "channels" && col === "channel_info") {
            const o = parsed as any;
            if (!o || typeof o !== "object" || Array.isArray(o)) problems.push(`${where}: not an object: ${v}`);
            else {
              if (
                typeof o.is_multi_key !== "boolean"
                || typeof o.multi_key_size !== "number"
                || typeof o.multi_key_polling_index !== "number"
                || typeof o.multi_key_mode !== "string"
              ) {
                problems.push(`${where}: not new-api's ChannelInfo: ${v}`);
              }
              for (const m of ["multi_key_status_list", "multi_key_disabled_time", "multi_key_disabled_reason"]) {
                const map = o[m];
                if (map === undefined || map === null) continue;
                if (typeof map !== "object" || Object.keys(map).some((k) => !/^\d+$/.test(k)))
                  problems.push(`${where}.${m}: keys must be key indexes`);
              }
            }
          }
        } else if (kind === "datetime") {
          if (d === "sqlite") {
            if (storage !== "text" || !SQLITE_TIME.test(String(v)))
              problems.push(`${where}: datetime text gorm cannot parse: ${JSON.stringify(v)}`);
          } else if (timeMillis(v) === null) problems.push(`${where}: not a time: ${v}`);
        } else if (kind === "int" || kind === "int32" || kind === "pk") {
          if (d === "sqlite" ? storage !== "integer" : !Number.isInteger(Number(v)))
            problems.push(`${where}: not an integer: ${JSON.stringify(v)} (${storage ?? typeof v})`);
        } else if (kind === "bool") {
          const ok =
            d === "postgres"
              ? typeof v === "boolean"
              : (v === 0 || v === 1) && (d !== "sqlite" || storage === "integer");
          if (!ok) problems.push(`${where}: not a bool: ${JSON.stringify(v)}`);
        } else if (kind === "float") {
          if (!Number.isFinite(Number(v)) || (d === "sqlite" && storage === "text"))
            problems.push(`${where}: not a number: ${JSON.stringify(v)}`);
        }
      }
    }
  }
  return problems;
}
