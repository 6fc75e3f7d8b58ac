// GET /api/user/topup/info: what new-api's top-up page reads before it shows anything (its shape). Only Epay
// is a working provider here; Stripe and Creem report themselves off whatever their stored options say.
import type { AppDeps } from "../../deps.ts";
import { PAYMENT_METHODS } from "../../catalogue/index.ts";

/** Switchyard's Epay methods, as new-api's console lists them when PayMethods is not set. */
const DEFAULT_PAY_METHODS = [
  { name: "Alipay", color: "rgba(var(--semi-blue-5), 1)", type: PAYMENT_METHODS[0] },
  { name: "WeChat Pay", color: "rgba(var(--semi-green-5), 1)", type: PAYMENT_METHODS[1] },
];

/** new-api's Epay method names, accepted for Switchyard's (a PayMethods option saved by new-api uses them). */
export const NEW_API_PAY_METHOD: Record<string, string> = { alipay: "zfb", wxpay: "wx" };

export function topupInfo(deps: AppDeps) {
  const o = deps.options;
  const methods = o.json<unknown>("PayMethods", null);
  const amounts = o.json<unknown>("payment_setting.amount_options", []);
  const discount = o.json<unknown>("payment_setting.amount_discount", {});
  return {
    enable_online_topup: !!(o.get("PayAddress") && o.get("EpayId") && o.get("EpayKey")),
    enable_stripe_topup: false,
    enable_creem_topup: false,
    creem_products: o.get("CreemProducts") || "[]",
    pay_methods: Array.isArray(methods) ? methods : DEFAULT_PAY_METHODS,
    min_topup: o.number("MinTopUp", 1),
    stripe_min_topup: o.number("StripeMinTopUp", 1),
    amount_options: Array.isArray(amounts) ? amounts : [],
    discount: discount && typeof discount === "object" && !Array.isArray(discount) ? discount : {},
  };
}
