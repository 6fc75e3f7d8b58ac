// A key's balance in the shapes chat front-ends read (NextChat, LobeChat, ChatBox and one-api's own
// clients): OpenAI's retired billing routes /dashboard/billing/subscription and /dashboard/billing/usage
// (also under /v1), and OpenRouter's /v1/credits. Numbers follow one-api: the token's total and use with
// DisplayTokenStatEnabled (else the user's), in dollars with DisplayInCurrencyEnabled (else quota units).
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { clientIp } from "../../http/ratelimit.ts";
import { QUOTA_PER_UNIT } from "../../catalogue/index.ts";
import { authenticate, presentedKey, type Caller } from "../auth.ts";

/** What an unlimited token shows as its limit (one-api's figure). */
const UNLIMITED = 100_000_000;

interface Balance {
  total: number;
  used: number;
  expiresAt: number;
  unlimited: boolean;
}

async function balanceOf(deps: AppDeps, caller: Caller): Promise<Balance> {
  if (deps.options.bool("DisplayTokenStatEnabled") && caller.tokenId) {
    const t = await deps.db
      .selectFrom("tokens")
      .select(["remain_quota", "used_quota", "expired_time", "unlimited_quota"])
      .where("id", "=", caller.tokenId)
      .executeTakeFirstOrThrow();
    const used = Number(t.used_quota);
    return {
      total: Number(t.remain_quota) + used,
      used,
      expiresAt: Math.max(0, Number(t.expired_time)),
      unlimited: Boolean(t.unlimited_quota),
    };
  }
  const u = await deps.db
    .selectFrom("users")
    .select(["quota", "used_quota"])
    .where("id", "=", caller.userId)
    .executeTakeFirstOrThrow();
  const used = Number(u.used_quota);
  return { total: Number(u.quota) + used, used, expiresAt: 0, unlimited: false };
}

/** Quota units as shown: dollars (two decimals are what the front-ends print) or raw units. */
function shown(deps: AppDeps, quota: number): number {
  if (!deps.options.bool("DisplayInCurrencyEnabled")) return quota;
  const perUnit = deps.options.number("QuotaPerUnit", QUOTA_PER_UNIT) || QUOTA_PER_UNIT;
  return quota / perUnit;
}

export function balanceModule(deps: AppDeps) {
  const caller = (request: Request, server: any) =>
    authenticate(deps, presentedKey(request), clientIp(request, server, deps.config.trustProxy));

  const subscription = async ({ request, server }: { request: Request; server: any }) => {
    const b = await balanceOf(deps, await caller(request, server));
    const limit = b.unlimited ? UNLIMITED : shown(deps, b.total);
    return {
      object: "billing_subscription",
      has_payment_method: true,
      soft_limit_usd: limit,
      hard_limit_usd: limit,
      system_hard_limit_usd: limit,
      access_until: b.expiresAt,
    };
  };
  // total_usage is in cents, as OpenAI's was.
  const usage = async ({ request, server }: { request: Request; server: any }) => {
    const b = await balanceOf(deps, await caller(request, server));
    return { object: "list", total_usage: shown(deps, b.used) * 100 };
  };
  const credits = async ({ request, server }: { request: Request; server: any }) => {
    const b = await balanceOf(deps, await caller(request, server));
    return {
      data: { total_credits: b.unlimited ? UNLIMITED : shown(deps, b.total), total_usage: shown(deps, b.used) },
    };
  };

  return new Elysia({ name: "relay-balance" })
    .get("/dashboard/billing/subscription", subscription)
    .get("/v1/dashboard/billing/subscription", subscription)
    .get("/dashboard/billing/usage", usage)
    .get("/v1/dashboard/billing/usage", usage)
    .get("/v1/credits", credits);
}
