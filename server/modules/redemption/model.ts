import { t } from "elysia";
import { envelope, int, loose, pageOf, pagingQuery } from "../../http/schema.ts";
import { BIGINT_COLUMN, INT_COLUMN, within } from "../../http/numbers.ts";
import { REDEMPTION_MAX_BATCH } from "../../catalogue/index.ts";

const quota = int("quota", within(BIGINT_COLUMN, 1));
const expiry = int("expired_time", within(BIGINT_COLUMN, 0), { description: "unix seconds (0 for never)" });

export const idParam = t.Object({ id: t.Numeric({ minimum: 1, error: "id must be a positive integer" }) });

export const listQuery = t.Object({
  ...pagingQuery,
  keyword: t.Optional(t.String({ description: "the start of the name, the whole code, or the id" })),
});

export const createBody = t.Object(
  {
    name: t.Optional(t.String()),
    quota,
    count: t.Optional(
      int("count", within(INT_COLUMN, 1, REDEMPTION_MAX_BATCH), { description: "how many codes to create" }),
    ),
    expired_time: t.Optional(expiry),
  },
  { additionalProperties: true },
);

/** PUT /api/redemption/ carries either the editable fields or, with ?status_only=true, just {id, status}. */
export const updateBody = t.Object(
  {
    id: t.Integer({ minimum: 1, error: "id must be a positive integer" }),
    name: t.Optional(t.String()),
    quota: t.Optional(quota),
    status: t.Optional(int("status", INT_COLUMN)),
    expired_time: t.Optional(expiry),
  },
  { additionalProperties: true },
);

export const updateQuery = t.Object({ status_only: t.Optional(t.String()) });

export const redeemBody = t.Object({ key: t.Optional(t.String()) });

const n = (description?: string) => t.Optional(t.Integer(description ? { description } : {}));
/** A redemption code as the admin sees it. */
export const redemptionView = loose(
  {
    id: n(),
    user_id: n("creator"),
    key: t.Optional(t.String()),
    status: n("1 unused, 2 disabled, 3 used"),
    name: t.Optional(t.String()),
    quota: n(),
    created_time: n("unix seconds"),
    redeemed_time: n("unix seconds"),
    used_user_id: n(),
    expired_time: n("unix seconds, 0 never"),
  },
  { description: "a redemption code" },
);
export const redemptionReply = envelope(redemptionView);
export const redemptionPage = pageOf(redemptionView);
export const keysReply = envelope(t.Array(t.String()), "the codes created");
export const countReply = envelope(t.Integer({ description: "how many were removed" }));
export const redeemReply = envelope(t.Integer({ description: "the quota added to the caller's balance" }));
