// Wallet: price quotes, online top-up orders and crediting them exactly once (spec 001 §2, §5, §7, §8).
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { nowSeconds } from "../../../db/index.ts";
import { AppError, badRequest, forbidden } from "../../http/errors.ts";
import { BIGINT_COLUMN, checkInteger, within } from "../../http/numbers.ts";
import { DEFAULT_GROUP, LOG_TYPE, QUOTA_PER_UNIT, TOPUP_STATUS, formatQuota } from "../../catalogue/index.ts";
import { randomString } from "../../infra/random.ts";
import { writeLog } from "../log/write.ts";
import type { PaymentProvider } from "./provider.ts";
import { epay } from "./epay.ts";
import { NEW_API_PAY_METHOD } from "./topup-info.ts";

/** Registered providers, tried in order for a payment method. */
export const PROVIDERS: PaymentProvider[] = [epay];

export const MSG = {
  notEnabled: "admin has not enabled online top-up",
  minTopUp: (min: number) => `top-up amount cannot be less than ${min}`,
  badMethod: "unsupported payment method",
  wholeUnits: `amount must be a multiple of ${QUOTA_PER_UNIT} quota`,
  orderUnknown: "payment order not found",
  moneyMismatch: "paid amount does not match the order",
} as const;

function providerFor(method: string): PaymentProvider {
  const p = PROVIDERS.find((x) => x.methods.includes(method));
  if (!p) throw badRequest(MSG.badMethod);
  return p;
}

/** The top-up multiplier for a group from TopupGroupRatio; groups not listed pay the plain price. */
export function topupGroupRatio(deps: AppDeps, group: string): number {
  const table = deps.options.json<Record<string, number>>("TopupGroupRatio", {});
  const r = table[group || DEFAULT_GROUP];
  return typeof r === "number" && Number.isFinite(r) && r > 0 ? r : 1;
}

/**
 * Turns the amount the console sends into whole dollars of quota. With DisplayInCurrencyEnabled the
 * console asks for dollars; otherwise it asks for quota units, which must then be whole dollars.
 */
export function unitsFor(deps: AppDeps, amount: number): number {
  const inCurrency = deps.options.bool("DisplayInCurrencyEnabled");
  // Dollars become QUOTA_PER_UNIT quota each: the credit must still fit the balance column.
  checkInteger(
    amount,
    "amount",
    within(BIGINT_COLUMN, 1, inCurrency ? Math.floor(BIGINT_COLUMN.max / QUOTA_PER_UNIT) : BIGINT_COLUMN.max),
  );
  const units = inCurrency ? amount : amount / QUOTA_PER_UNIT;
  if (!Number.isInteger(units)) throw badRequest(MSG.wholeUnits);
  const min = deps.options.number("MinTopUp", 1);
  if (units < Math.max(1, min)) throw badRequest(MSG.minTopUp(inCurrency ? min : min * QUOTA_PER_UNIT));
  return units;
}

/** Money to pay for `units` dollars of quota: Price × TopupGroupRatio of the user's group, to the cent. */
export function priceFor(deps: AppDeps, user: Pick<User, "group">, units: number): number {
  const cents = Math.round(units * deps.options.number("Price", 7.3) * topupGroupRatio(deps, user.group) * 100);
  return cents / 100;
}

export function quoteAmount(deps: AppDeps, user: User, amount: number): number {
  return priceFor(deps, user, unitsFor(deps, amount));
}

export async function startPayment(deps: AppDeps, user: User, amount: number, requested: string) {
  const method = NEW_API_PAY_METHOD[requested] ?? requested;
  const provider = providerFor(method);
  if (!provider.configured(deps)) throw forbidden(MSG.notEnabled);
  const units = unitsFor(deps, amount);
  const money = priceFor(deps, user, units);
  if (money < 0.01) throw badRequest("the payable amount is too small");
  const tradeNo = `USR${user.id}NO${randomString(16)}${nowSeconds()}`;
  await deps.db
    .insertInto("top_ups")
    .values({
      user_id: user.id,
      amount: units,
      money,
      trade_no: tradeNo,
      payment_method: method,
      create_time: nowSeconds(),
      status: TOPUP_STATUS.pending,
    })
    .execute();
  const checkout = provider.checkout(deps, { tradeNo, money, method, title: `TUC${units}` });
  return { url: checkout.url, data: checkout.fields };
}

/**
 * Handles a provider callback. A verified "paid" notice moves the order pending → success with one
 * conditional UPDATE in the same transaction as the credit, so repeated notifications credit once.
 * Returns the body to acknowledge with.
 */
export async function handleNotice(
  deps: AppDeps,
  providerName: string,
  params: Record<string, string>,
): Promise<string> {
  const provider = PROVIDERS.find((p) => p.name === providerName);
  if (!provider || !provider.configured(deps)) throw forbidden(MSG.notEnabled);
  const notice = provider.verifyNotice(deps, params);
  if (!notice.paid) return provider.ackBody;
  const order = await deps.db
    .selectFrom("top_ups")
    .selectAll()
    .where("trade_no", "=", notice.tradeNo)
    .executeTakeFirst();
  if (!order) throw new AppError(404, MSG.orderUnknown);
  if (Math.round(notice.money * 100) < Math.round(Number(order.money) * 100)) throw badRequest(MSG.moneyMismatch);
  const quota = Number(order.amount) * QUOTA_PER_UNIT;
  await deps.db.transaction().execute(async (trx) => {
    const res = await trx
      .updateTable("top_ups")
      .set({ status: TOPUP_STATUS.success, complete_time: nowSeconds() })
      .where("id", "=", order.id)
      .where("status", "=", TOPUP_STATUS.pending)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return;
    await trx
      .updateTable("users")
      .set({ quota: sql`quota + ${quota}` })
      .where("id", "=", order.user_id)
      .execute();
    const u = await trx.selectFrom("users").select("username").where("id", "=", order.user_id).executeTakeFirst();
    await writeLog(trx, {
      user_id: order.user_id,
      username: u?.username ?? "",
      type: LOG_TYPE.topup,
      quota,
      content: `online top-up: quota added ${formatQuota(quota)}, paid ${Number(order.money).toFixed(2)} (${order.payment_method}, order ${order.trade_no})`,
      // The console words the details from this in the reader's language; content stays as one-api's.
      other: JSON.stringify({
        money: Number(order.money),
        payment_method: order.payment_method,
        trade_no: order.trade_no,
      }),
    });
  });
  return provider.ackBody;
}

export interface TopUpListQuery {
  page: number;
  size: number;
  offset: number;
  keyword?: string;
  userId?: number;
}

/**
 * Top-up records, newest first, in new-api's page shape: the caller's own (userId), or every user's (the
 * admin's list). keyword matches the order number.
 */
export async function listTopUps(deps: AppDeps, q: TopUpListQuery) {
  let base = deps.db.selectFrom("top_ups");
  if (q.userId !== undefined)
    base = base.where("user_id", "=", q.userId).where((eb) => eb.or([eb("amount", ">", 0), eb("money", ">", 0)]));
  const kw = q.keyword?.trim();
  if (kw) base = base.where("trade_no", "like", `%${kw}%`);
  const [{ n }] = (await base.select((eb) => eb.fn.countAll<number>().as("n")).execute()) as [{ n: number }];
  const items = await base.selectAll().orderBy("id", "desc").limit(q.size).offset(q.offset).execute();
  return { page: q.page, page_size: q.size, total: Number(n), items };
}
