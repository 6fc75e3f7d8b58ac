// Table definitions as data, so the first migration can create a fresh database or complete an existing
// one-api/new-api database by adding only the columns it lacks. Column names must match db/schema.ts.
/** "json": gorm's `type:json`: json on PostgreSQL and MySQL, where a value must be valid JSON. A new-api database
 * has it for channel_info and tasks.properties/data/private_data (created here as text, but written as valid
 * JSON only, so new-api's migration can turn them into json), and prefill_groups.items. */
export type ColumnType =
  | "id"
  | "int"
  | "bigint"
  | "bool"
  | "float"
  | "text"
  | "json"
  | "datetime"
  | `varchar(${number})`;

export interface ColumnDef {
  name: string;
  type: ColumnType;
  notNull?: boolean;
  default?: string | number | boolean;
  unique?: boolean;
}

export interface TableDef {
  name: string;
  columns: ColumnDef[];
  /** Composite primary key, when the table has no "id" column. */
  primaryKey?: string[];
  indexes?: { name: string; columns: string[]; unique?: boolean }[];
}

const c = (name: string, type: ColumnType, extra: Omit<ColumnDef, "name" | "type"> = {}): ColumnDef => ({
  name,
  type,
  ...extra,
});
const id = c("id", "id");
const s = (name: string, len = 255, def: string | undefined = "") =>
  c(name, `varchar(${len})`, def === undefined ? {} : { default: def });
const n = (name: string, def = 0) => c(name, "bigint", { notNull: true, default: def });
const i = (name: string, def = 0) => c(name, "int", { notNull: true, default: def });
const b = (name: string, def = false) => c(name, "bool", { default: def });
const t = (name: string) => c(name, "text");
const j = (name: string) => c(name, "json");

