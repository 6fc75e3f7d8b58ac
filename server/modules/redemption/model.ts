import { t } from "elysia";

export const idParam = t.Object({ id: t.Numeric({ minimum: 1, error: "id must be a positive integer" }) });

export const listQuery = t.Object({
  p: t.Optional(t.String()),
  page_size: t.Optional(t.String()),
  size: t.Optional(t.String()),
  keyword: t.Optional(t.String()),
});

export const createBody = t.Object({
  name: t.Optional(t.String()),
  quota: t.Integer({ minimum: 1, error: "quota must be a positive integer" }),
  count: t.Optional(t.Integer({ error: "count must be an integer" })),
  expired_time: t.Optional(t.Integer({ error: "expired_time must be unix seconds (0 for never)" })),
}, { additionalProperties: true });

/** PUT /api/redemption/ carries either the editable fields or, with ?status_only=true, just {id, status}. */
export const updateBody = t.Object({
  id: t.Integer({ minimum: 1, error: "id must be a positive integer" }),
  name: t.Optional(t.String()),
  quota: t.Optional(t.Integer({ minimum: 1, error: "quota must be a positive integer" })),
  status: t.Optional(t.Integer({ error: "status must be an integer" })),
  expired_time: t.Optional(t.Integer({ error: "expired_time must be unix seconds (0 for never)" })),
}, { additionalProperties: true });

export const updateQuery = t.Object({ status_only: t.Optional(t.String()) });

export const redeemBody = t.Object({ key: t.Optional(t.String()) });
