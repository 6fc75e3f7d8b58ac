// Table types: the single source of truth for column names. Names follow one-api/new-api, so an
// operator can point Switchyard at an existing database.
//
// Portability notes (read before writing a query):
// - Times are unix seconds (integers) unless the column says otherwise; deleted_at is a datetime
//   string ("YYYY-MM-DD HH:MM:SS") or null, as gorm writes it.
// - Boolean columns come back as 0/1 from SQLite and MySQL and true/false from PostgreSQL: read them
//   with Boolean(x); write JS booleans.
import type { Generated, Insertable, Selectable, Updateable } from "kysely";

export interface UsersTable {
  id: Generated<number>;
  username: string;
  password: string;
  display_name: Generated<string>;
  role: Generated<number>;
  status: Generated<number>;
  email: Generated<string>;
  github_id: Generated<string>;
  oidc_id: Generated<string>;
  wechat_id: Generated<string>;
  telegram_id: Generated<string>;
  linux_do_id: Generated<string>;
  access_token: string | null;
  quota: Generated<number>;
  used_quota: Generated<number>;
  request_count: Generated<number>;
  group: Generated<string>;
  aff_code: string | null;
  aff_count: Generated<number>;
  aff_quota: Generated<number>;
  aff_history: Generated<number>;
  inviter_id: Generated<number>;
  deleted_at: Date | string | null;
  setting: Generated<string>;
  created_time: Generated<number>;
  /** new-api's account creation and last sign-in times (unix seconds; 0 when unknown or never). */
  created_at: Generated<number>;
  last_login_at: Generated<number>;
  /** Raised to end every session of the user (logout, ban, password or role change); sessions carry it. */
  session_version: Generated<number>;
}

export interface OptionsTable {
  key: string;
  value: string;
}

export interface SetupsTable {
  id: Generated<number>;
  version: string;
  initialized_at: number;
}

export interface TokensTable {
  id: Generated<number>;
  user_id: number;
  key: string;
  status: Generated<number>;
  name: Generated<string>;
  created_time: number;
  accessed_time: Generated<number>;
  expired_time: Generated<number>;
  remain_quota: Generated<number>;
  unlimited_quota: Generated<boolean | number>;
  model_limits_enabled: Generated<boolean | number>;
  model_limits: Generated<string>;
  allow_ips: Generated<string>;
  used_quota: Generated<number>;
  group: Generated<string>;
  deleted_at: Date | string | null;
  /** Per-token limits, 0 = none (server/modules/token/limits.ts): requests and tokens per minute, calls in flight. */
  rpm_limit: Generated<number>;
  tpm_limit: Generated<number>;
  concurrency_limit: Generated<number>;
  /** A budget that resets: at most budget_quota quota per budget_period ('' = none, daily, weekly, monthly; UTC). */
  budget_quota: Generated<number>;
  budget_period: Generated<string>;
  /** Spent (and held by calls in flight) in the period that ends at budget_reset_at (epoch seconds; 0 = not started). */
  budget_used: Generated<number>;
  budget_reset_at: Generated<number>;
}

export interface ChannelsTable {
  id: Generated<number>;
  type: Generated<number>;
  key: string;
  openai_organization: string | null;
  test_model: string | null;
  status: Generated<number>;
  name: Generated<string>;
  weight: Generated<number>;
  created_time: number;
  test_time: Generated<number>;
  response_time: Generated<number>;
  base_url: Generated<string>;
  other: Generated<string>;
  balance: Generated<number>;
  balance_updated_time: Generated<number>;
  models: Generated<string>;
  group: Generated<string>;
  used_quota: Generated<number>;
  model_mapping: string | null;
  status_code_mapping: Generated<string>;
  priority: Generated<number>;
  auto_ban: Generated<number>;
  other_info: Generated<string>;
  tag: string | null;
  setting: string | null;
  param_override: string | null;
  /** JSON: multi-key state {is_multi_key, multi_key_mode, multi_key_polling_index, ...} */
  channel_info: Generated<string>;
  max_input_tokens: Generated<number>;
}

export interface AbilitiesTable {
  group: string;
  model: string;
  channel_id: number;
  enabled: boolean | number;
  priority: Generated<number>;
  weight: Generated<number>;
  tag: string | null;
}

