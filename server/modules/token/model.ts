import { t } from "elysia";
import { envelope, int, loose, pageOf, pagingQuery } from "../../http/schema.ts";
import { BIGINT_COLUMN, INT_COLUMN, within } from "../../http/numbers.ts";
import { TOKEN_BATCH_MAX } from "../../catalogue/index.ts";

/** Create and update share one body; the console sends the whole token back, so extra fields are allowed. */
export const tokenBody = t.Object(
  {
    id: t.Optional(t.Integer({ minimum: 1, error: "id must be a positive integer" })),
    name: t.Optional(t.String({ error: "name must be a string" })),
    remain_quota: t.Optional(int("remain_quota", within(BIGINT_COLUMN, 0))),
    expired_time: t.Optional(int("expired_time", within(BIGINT_COLUMN, -1), { description: "unix seconds, -1 never" })),
    unlimited_quota: t.Optional(t.Boolean({ error: "unlimited_quota must be true or false" })),
    model_limits_enabled: t.Optional(t.Boolean({ error: "model_limits_enabled must be true or false" })),
    model_limits: t.Optional(t.String({ error: "model_limits must be a comma-separated string" })),
    allow_ips: t.Optional(t.String({ error: "allow_ips must be a string with one IP or CIDR range per line" })),
    group: t.Optional(t.String({ error: "group must be a string" })),
    status: t.Optional(int("status", INT_COLUMN)),
    count: t.Optional(
      int("count", within(INT_COLUMN, 1, TOKEN_BATCH_MAX), { description: "how many tokens to create" }),
    ),
    // Per-token limits and budget (0 = none); each fits its column (db/migrations/tables.ts).
    rpm_limit: t.Optional(int("rpm_limit", within(INT_COLUMN, 0))),
    tpm_limit: t.Optional(int("tpm_limit", within(BIGINT_COLUMN, 0))),
    concurrency_limit: t.Optional(int("concurrency_limit", within(INT_COLUMN, 0))),
    budget_quota: t.Optional(int("budget_quota", within(BIGINT_COLUMN, 0))),
    budget_period: t.Optional(t.String({ error: "budget_period must be '', daily, weekly or monthly" })),
  },
  { additionalProperties: true },
);

export const updateQuery = t.Object({ status_only: t.Optional(t.String()) }, { additionalProperties: true });

export const listQuery = t.Object(
  {
    ...pagingQuery,
    keyword: t.Optional(t.String({ description: "part of the token's name" })),
    token: t.Optional(t.String({ description: "part of the key (with or without sk-)" })),
  },
  { additionalProperties: true },
);

export const idParam = t.Object({ id: t.Numeric({ minimum: 1, error: "id must be a positive integer" }) });

/** POST /api/token/batch (new-api): the caller's tokens to delete; a missing or bad list is answered by the service. */
export const batchBody = t.Optional(
  t.Object(
    {
      ids: t.Optional(
        t.Array(t.Any(), {
          error: "ids is required: a list of token ids",
          description: "ids of the caller's tokens (positive integers)",
        }),
      ),
    },
    { additionalProperties: true },
  ),
);

const n = (description?: string) => t.Optional(t.Number(description ? { description } : {}));
/** A token as its owner sees it (the key with its sk- prefix); more fields may be sent. */
export const tokenView = loose(
  {
    id: t.Optional(t.Integer()),
    user_id: t.Optional(t.Integer()),
    name: t.Optional(t.String()),
    key: t.Optional(t.String({ description: "sk-..." })),
    status: t.Optional(t.Integer({ description: "1 enabled, 2 disabled, 3 expired, 4 exhausted" })),
    created_time: n("unix seconds"),
    accessed_time: n("unix seconds"),
    expired_time: n("unix seconds, -1 never"),
    remain_quota: n(),
    used_quota: n(),
    unlimited_quota: t.Optional(t.Boolean()),
    model_limits_enabled: t.Optional(t.Boolean()),
    model_limits: t.Optional(t.String({ description: "comma-separated model names" })),
    allow_ips: t.Optional(t.String({ description: "one IP or CIDR range per line" })),
    group: t.Optional(t.String()),
    rpm_limit: n("requests per minute, 0 none"),
    tpm_limit: n("tokens per minute, 0 none"),
    concurrency_limit: n("calls at once, 0 none"),
    budget_quota: n("quota per budget period, 0 none"),
    budget_period: t.Optional(t.String({ description: "'', daily, weekly or monthly" })),
    budget_used: n(),
    budget_reset_at: n("unix seconds, 0 none started"),
  },
  { description: "a token" },
);
export const tokenReply = envelope(tokenView);
export const tokensReply = envelope(t.Array(tokenView), "the tokens created");
export const tokenPage = pageOf(tokenView);
export const countReply = envelope(t.Integer({ description: "how many were deleted" }));
