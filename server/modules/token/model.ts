import { t } from "elysia";

const num = (field: string) => t.Number({ error: `${field} must be a number` });

/** Create and update share one body; the console sends the whole token back, so extra fields are allowed. */
export const tokenBody = t.Object({
  id: t.Optional(t.Integer({ minimum: 1, error: "id must be a positive integer" })),
  name: t.Optional(t.String({ error: "name must be a string" })),
  remain_quota: t.Optional(num("remain_quota")),
  expired_time: t.Optional(num("expired_time")),
  unlimited_quota: t.Optional(t.Boolean({ error: "unlimited_quota must be true or false" })),
  model_limits_enabled: t.Optional(t.Boolean({ error: "model_limits_enabled must be true or false" })),
  model_limits: t.Optional(t.String({ error: "model_limits must be a comma-separated string" })),
  allow_ips: t.Optional(t.String({ error: "allow_ips must be a string with one IP or CIDR range per line" })),
  group: t.Optional(t.String({ error: "group must be a string" })),
  status: t.Optional(t.Integer({ error: "status must be an integer" })),
  count: t.Optional(num("count")),
  // Per-token limits and budget (0 = none); checked further in service.ts (whole numbers, not negative).
  rpm_limit: t.Optional(num("rpm_limit")),
  tpm_limit: t.Optional(num("tpm_limit")),
  concurrency_limit: t.Optional(num("concurrency_limit")),
  budget_quota: t.Optional(num("budget_quota")),
  budget_period: t.Optional(t.String({ error: "budget_period must be '', daily, weekly or monthly" })),
}, { additionalProperties: true });

export const updateQuery = t.Object({ status_only: t.Optional(t.String()) }, { additionalProperties: true });

export const listQuery = t.Object({
  p: t.Optional(t.String()),
  size: t.Optional(t.String()),
  page_size: t.Optional(t.String()),
  keyword: t.Optional(t.String()),
  token: t.Optional(t.String()),
}, { additionalProperties: true });

export const idParam = t.Object({ id: t.Numeric({ minimum: 1, error: "id must be a positive integer" }) });
