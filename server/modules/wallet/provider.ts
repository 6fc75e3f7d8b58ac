// What an online payment provider must do. The wallet service owns orders (top_ups) and crediting; a
// provider only builds the checkout for an order and authenticates its callbacks. A second provider
// (Stripe) is one new file implementing this and one entry in PROVIDERS.
import type { AppDeps } from "../../deps.ts";

export interface CheckoutOrder {
  tradeNo: string;
  /** What the customer pays, in the site's currency, already rounded to cents. */
  money: number;
  /** Provider-specific method name as the console sends it (zfb, wx, stripe, ...). */
  method: string;
  /** Shown on the payment page. */
  title: string;
}

export interface Checkout {
  /** Where the browser submits the form (or is redirected when fields is empty). */
  url: string;
  fields: Record<string, string>;
}

/** A verified callback: which order it is about and whether the provider says it is paid. */
export interface PaymentNotice {
  tradeNo: string;
  paid: boolean;
  /** The amount the provider says was paid, for a consistency check against the order. */
  money: number;
}

export interface PaymentProvider {
  readonly name: string;
  /** Payment methods this provider handles. */
  readonly methods: readonly string[];
  /** True when the operator has filled in everything the provider needs. */
  configured(deps: AppDeps): boolean;
  checkout(deps: AppDeps, order: CheckoutOrder): Checkout;
  /** Verifies the callback's authenticity; throws AppError(400) when it is forged or malformed. */
  verifyNotice(deps: AppDeps, params: Record<string, string>): PaymentNotice;
  /** The body the provider expects back after a callback was handled. */
  readonly ackBody: string;
}
