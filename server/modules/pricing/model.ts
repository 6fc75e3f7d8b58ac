import { t } from "elysia";
import { envelope, loose } from "../../http/schema.ts";

/** One model's price: by ratio (quota_type 0) or a fixed price per request (quota_type 1). */
const modelPrice = loose(
  {
    model_name: t.String(),
    quota_type: t.Integer({ description: "0 by tokens (ratios), 1 per request (model_price)" }),
    model_ratio: t.Number(),
    model_price: t.Number({ description: "USD per request" }),
    completion_ratio: t.Number(),
    enable_groups: t.Array(t.String(), { description: "groups whose channels serve it" }),
  },
  { description: "a model's price" },
);

/** new-api's shape: the models in data, the group ratios and usable groups at the top level. */
export const pricingReply = envelope(t.Array(modelPrice), "the price list", {
  group_ratio: t.Optional(loose({}, { description: "group name → price ratio" })),
  usable_group: t.Optional(loose({}, { description: "group name → description, for the caller" })),
});
