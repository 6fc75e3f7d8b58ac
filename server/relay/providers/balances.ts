// Upstream account balances, for the provider kinds that expose one: per channel type, the GET requests
// to make and a parser of that provider's answer (dollars).
import { apiRoot } from "./openai/quirks.ts";

export const BALANCE_TIMEOUT_MS = 15_000;

type Json = any;

interface BalanceReader {
  /** The GET requests to make, in order (OpenAI needs two). */
  urls(base: string): string[];
  parse(answers: Json[]): number;
  /** The auth headers, when the key is not sent as a bearer token. */
  headers?(key: string): Record<string, string>;
}

/** base + "/v1/..." unless the base already ends in a version segment. */
function v1(base: string, path: string): string {
  return /\/v\d+$/.test(base) ? base + path : base + "/v1" + path;
}

function num(v: unknown, what: string): number {
  const n = typeof v === "string" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isFinite(n)) throw new Error(`the upstream answer has no ${what}`);
  return n;
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

function isoDate(d: Date) {
  return d.toISOString().slice(0, 10);
}

/** OpenAI-style billing: the subscription's hard limit minus this period's usage (reported in cents). */
const openaiBilling: BalanceReader = {
  urls(base) {
    const now = new Date();
    const start = new Date(now.getTime() - 100 * 86400_000);
    const end = new Date(now.getTime() + 86400_000);
    return [
      v1(base, "/dashboard/billing/subscription"),
      v1(base, `/dashboard/billing/usage?start_date=${isoDate(start)}&end_date=${isoDate(end)}`),
    ];
  },
  parse([sub, usage]) {
    return round(num(sub?.hard_limit_usd, "hard_limit_usd") - num(usage?.total_usage, "total_usage") / 100);
  },
};

/** A custom channel's base URL may be its full chat URL (one-api / new-api layout): billing sits at its API root. */
const customBilling: BalanceReader = { ...openaiBilling, urls: (base) => openaiBilling.urls(apiRoot(8, base)) };

const BALANCE_READERS: Record<number, BalanceReader> = {
  1: openaiBilling,
  8: customBilling,
  // AI Proxy (the knowledge base's account): points left, on the account site rather than the API host.
  21: {
    urls: (base) => [`${base === "https://api.aiproxy.io" ? "https://aiproxy.io" : base}/api/report/getUserOverview`],
    headers: (key) => ({ "api-key": key }),
    parse([j]) {
      if (j?.success === false)
        throw new Error(`the balance endpoint answered: ${j?.message ?? j?.error_code ?? "failure"}`);
      return round(num(j?.data?.totalPoints, "totalPoints"));
    },
  },
  // OpenRouter: purchased credits minus usage, both in dollars.
  20: {
    urls: (base) => [v1(base, "/credits")],
    parse: ([j]) => round(num(j?.data?.total_credits, "total_credits") - num(j?.data?.total_usage, "total_usage")),
  },
  // DeepSeek: one entry per currency; prefer USD, else the first listed.
  43: {
    urls: (base) => [base.replace(/\/v\d+$/, "") + "/user/balance"],
    parse([j]) {
      const infos: Json[] = Array.isArray(j?.balance_infos) ? j.balance_infos : [];
      const info = infos.find((i) => i?.currency === "USD") ?? infos[0];
      if (!info) throw new Error("the upstream answer has no balance_infos");
      return round(num(info.total_balance, "total_balance"));
    },
  },
  // SiliconCloud: /v1/user/info → data.totalBalance (a decimal string).
  40: {
    urls: (base) => [v1(base, "/user/info")],
    parse: ([j]) => round(num(j?.data?.totalBalance ?? j?.data?.balance, "totalBalance")),
  },
  // Moonshot: /v1/users/me/balance → data.available_balance.
  25: {
    urls: (base) => [v1(base, "/users/me/balance")],
    parse: ([j]) => round(num(j?.data?.available_balance, "available_balance")),
  },
};

async function getJson(
  url: string,
  headers: Record<string, string>,
  cancel?: AbortSignal,
  init: RequestInit = {},
): Promise<Json> {
  const timeout = AbortSignal.timeout(BALANCE_TIMEOUT_MS);
  const signal = cancel ? AbortSignal.any([timeout, cancel]) : timeout;
  const res = await fetch(url, { ...init, headers: { ...headers, accept: "application/json" }, signal });
  const text = await res.text();
  if (!res.ok) {
    let detail = "";
    try {
      const j = JSON.parse(text);
      detail = j?.error?.message ?? j?.message ?? "";
    } catch {}
    throw new Error(`the balance endpoint answered ${res.status}${detail ? `: ${detail}` : ""}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new Error("the balance endpoint did not answer JSON");
  }
}

/** The balance reader of a channel type, if its provider has one. `init` carries the channel's proxy. */
export function balanceReader(
  type: number,
): { read(base: string, key: string, cancel?: AbortSignal, init?: RequestInit): Promise<number> } | null {
  const reader = BALANCE_READERS[type];
  if (!reader) return null;
  return {
    read: async (base, key, cancel, init) => {
      const headers = reader.headers?.(key) ?? { authorization: `Bearer ${key}` };
      return reader.parse(await Promise.all(reader.urls(base).map((u) => getJson(u, headers, cancel, init))));
    },
  };
}