export const TABLES: TableDef[] = [
  {
    name: "users",
    columns: [
      id,
      c("username", "varchar(64)", { notNull: true, unique: true }),
      c("password", "varchar(255)", { notNull: true }),
      s("display_name", 64),
      i("role", 1),
      i("status", 1),
      s("email", 255),
      s("github_id", 64),
      s("oidc_id", 128),
      s("wechat_id", 64),
      s("telegram_id", 64),
      s("linux_do_id", 64),
      c("access_token", "varchar(64)", { unique: true }),
      n("quota"),
      n("used_quota"),
      i("request_count"),
      s("group", 64, "default"),
      c("aff_code", "varchar(32)", { unique: true }),
      i("aff_count"),
      n("aff_quota"),
      n("aff_history"),
      i("inviter_id"),
      c("deleted_at", "datetime"),
      t("setting"),
      n("created_time"),
      i("session_version"),
      // new-api's: when the account was made and last signed in (unix seconds; 0 = never or unknown)
      n("created_at"),
      n("last_login_at"),
    ],
    indexes: [
      { name: "idx_users_email", columns: ["email"] },
      { name: "idx_users_deleted_at", columns: ["deleted_at"] },
      // Third-party sign-in finds the user by the provider's id (server/modules/oauth).
      { name: "idx_users_github_id", columns: ["github_id"] },
      { name: "idx_users_oidc_id", columns: ["oidc_id"] },
      { name: "idx_users_wechat_id", columns: ["wechat_id"] },
      { name: "idx_users_telegram_id", columns: ["telegram_id"] },
      { name: "idx_users_linux_do_id", columns: ["linux_do_id"] },
    ],
  },
  { name: "options", columns: [c("key", "varchar(128)", { notNull: true }), t("value")], primaryKey: ["key"] },
  { name: "setups", columns: [id, s("version", 64), n("initialized_at")] },
  {
    name: "tokens",
    columns: [
      id,
      i("user_id"),
      c("key", "varchar(64)", { notNull: true, unique: true }),
      i("status", 1),
      s("name", 255),
      n("created_time"),
      n("accessed_time"),
      n("expired_time", -1),
      n("remain_quota"),
      b("unlimited_quota"),
      b("model_limits_enabled"),
      s("model_limits", 1024),
      t("allow_ips"),
      n("used_quota"),
      s("group", 64),
      c("deleted_at", "datetime"),
      // Per-token limits and the resetting budget (migration 0003_token_limits; server/modules/token/limits.ts).
      i("rpm_limit"),
      n("tpm_limit"),
      i("concurrency_limit"),
      n("budget_quota"),
      s("budget_period", 16),
      n("budget_used"),
      n("budget_reset_at"),
    ],
    indexes: [
      { name: "idx_tokens_user_id", columns: ["user_id"] },
      { name: "idx_tokens_name", columns: ["name"] },
    ],
  },
  {
    name: "channels",
    columns: [
      id,
      i("type", 1),
      c("key", "text", { notNull: true }),
      s("openai_organization", 255, undefined),
      s("test_model", 255, undefined),
      i("status", 1),
      s("name", 255),
      n("weight"),
      n("created_time"),
      n("test_time"),
      n("response_time"),
      s("base_url", 512),
      t("other"),
      c("balance", "float", { default: 0 }),
      n("balance_updated_time"),
      t("models"),
      s("group", 255, "default"),
      n("used_quota"),
      t("model_mapping"),
      s("status_code_mapping", 1024),
      n("priority"),
      i("auto_ban", 1),
      t("other_info"),
      s("tag", 255, undefined),
      t("setting"),
      t("param_override"),
      t("channel_info"),
      i("max_input_tokens"),
    ],
    indexes: [
      { name: "idx_channels_name", columns: ["name"] },
      { name: "idx_channels_tag", columns: ["tag"] },
    ],
  },
  {
    name: "abilities",
    columns: [
      c("group", "varchar(64)", { notNull: true }),
      c("model", "varchar(255)", { notNull: true }),
      c("channel_id", "int", { notNull: true }),
      b("enabled", true),
      n("priority"),
      n("weight"),
      s("tag", 255, undefined),
    ],
    primaryKey: ["group", "model", "channel_id"],
    indexes: [
      { name: "idx_abilities_channel_id", columns: ["channel_id"] },
      { name: "idx_abilities_tag", columns: ["tag"] },
    ],
  },
  {
    name: "redemptions",
    columns: [
      id,
      i("user_id"),
      c("key", "varchar(64)", { notNull: true, unique: true }),
      i("status", 1),
      s("name", 255),
      n("quota", 100),
      n("created_time"),
      n("redeemed_time"),
      i("used_user_id"),
      c("deleted_at", "datetime"),
      // new-api's: unix seconds after which the code no longer redeems (0 = never)
      n("expired_time"),
    ],
    indexes: [{ name: "idx_redemptions_name", columns: ["name"] }],
  },
  {
    name: "logs",
    columns: [
      id,
      i("user_id"),
      n("created_at"),
      i("type"),
      t("content"),
      s("username", 64),
      s("token_name", 255),
      s("model_name", 255),
      n("quota"),
      i("prompt_tokens"),
      i("completion_tokens"),
      i("use_time"),
      b("is_stream"),
      i("channel_id"),
      i("token_id"),
      s("group", 64),
      s("ip", 64),
      t("other"),
      // new-api's: the id the call was answered under, and the one its upstream gave
      s("request_id", 64),
      s("upstream_request_id", 128),
    ],
    // Log pages filter by one of these columns and sort newest first by (created_at, id); stats sum over a
    // time range. Each filter column leads a (column, created_at) index so a page is read backwards from
    // the index and a ranged stat is one index range (scripts/bench/logs.ts measures both at 10M rows).
    indexes: [
      { name: "idx_logs_created_at", columns: ["created_at"] },
      { name: "idx_logs_user_created", columns: ["user_id", "created_at"] },
      { name: "idx_logs_type_created", columns: ["type", "created_at"] },
      { name: "idx_logs_username_created", columns: ["username", "created_at"] },
      { name: "idx_logs_token_name_created", columns: ["token_name", "created_at"] },
      { name: "idx_logs_model_name_created", columns: ["model_name", "created_at"] },
      { name: "idx_logs_channel_created", columns: ["channel_id", "created_at"] },
      // new-api's own, by its names: a request id finds its log
      { name: "idx_logs_request_id", columns: ["request_id"] },
      { name: "idx_logs_upstream_request_id", columns: ["upstream_request_id"] },
    ],
  },
  {
    name: "quota_data",
    columns: [
      id,
      i("user_id"),
      s("username", 64),
      s("model_name", 255),
      n("created_at"),
      n("token_used"),
      i("count"),
      n("quota"),
    ],
    indexes: [
      { name: "idx_quota_data_created_at", columns: ["created_at"] },
      { name: "idx_quota_data_user_created", columns: ["user_id", "created_at"] },
    ],
  },
  {
    name: "top_ups",
    columns: [
      id,
      i("user_id"),
      n("amount"),
      c("money", "float", { default: 0 }),
      c("trade_no", "varchar(255)", { notNull: true, unique: true }),
      s("payment_method", 64),
      n("create_time"),
      n("complete_time"),
      s("status", 32, "pending"),
    ],
    indexes: [{ name: "idx_top_ups_user_id", columns: ["user_id"] }],
  },
  {
    name: "midjourneys",
    columns: [
      id,
      i("code"),
      i("user_id"),
      s("action", 40),
      s("mj_id", 255),
      t("prompt"),
      t("prompt_en"),
      t("description"),
      t("state"),
      n("submit_time"),
      n("start_time"),
      n("finish_time"),
      t("image_url"),
      s("status", 20),
      s("progress", 30),
      t("fail_reason"),
      i("channel_id"),
      n("quota"),
      t("buttons"),
      t("properties"),
      n("created_at"),
      // ours: who paid and where progress goes (token, client notifyHook, key index); never sent to a client
      t("private_data"),
    ],
    indexes: [
      { name: "idx_midjourneys_user_id", columns: ["user_id"] },
      { name: "idx_midjourneys_mj_id", columns: ["mj_id"] },
      // the task poller reads the unfinished rows
      { name: "idx_midjourneys_status", columns: ["status"] },
    ],
  },
  {
    name: "tasks",
    columns: [
      id,
      n("created_at"),
      n("updated_at"),
      s("task_id", 191),
      s("platform", 30),
      i("user_id"),
      i("channel_id"),
      n("quota"),
      s("action", 40),
      s("status", 20),
      t("fail_reason"),
      n("submit_time"),
      n("start_time"),
      n("finish_time"),
      s("progress", 20),
      t("properties"),
      t("data"),
      // new-api's column: who paid (token) and the upstream key used; never sent to a client
      t("private_data"),
    ],
    indexes: [
      { name: "idx_tasks_user_id", columns: ["user_id"] },
      { name: "idx_tasks_task_id", columns: ["task_id"] },
      { name: "idx_tasks_status", columns: ["status"] },
    ],
  },
  {
    // Quota leases: quota an instance has taken from a balance ahead of the relay calls it pays for
    // (PostgreSQL and MySQL; SQLite reserves in memory). The write-behind moves each settled call's cost out
    // of its row in the same transaction as it writes the call's log, so money that left a balance is always
    // either here or in a log; rows whose instance stopped renewing them (a crash) are refunded
    // (server/relay/core/ledger.ts).
    name: "quota_holds",
    columns: [
      c("id", "varchar(40)", { notNull: true }),
      i("user_id"),
      i("token_id"),
      n("amount"),
      c("instance", "varchar(64)", { notNull: true, default: "" }),
      c("life", "varchar(16)", { notNull: true, default: "" }),
      n("created_at"),
      n("renewed_at"),
    ],
    primaryKey: ["id"],
    indexes: [
      { name: "idx_quota_holds_renewed_at", columns: ["renewed_at"] },
      { name: "idx_quota_holds_instance", columns: ["instance"] },
    ],
  },
  {
    // One row per committed write-behind transaction, named by its slice: the local journal's replay after a
    // crash (server/jobs/journal.ts) skips the slices the database already has, so no call is billed twice.
    // Rows older than the journal can hold are deleted (WriteBehind.pruneReceipts).
    name: "write_receipts",
    columns: [c("id", "varchar(64)", { notNull: true }), n("created_at")],
    primaryKey: ["id"],
    indexes: [{ name: "idx_write_receipts_created_at", columns: ["created_at"] }],
  },
  // Two-factor sign-in and passkeys, in new-api's layout (model/twofa.go, model/passkey.go), so its rows keep
  // working; times are gorm datetimes. last_step is ours: the last TOTP time step accepted, so a code
  // works once (server/modules/twofa).
  {
    name: "two_fas",
    columns: [
      id,
      c("user_id", "int", { notNull: true }),
      c("secret", "varchar(255)", { notNull: true }),
      b("is_enabled"),
      i("failed_attempts"),
      c("locked_until", "datetime"),
      c("last_used_at", "datetime"),
      n("last_step"),
      c("created_at", "datetime"),
      c("updated_at", "datetime"),
      c("deleted_at", "datetime"),
    ],
    indexes: [
      { name: "idx_two_fas_user_id", columns: ["user_id"], unique: true },
      { name: "idx_two_fas_deleted_at", columns: ["deleted_at"] },
    ],
  },
  {
    name: "two_fa_backup_codes",
    columns: [
      id,
      c("user_id", "int", { notNull: true }),
      c("code_hash", "varchar(255)", { notNull: true }),
      b("is_used"),
      c("used_at", "datetime"),
      c("created_at", "datetime"),
      c("deleted_at", "datetime"),
    ],
    indexes: [
      { name: "idx_two_fa_backup_codes_user_id", columns: ["user_id"] },
      { name: "idx_two_fa_backup_codes_deleted_at", columns: ["deleted_at"] },
    ],
  },
  {
    name: "passkey_credentials",
    columns: [
      id,
      c("user_id", "int", { notNull: true }),
      c("credential_id", "varchar(512)", { notNull: true }),
      c("public_key", "text", { notNull: true }),
      s("attestation_type", 255),
      s("aaguid", 512),
      n("sign_count"),
      b("clone_warning"),
      b("user_present"),
      b("user_verified"),
      b("backup_eligible"),
      b("backup_state"),
      t("transports"),
      s("attachment", 32),
      c("last_used_at", "datetime"),
      c("created_at", "datetime"),
      c("updated_at", "datetime"),
      c("deleted_at", "datetime"),
    ],
    indexes: [
      { name: "idx_passkey_credentials_user_id", columns: ["user_id"] },
      { name: "idx_passkey_credentials_credential_id", columns: ["credential_id"], unique: true },
      { name: "idx_passkey_credentials_deleted_at", columns: ["deleted_at"] },
    ],
  },
  // new-api's daily check-in (model/checkin.go): one row per user and day; the unique index is what makes
  // a second check-in the same day fail (server/modules/checkin).
  {
    name: "checkins",
    columns: [
      id,
      c("user_id", "int", { notNull: true }),
      c("checkin_date", "varchar(10)", { notNull: true }),
      c("quota_awarded", "int", { notNull: true }),
      n("created_at"),
    ],
    indexes: [{ name: "idx_user_checkin_date", columns: ["user_id", "checkin_date"], unique: true }],
  },
  // new-api's model metadata, vendors and prefill groups (model/model_meta.go, vendor_meta.go, prefill_group.go),
  // soft-deleted with a gorm datetime (server/modules/model-meta, server/modules/prefill).
  {
    name: "vendors",
    columns: [
      id,
      c("name", "varchar(128)", { notNull: true }),
      t("description"),
      s("icon", 128),
      i("status", 1),
      n("created_time"),
      n("updated_time"),
      c("deleted_at", "datetime"),
    ],
    indexes: [
      { name: "uk_vendor_name_delete_at", columns: ["name", "deleted_at"], unique: true },
      { name: "idx_vendors_deleted_at", columns: ["deleted_at"] },
    ],
  },
  {
    name: "models",
    columns: [
      id,
      c("model_name", "varchar(128)", { notNull: true }),
      t("description"),
      s("icon", 128),
      s("tags", 255),
      i("vendor_id"),
      t("endpoints"),
      i("status", 1),
      i("sync_official", 1),
      n("created_time"),
      n("updated_time"),
      c("deleted_at", "datetime"),
      i("name_rule"),
    ],
    indexes: [
      { name: "uk_model_name_delete_at", columns: ["model_name", "deleted_at"], unique: true },
      { name: "idx_models_vendor_id", columns: ["vendor_id"] },
      { name: "idx_models_deleted_at", columns: ["deleted_at"] },
    ],
  },
  {
    name: "prefill_groups",
    columns: [
      id,
      c("name", "varchar(64)", { notNull: true }),
      c("type", "varchar(32)", { notNull: true }),
      j("items"),
      s("description", 255),
      n("created_time"),
      n("updated_time"),
      c("deleted_at", "datetime"),
    ],
    indexes: [
      { name: "idx_prefill_groups_type", columns: ["type"] },
      { name: "idx_prefill_groups_deleted_at", columns: ["deleted_at"] },
    ],
  },
];