export interface RedemptionsTable {
  id: Generated<number>;
  user_id: number;
  key: string;
  status: Generated<number>;
  name: Generated<string>;
  quota: Generated<number>;
  created_time: number;
  redeemed_time: Generated<number>;
  used_user_id: Generated<number>;
  deleted_at: Date | string | null;
  /** new-api's: unix seconds after which the code no longer redeems; 0 never expires */
  expired_time: Generated<number>;
}

export interface LogsTable {
  id: Generated<number>;
  user_id: number;
  created_at: number;
  type: number;
  content: Generated<string>;
  username: Generated<string>;
  token_name: Generated<string>;
  model_name: Generated<string>;
  quota: Generated<number>;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  use_time: Generated<number>;
  is_stream: Generated<boolean | number>;
  channel_id: Generated<number>;
  token_id: Generated<number>;
  group: Generated<string>;
  ip: Generated<string>;
  other: Generated<string>;
  request_id: Generated<string>;
  upstream_request_id: Generated<string>;
}

export interface QuotaDataTable {
  id: Generated<number>;
  user_id: number;
  username: Generated<string>;
  model_name: Generated<string>;
  created_at: number;
  token_used: Generated<number>;
  count: Generated<number>;
  quota: Generated<number>;
}

export interface TopUpsTable {
  id: Generated<number>;
  user_id: number;
  amount: number;
  money: number;
  trade_no: string;
  payment_method: Generated<string>;
  create_time: number;
  complete_time: Generated<number>;
  status: string;
}

export interface MidjourneysTable {
  id: Generated<number>;
  code: Generated<number>;
  user_id: number;
  action: Generated<string>;
  mj_id: Generated<string>;
  prompt: Generated<string>;
  prompt_en: Generated<string>;
  description: Generated<string>;
  state: Generated<string>;
  submit_time: Generated<number>;
  start_time: Generated<number>;
  finish_time: Generated<number>;
  image_url: Generated<string>;
  status: Generated<string>;
  progress: Generated<string>;
  fail_reason: Generated<string>;
  channel_id: Generated<number>;
  quota: Generated<number>;
  buttons: Generated<string>;
  properties: Generated<string>;
  /** Unix seconds when the row was written (spec 001 §3; new-api's table has no such column). */
  created_at: Generated<number>;
  /** JSON: the paying token, the client's notifyHook, the channel key used (server/relay/core/task-settle.ts).
   * Never sent to a client. */
  private_data: Generated<string | null>;
}

export interface TasksTable {
  id: Generated<number>;
  created_at: Generated<number>;
  updated_at: Generated<number>;
  task_id: Generated<string>;
  platform: Generated<string>;
  user_id: number;
  channel_id: Generated<number>;
  quota: Generated<number>;
  action: Generated<string>;
  status: Generated<string>;
  fail_reason: Generated<string>;
  submit_time: Generated<number>;
  start_time: Generated<number>;
  finish_time: Generated<number>;
  progress: Generated<string>;
  properties: Generated<string>;
  data: Generated<string>;
  /** JSON, as for midjourneys.private_data. Never sent to a client. */
  private_data: Generated<string | null>;
}

export interface QuotaHoldsTable {
  id: string;
  user_id: number;
  /** 0: the token has no limit of its own (unlimited, or the playground) */
  token_id: number;
  amount: number;
  /** the instance's name, stable across its restarts (config.instanceId) */
  instance: string;
  /** one process's life of that instance */
  life: string;
  created_at: number;
  renewed_at: number;
}

/** A committed write-behind transaction (server/jobs/journal.ts): its slice's id. */
export interface WriteReceiptsTable {
  id: string;
  created_at: number;
}

/** The relay's response cache without Redis (server/relay/cache/store.ts): one answer per request hash. */
export interface ResponseCacheTable {
  /** sha256 (hex) of the normalised request, its caller's group and model */
  cache_key: string;
  model: string;
  /** the stored answer: one line of JSON facts (usage, times, kind), then the body or SSE frames as sent */
  entry: string;
  /** epoch seconds */
  created_at: number;
  expires_at: number;
}

/** new-api's two_fas: one row per user; the TOTP secret (base32) is never sent to a client. */
export interface TwoFasTable {
  id: Generated<number>;
  user_id: number;
  secret: string;
  is_enabled: Generated<boolean | number>;
  failed_attempts: Generated<number>;
  /** datetime (Date from PostgreSQL and MySQL, text from SQLite) */
  locked_until: Date | string | null;
  last_used_at: Date | string | null;
  /** the last TOTP time step (unix seconds / 30) accepted; a code of that step or earlier is refused */
  last_step: Generated<number>;
  created_at: Date | string | null;
  updated_at: Date | string | null;
  deleted_at: Date | string | null;
}

