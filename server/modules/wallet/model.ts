import { t } from "elysia";
import { envelope, int, loose, pagingQuery } from "../../http/schema.ts";
import { BIGINT_COLUMN, within } from "../../http/numbers.ts";

/** Dollars or quota units (DisplayInCurrencyEnabled); the service narrows it to what the balance column can credit. */
const amount = int("amount", within(BIGINT_COLUMN, 1));

export const amountBody = t.Object(
  {
    amount,
    top_up_code: t.Optional(t.String()),
  },
  { additionalProperties: true },
);

export const payBody = t.Object(
  {
    amount,
    top_up_code: t.Optional(t.String()),
    payment_method: t.String({ minLength: 1, error: "payment_method is required (zfb or wx)" }),
  },
  { additionalProperties: true },
);

/** Epay's signed notice (query string, or a form for a POST); every field is part of the signature. */
const noticeFields = {
  pid: t.Optional(t.String({ description: "merchant id" })),
  trade_no: t.Optional(t.String()),
  out_trade_no: t.Optional(t.String({ description: "the order number this site gave" })),
  type: t.Optional(t.String({ description: "alipay, wxpay, ..." })),
  name: t.Optional(t.String()),
  money: t.Optional(t.String()),
  trade_status: t.Optional(t.String({ description: "TRADE_SUCCESS when paid" })),
  sign: t.Optional(t.String()),
  sign_type: t.Optional(t.String()),
};
export const noticeQuery = t.Object(noticeFields, { additionalProperties: true });
export const noticeForm = t.Optional(t.Object(noticeFields, { additionalProperties: true }));
/** The provider expects plain text. */
export const noticeReply = t.String({ description: "success, or fail (with a 4xx status)" });

/** GET /api/user/topup/info: what the top-up page offers (new-api's shape). */
export const topupInfoReply = envelope(
  loose({
    enable_online_topup: t.Boolean({ description: "Epay is configured" }),
    pay_methods: t.Array(t.Any(), { description: "payment methods ({name, type, color, ...})" }),
    min_topup: t.Number(),
    amount_options: t.Array(t.Any(), { description: "preset amounts" }),
    discount: loose({}, { description: "amount → discount ratio" }),
  }),
);

export const amountReply = envelope(t.String({ description: "the price to pay for that amount, 2 decimals" }));
/** new-api's shape: the form fields in data and the provider's URL at the top level. */
export const payReply = envelope(loose({}, { description: "the form fields to POST to url" }), "where to pay", {
  url: t.Optional(t.String({ description: "the payment page to submit data to" })),
});

/** ?p= (from 1), ?page_size=, ?keyword= (part of the order number). */
export const topupListQuery = t.Object(
  { ...pagingQuery, keyword: t.Optional(t.String()) },
  { additionalProperties: true },
);

/** One top-up record, as new-api lists it. */
export const topupRow = loose({
  id: t.Integer(),
  user_id: t.Integer(),
  amount: t.Number({ description: "units credited" }),
  money: t.Number({ description: "what was paid" }),
  trade_no: t.String(),
  payment_method: t.String(),
  create_time: t.Integer(),
  complete_time: t.Integer(),
  status: t.String({ description: "pending, success or failed" }),
});
