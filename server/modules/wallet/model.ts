import { t } from "elysia";

export const amountBody = t.Object({
  amount: t.Integer({ error: "amount must be an integer" }),
  top_up_code: t.Optional(t.String()),
}, { additionalProperties: true });

export const payBody = t.Object({
  amount: t.Integer({ error: "amount must be an integer" }),
  top_up_code: t.Optional(t.String()),
  payment_method: t.String({ minLength: 1, error: "payment_method is required (zfb or wx)" }),
}, { additionalProperties: true });