export interface TwoFaBackupCodesTable {
  id: Generated<number>;
  user_id: number;
  /** bcrypt of the normalised code XXXX-XXXX, as new-api writes it */
  code_hash: string;
  is_used: Generated<boolean | number>;
  used_at: Date | string | null;
  created_at: Date | string | null;
  deleted_at: Date | string | null;
}

/** new-api's passkey_credentials: ids and keys as standard base64 of the raw bytes; public_key is COSE. */
export interface PasskeyCredentialsTable {
  id: Generated<number>;
  user_id: number;
  credential_id: string;
  public_key: string;
  attestation_type: Generated<string>;
  aaguid: Generated<string>;
  sign_count: Generated<number>;
  clone_warning: Generated<boolean | number>;
  user_present: Generated<boolean | number>;
  user_verified: Generated<boolean | number>;
  backup_eligible: Generated<boolean | number>;
  backup_state: Generated<boolean | number>;
  /** JSON list of transports ("usb", "internal", ...) */
  transports: string | null;
  attachment: Generated<string>;
  last_used_at: Date | string | null;
  created_at: Date | string | null;
  updated_at: Date | string | null;
  deleted_at: Date | string | null;
}

/** new-api's checkins: one per user and day (YYYY-MM-DD in the server's time zone). */
export interface CheckinsTable {
  id: Generated<number>;
  user_id: number;
  checkin_date: string;
  quota_awarded: number;
  created_at: number;
}

/** new-api's vendors (model metadata); soft-deleted. */
export interface VendorsTable {
  id: Generated<number>;
  name: string;
  description: string | null;
  icon: Generated<string>;
  status: Generated<number>;
  created_time: Generated<number>;
  updated_time: Generated<number>;
  deleted_at: Date | string | null;
}

/** new-api's models (model metadata shown on its models page); soft-deleted. */
export interface ModelsTable {
  id: Generated<number>;
  model_name: string;
  description: string | null;
  icon: Generated<string>;
  tags: Generated<string>;
  vendor_id: Generated<number>;
  /** JSON text of endpoint types, or empty */
  endpoints: string | null;
  status: Generated<number>;
  sync_official: Generated<number>;
  created_time: Generated<number>;
  updated_time: Generated<number>;
  deleted_at: Date | string | null;
  /** 0 exact, 1 prefix, 2 contains, 3 suffix */
  name_rule: Generated<number>;
}

/** new-api's prefill_groups: named lists (models, tags, endpoints) its channel form offers. */
export interface PrefillGroupsTable {
  id: Generated<number>;
  name: string;
  type: string;
  /** JSON array text */
  items: string | null;
  description: Generated<string>;
  created_time: Generated<number>;
  updated_time: Generated<number>;
  deleted_at: Date | string | null;
}

export interface DB {
  users: UsersTable;
  options: OptionsTable;
  setups: SetupsTable;
  tokens: TokensTable;
  channels: ChannelsTable;
  abilities: AbilitiesTable;
  redemptions: RedemptionsTable;
  logs: LogsTable;
  quota_data: QuotaDataTable;
  top_ups: TopUpsTable;
  midjourneys: MidjourneysTable;
  tasks: TasksTable;
  quota_holds: QuotaHoldsTable;
  write_receipts: WriteReceiptsTable;
  two_fas: TwoFasTable;
  two_fa_backup_codes: TwoFaBackupCodesTable;
  passkey_credentials: PasskeyCredentialsTable;
  checkins: CheckinsTable;
  vendors: VendorsTable;
  models: ModelsTable;
  prefill_groups: PrefillGroupsTable;
  response_cache: ResponseCacheTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type Token = Selectable<TokensTable>;
export type Channel = Selectable<ChannelsTable>;
export type Ability = Selectable<AbilitiesTable>;
export type Redemption = Selectable<RedemptionsTable>;
export type Log = Selectable<LogsTable>;
export type NewLog = Insertable<LogsTable>;
export type QuotaData = Selectable<QuotaDataTable>;
export type TopUp = Selectable<TopUpsTable>;
export type Midjourney = Selectable<MidjourneysTable>;
export type Task = Selectable<TasksTable>;
