// Epay (易支付): a form POST to {PayAddress}/submit.php signed with MD5, and a signed GET callback.
// Signature: parameters sorted by name (ASCII), empty values and sign/sign_type left out, joined as
// k=v&k=v, the merchant key appended directly, MD5 in lowercase hex.
import { createHash, timingSafeEqual } from "node:crypto";
import type { AppDeps } from "../../deps.ts";
import { badRequest } from "../../http/errors.ts";
import type { Checkout, CheckoutOrder, PaymentNotice, PaymentProvider } from "./provider.ts";

const EPAY_TYPE: Record<string, string> = { zfb: "alipay", wx: "wxpay" };

export function epaySign(params: Record<string, string>, key: string): string {
  const text = Object.keys(params)
    .filter(
      (k) => k !== "sign" && k !== "sign_type" && params[k] !== "" && params[k] !== undefined && params[k] !== null,
    )
    .sort()
    .map((k) => `${k}=${params[k]}`)
    .join("&");
  return createHash("md5")
    .update(text + key, "utf8")
    .digest("hex");
}

function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a.toLowerCase());
  const y = Buffer.from(b.toLowerCase());
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Where the provider calls back: CustomCallbackAddress when set (a public address), else ServerAddress. */
export function callbackBase(deps: AppDeps): string {
  return (deps.options.get("CustomCallbackAddress") || deps.options.get("ServerAddress")).replace(/\/+$/, "");
}

export const epay: PaymentProvider = {
  name: "epay",
  methods: ["zfb", "wx"],
  ackBody: "success",
  configured(deps) {
    return !!(deps.options.get("PayAddress") && deps.options.get("EpayId") && deps.options.get("EpayKey"));
  },
  checkout(deps, order: CheckoutOrder): Checkout {
    const server = deps.options.get("ServerAddress").replace(/\/+$/, "");
    const fields: Record<string, string> = {
      pid: deps.options.get("EpayId"),
      type: EPAY_TYPE[order.method] ?? order.method,
      out_trade_no: order.tradeNo,
      notify_url: `${callbackBase(deps)}/api/user/epay/notify`,
      return_url: `${server}/log`,
      name: order.title,
      money: order.money.toFixed(2),
    };
    fields.sign = epaySign(fields, deps.options.get("EpayKey"));
    fields.sign_type = "MD5";
    return { url: `${deps.options.get("PayAddress").replace(/\/+$/, "")}/submit.php`, fields };
  },
  verifyNotice(deps, params): PaymentNotice {
    const { sign, out_trade_no: tradeNo, trade_status: status, pid, money } = params;
    if (!sign || !tradeNo) throw badRequest("payment notification is missing sign or out_trade_no");
    if (!sameHex(sign, epaySign(params, deps.options.get("EpayKey"))))
      throw badRequest("payment notification signature is invalid");
    if (pid !== undefined && pid !== deps.options.get("EpayId"))
      throw badRequest("payment notification is for another merchant");
    const paid = Number(money);
    if (!Number.isFinite(paid)) throw badRequest("payment notification has no valid money");
    return { tradeNo, paid: status === "TRADE_SUCCESS", money: paid };
  },
};
