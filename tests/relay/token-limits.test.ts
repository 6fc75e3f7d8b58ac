// Per-token limits and budgets: requests per minute, tokens per minute, calls in flight and a
// budget that resets daily, weekly or monthly (UTC), each refused with 429 + Retry-After in the caller's format;
// the budget exact under concurrency on every database; the token API takes and shows the fields.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { relayFixture, logsOf, tokenRow, type RelayFixture } from "./fixtures.ts";
import { setLimits, status } from "./token-limits-fixtures.ts";
import {
  limitsRuntime,
  periodEnd,
  takeTokenLimits,
  LEASE_MS,
  MAX_CALL_MS,
  tokenLimits,
} from "../../server/modules/token/limits.ts";

const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});
/** 2026-11-24 (a Tuesday) 10:00:30 UTC */
const T0 = Date.UTC(2026, 10, 24, 10, 0, 30);

describe("budget periods (UTC)", () => {
  test("daily ends at the next midnight, weekly on Monday's, monthly on the first of the next month", () => {
    const s = T0 / 1000;
    expect(periodEnd("daily", s)).toBe(Date.UTC(2026, 10, 25) / 1000);
    expect(periodEnd("weekly", s)).toBe(Date.UTC(2026, 10, 30) / 1000); // Monday 30 November
    expect(periodEnd("weekly", Date.UTC(2026, 10, 30) / 1000)).toBe(Date.UTC(2026, 11, 7) / 1000); // a Monday starts a week
    expect(periodEnd("weekly", Date.UTC(2026, 10, 29, 23, 59, 59) / 1000)).toBe(Date.UTC(2026, 10, 30) / 1000); // Sunday night
    expect(periodEnd("monthly", s)).toBe(Date.UTC(2026, 11, 1) / 1000);
    expect(periodEnd("monthly", Date.UTC(2026, 11, 31, 23) / 1000)).toBe(Date.UTC(2027, 0, 1) / 1000);
    expect(periodEnd("", s)).toBe(0);
  });

  test("a token without limits has none (the relay skips them); a budget without a period is no budget", () => {
    const none = { rpm_limit: 0, tpm_limit: 0, concurrency_limit: 0, budget_quota: 0, budget_period: "" };
    expect(tokenLimits(none)).toBeNull();
    expect(tokenLimits({ ...none, budget_quota: 100 })).toBeNull();
    expect(tokenLimits({ ...none, budget_quota: 100, budget_period: "weekly" })).toEqual({
      rpm: 0,
      tpm: 0,
      concurrency: 0,
      budget: 100,
      period: "weekly",
    });
  });
});

describe("per-token limits on the relay", () => {
  let fx: RelayFixture;
  let userId: number;
  let now = T0;
  beforeAll(async () => {
    fx = await relayFixture("sqlite", { slowMs: 0 });
    await fx.option(
      "ModelPrice",
      JSON.stringify({
        "tl-fixed": 0.002,
        "tl-fixed-slow": 0.002,
        "tl-fail-500": 0.002,
        "claude-tl": 0.002,
        "gemini-tl": 0.002,
      }),
    );
    await fx.option("ModelRatio", JSON.stringify({ "tl-ratio": 1 }));
    await fx.option("CompletionRatio", JSON.stringify({ "tl-ratio": 1 }));
    await fx.channel({
      base_url: fx.mock.url,
      models: ["tl-fixed", "tl-fixed-slow", "tl-fail-500", "tl-ratio", "claude-tl", "gemini-tl"],
    });
    userId = (await fx.user(100_000_000)).id;
    limitsRuntime(fx.ctx.deps).clock = () => now;
  });
  afterAll(() => fx.close());

  const token = async (fields: Record<string, number | string>) => {
    const t = await fx.token(userId, { unlimited_quota: true });
    await setLimits(fx, t.id, fields);
    return t;
  };

  test("rpm: the minute's calls beyond the limit answer 429 with Retry-After until the next minute", async () => {
    now = T0;
    const t = await token({ rpm_limit: 2 });
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
    const res = await fx.call("/v1/chat/completions", t.key, chat("tl-fixed"));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("30"); // 10:00:30 → 10:01:00
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("2");
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(res.headers.get("x-ratelimit-reset-requests")).toBe("30s");
    const body: any = await res.json();
    expect(body.error.code).toBe("rate_limit_exceeded");
    expect(body.error.message).toContain("2 requests per minute");
    now = T0 + 30_000;
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
  });

  test("tpm: counted at settlement (prompt + completion); refused while the minute's tokens are at or over the limit", async () => {
    now = T0 + 120_000;
    const t = await token({ tpm_limit: 40 });
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
    await fx.flush();
    // 30 of 40: still admitted
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
    await fx.flush();
    const res = await fx.call("/v1/chat/completions", t.key, chat("tl-fixed"));
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBe(30);
    expect(res.headers.get("x-ratelimit-limit-tokens")).toBe("40");
    expect(((await res.json()) as any).error.message).toContain("40 tokens per minute");
    const list = await fx.ctx.request("GET", "/api/token/?p=1&size=50", { as: await sessionOf(fx, userId) });
    const row = list.body.data.items.find((r: any) => r.id === t.id);
    expect(row).toMatchObject({ tpm_limit: 40, tpm_used: 60, rpm_used: 0 });
    now += 60_000;
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
  });

  test("concurrency: a call in flight holds its slot until its stream ends; a client that goes away frees it", async () => {
    const t = await token({ concurrency_limit: 1 });
    const first = await fx.call("/v1/chat/completions", t.key, chat("tl-fixed", { stream: true }));
    expect(first.status).toBe(200);
    const second = await fx.call("/v1/chat/completions", t.key, chat("tl-fixed"));
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("1");
    expect(((await second.json()) as any).error.message).toContain("at most 1 call in flight;");
    const list = await fx.ctx.request("GET", "/api/token/?p=1&size=50", { as: await sessionOf(fx, userId) });
    expect(list.body.data.items.find((r: any) => r.id === t.id).concurrency_used).toBe(1);
    await first.text();
    await fx.flush();
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
    await fx.flush();

    // The client disconnects in the middle of a slow stream: the slot comes back.
    fx.mock.options.slowMs = 50;
    const abort = new AbortController();
    const res = await fx.ctx.app.handle(
      new Request("http://localhost/v1/chat/completions", {
        method: "POST",
        signal: abort.signal,
        headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" },
        body: JSON.stringify(chat("tl-fixed-slow", { stream: true })),
      }),
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await reader.cancel().catch(() => {});
    fx.mock.options.slowMs = 0;
    await fx.flush();
    let again = 0;
    for (let i = 0; i < 50 && again !== 200; i++) {
      again = await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")));
      if (again !== 200) await Bun.sleep(20);
    }
    expect(again).toBe(200);
    expect(limitsRuntime(fx.ctx.deps).live.size).toBe(0);
  });

  test("an upstream failure and a refused hold free the slot and the budget estimate", async () => {
    const t = await token({ concurrency_limit: 1, budget_quota: 5000, budget_period: "daily" });
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fail-500")))).not.toBe(200);
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fail-500")))).not.toBe(429);
    // A hold the user's balance refuses: the limits taken before it go back.
    const poor = await fx.user(10);
    const t2 = await fx.token(poor.id, { unlimited_quota: true });
    await setLimits(fx, t2.id, { concurrency_limit: 1, budget_quota: 5000, budget_period: "daily" });
    expect(await status(await fx.call("/v1/chat/completions", t2.key, chat("tl-fixed")))).toBe(403);
    await fx.flush();
    expect(Number((await tokenRow(fx, t2.id)).budget_used)).toBe(0);
    expect(limitsRuntime(fx.ctx.deps).live.size).toBe(0);
  });

  test("daily budget: spent at settlement, refused past it until midnight UTC (Retry-After), then a new period", async () => {
    now = Date.UTC(2026, 10, 24, 23, 0, 0);
    const t = await token({ budget_quota: 2000, budget_period: "daily" });
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
    const res = await fx.call("/v1/chat/completions", t.key, chat("tl-fixed"));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("3600");
    const body: any = await res.json();
    expect(body.error.code).toBe("budget_exceeded");
    await fx.flush();
    const row = await tokenRow(fx, t.id);
    expect(Number(row.budget_used)).toBe(2000);
    expect(Number(row.budget_reset_at)).toBe(Date.UTC(2026, 10, 25) / 1000);
    now = Date.UTC(2026, 10, 25, 0, 0, 1);
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
    await fx.flush();
    const next = await tokenRow(fx, t.id);
    expect(Number(next.budget_used)).toBe(1000);
    expect(Number(next.budget_reset_at)).toBe(Date.UTC(2026, 10, 26) / 1000);
  });

  test("a call larger than the whole budget is refused saying so, without a Retry-After (no period would take it) and marked not to retry", async () => {
    now = Date.UTC(2026, 10, 24, 12, 0, 0);
    const t = await token({ budget_quota: 500, budget_period: "daily" }); // tl-fixed costs 1000 a call
    const res = await fx.call("/v1/chat/completions", t.key, chat("tl-fixed"));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBeNull();
    // The openai and Anthropic SDKs read x-should-retry: they surface the error at once instead of retrying it.
    expect(res.headers.get("x-should-retry")).toBe("false");
    const body: any = await res.json();
    expect(body.error.code).toBe("budget_exceeded");
    expect(body.error.message).toBe(
      "this call (estimated at 1000 quota) is larger than this token's whole daily budget of 500 quota: no period can take it (ask for fewer max_tokens, or raise the budget)",
    );
    const claude = await fx.call("/v1/messages", t.key, {
      model: "tl-fixed",
      max_tokens: 5,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(claude.status).toBe(429);
    expect(claude.headers.get("x-should-retry")).toBe("false");
    expect(((await claude.json()) as any).error.type).toBe("rate_limit_error");
    await fx.flush();
    expect(Number((await tokenRow(fx, t.id)).budget_used)).toBe(0);
  });

  test("weekly and monthly budgets reset on Monday and on the first of the month; the estimate's unused part goes back", async () => {
    now = Date.UTC(2026, 10, 29, 12); // Sunday
    // per-token price: the hold is the prompt estimate + max_tokens (500); the call costs 30
    const w = await token({ budget_quota: 100, budget_period: "weekly" });
    expect(await status(await fx.call("/v1/chat/completions", w.key, chat("tl-ratio", { max_tokens: 50 })))).toBe(200);
    expect(await status(await fx.call("/v1/chat/completions", w.key, chat("tl-ratio", { max_tokens: 50 })))).toBe(200);
    await fx.flush();
    expect(Number((await tokenRow(fx, w.id)).budget_used)).toBe(60);
    // 60 + an estimate of more than 40 does not fit
    expect((await fx.call("/v1/chat/completions", w.key, chat("tl-ratio", { max_tokens: 50 }))).status).toBe(429);
    now = Date.UTC(2026, 10, 30, 0, 0, 5); // Monday
    expect(await status(await fx.call("/v1/chat/completions", w.key, chat("tl-ratio", { max_tokens: 50 })))).toBe(200);

    now = Date.UTC(2026, 10, 30, 12);
    const m = await token({ budget_quota: 1000, budget_period: "monthly" });
    expect(await status(await fx.call("/v1/chat/completions", m.key, chat("tl-fixed")))).toBe(200);
    const refused = await fx.call("/v1/chat/completions", m.key, chat("tl-fixed"));
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe(String(12 * 3600));
    now = Date.UTC(2026, 11, 1, 0, 0, 1);
    expect(await status(await fx.call("/v1/chat/completions", m.key, chat("tl-fixed")))).toBe(200);
  });

  test("429 in the Claude and Gemini formats, with Retry-After", async () => {
    now = Date.UTC(2026, 11, 2, 8, 0, 15);
    const t = await token({ rpm_limit: 1 });
    await (
      await fx.call("/v1/messages", t.key, {
        model: "claude-tl",
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
      })
    ).arrayBuffer();
    const claude = await fx.call("/v1/messages", t.key, {
      model: "claude-tl",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(claude.status).toBe(429);
    expect(claude.headers.get("retry-after")).toBe("45");
    const cb: any = await claude.json();
    expect(cb).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
    expect(cb.error.message).toContain("at most 1 request per minute;");

    const gemini = await fx.ctx.app.handle(
      new Request(`http://localhost/v1beta/models/gemini-tl:generateContent?key=${t.key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
      }),
    );
    expect(gemini.status).toBe(429);
    expect(gemini.headers.get("retry-after")).toBe("45");
    // As Google's API answers a 429: the wait in a google.rpc.RetryInfo detail, which Google's clients read.
    expect(await gemini.json()).toMatchObject({
      error: {
        code: 429,
        status: "RESOURCE_EXHAUSTED",
        details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "45s" }],
      },
    });
  });

  test("a live call's lease is renewed past LEASE_MS; a slot never ended stops being renewed after MAX_CALL_MS", async () => {
    now = Date.UTC(2026, 11, 4, 9);
    const start = now;
    const t = await token({ concurrency_limit: 1 });
    const rt = limitsRuntime(fx.ctx.deps);
    const lease = await takeTokenLimits(fx.ctx.deps, t.id, tokenLimits(await tokenRow(fx, t.id))!, 0);
    now = start + LEASE_MS - 1;
    await rt.renew();
    now = start + LEASE_MS + 10_000;
    expect((await fx.call("/v1/chat/completions", t.key, chat("tl-fixed"))).status).toBe(429);
    await lease.end();
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);

    // A slot some path forgot to end: renewed for MAX_CALL_MS, then left to expire.
    const forgotten = now;
    await takeTokenLimits(fx.ctx.deps, t.id, tokenLimits(await tokenRow(fx, t.id))!, 0);
    now = forgotten + MAX_CALL_MS + 1;
    await rt.renew();
    expect(rt.live.size).toBe(0);
    now += LEASE_MS;
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
  });

  test("a lease of a call whose instance died (no renewal) expires: the slot does not leak", async () => {
    now = Date.UTC(2026, 11, 3, 9);
    const t = await token({ concurrency_limit: 1 });
    const rt = limitsRuntime(fx.ctx.deps);
    const row = await tokenRow(fx, t.id);
    await takeTokenLimits(fx.ctx.deps, t.id, tokenLimits(row)!, 0);
    expect((await fx.call("/v1/chat/completions", t.key, chat("tl-fixed"))).status).toBe(429);
    rt.live.clear(); // the instance that held it is gone: nobody renews it
    now += LEASE_MS + 1;
    expect(await status(await fx.call("/v1/chat/completions", t.key, chat("tl-fixed")))).toBe(200);
  });
});

const sessions = new Map<number, any>();
async function sessionOf(fx: RelayFixture, userId: number) {
  if (!sessions.has(userId)) {
    const u = await fx.ctx.deps.db
      .selectFrom("users")
      .select("username")
      .where("id", "=", userId)
      .executeTakeFirstOrThrow();
    sessions.set(userId, await fx.ctx.login(u.username, "password123"));
  }
  return sessions.get(userId);
}

describe("token API: limit fields", () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
  });
  afterAll(() => fx.close());

  test("create and update take the fields, reject negatives and a budget without a period, and return them", async () => {
    const u = await fx.ctx.user();
    const created = await fx.ctx.request("POST", "/api/token/", {
      as: u,
      body: {
        name: "lim",
        remain_quota: 1000,
        expired_time: -1,
        rpm_limit: 60,
        tpm_limit: 100000,
        concurrency_limit: 4,
        budget_quota: 500000,
        budget_period: "daily",
      },
    });
    expect(created.body.success).toBe(true);
    const [t] = created.body.data;
    expect(t).toMatchObject({
      rpm_limit: 60,
      tpm_limit: 100000,
      concurrency_limit: 4,
      budget_quota: 500000,
      budget_period: "daily",
      budget_used: 0,
    });
    for (const bad of [
      { rpm_limit: -1 },
      { tpm_limit: -5 },
      { concurrency_limit: 1.5 },
      { budget_quota: -1 },
      { budget_period: "hourly" },
    ]) {
      const r = await fx.ctx.request("PUT", "/api/token/", { as: u, body: { id: t.id, name: "lim", ...bad } });
      expect(r.status).toBe(400);
      expect(r.body.success).toBe(false);
    }
    const noPeriod = await fx.ctx.request("PUT", "/api/token/", {
      as: u,
      body: { id: t.id, name: "lim", budget_period: "" },
    });
    expect(noPeriod.status).toBe(400);
    expect(noPeriod.body.message).toContain("budget_period");
    const off = await fx.ctx.request("PUT", "/api/token/", {
      as: u,
      body: { id: t.id, name: "lim", rpm_limit: 0, budget_quota: 0, budget_period: "" },
    });
    expect(off.body.data).toMatchObject({ rpm_limit: 0, budget_quota: 0, budget_period: "", tpm_limit: 100000 });
    const one = await fx.ctx.request("GET", `/api/token/${t.id}`, { as: u });
    expect(one.body.data).toMatchObject({ tpm_limit: 100000, concurrency_limit: 4 });
    const list = await fx.ctx.request("GET", "/api/token/?p=1&size=10", { as: u });
    expect(list.body.data.items[0]).toMatchObject({
      id: t.id,
      tpm_limit: 100000,
      tpm_used: 0,
      rpm_used: 0,
      concurrency_used: 0,
      budget_used: 0,
    });
  });
});

for (const kind of storageKinds())
  describe(`token API: limit values at the edges on ${kind}`, () => {
    test("values past what the columns hold are refused with 400 (not a database error); the largest accepted are kept", async () => {
      const fx = await relayFixture(kind);
      try {
        const u = await fx.ctx.user();
        const created = await fx.ctx.request("POST", "/api/token/", {
          as: u,
          body: { name: "edge", remain_quota: 1000, expired_time: -1 },
        });
        const id = created.body.data[0].id;
        // rpm_limit and concurrency_limit are 32-bit columns (new-api's int); tpm_limit and budget_quota 64-bit.
        for (const bad of [
          { rpm_limit: 2 ** 31 },
          { concurrency_limit: 3_000_000_000 },
          { rpm_limit: 1e12 },
          { tpm_limit: 2 ** 53 },
          { budget_quota: 1e300 },
        ]) {
          const r = await fx.ctx.request("PUT", "/api/token/", { as: u, body: { id, name: "edge", ...bad } });
          expect(r.status).toBe(400);
          expect(r.body.message).toContain(Object.keys(bad)[0]);
        }
        const max = {
          rpm_limit: 2 ** 31 - 1,
          concurrency_limit: 2 ** 31 - 1,
          tpm_limit: Number.MAX_SAFE_INTEGER,
          budget_quota: Number.MAX_SAFE_INTEGER,
          budget_period: "monthly",
        };
        const ok = await fx.ctx.request("PUT", "/api/token/", { as: u, body: { id, name: "edge", ...max } });
        expect(ok.body.success).toBe(true);
        expect((await fx.ctx.request("GET", `/api/token/${id}`, { as: u })).body.data).toMatchObject(max);
        const bigNew = await fx.ctx.request("POST", "/api/token/", {
          as: u,
          body: { name: "edge2", remain_quota: 1, expired_time: -1, rpm_limit: 2 ** 31 },
        });
        expect(bigNew.status).toBe(400);
      } finally {
        await fx.close();
      }
    }, 30_000);
  });

for (const kind of storageKinds()) {
  describe(`budget exact under concurrency on ${kind}`, () => {
    const CALLS = 200;
    const K = 23;
    test(`${CALLS} simultaneous calls on a daily budget worth ${K} calls: exactly ${K} served, budget_used = logged quota`, async () => {
      const fx = await relayFixture(kind);
      try {
        await fx.option("ModelPrice", JSON.stringify({ "tl-fixed": 0.002 }));
        await fx.channel({ base_url: fx.mock.url, models: ["tl-fixed"] });
        const user = await fx.user(100_000_000);
        const t = await fx.token(user.id, { unlimited_quota: true });
        await setLimits(fx, t.id, { budget_quota: K * 1000, budget_period: "daily" });
        const results = await Promise.all(
          Array.from({ length: CALLS }, (_, i) =>
            fx.call("/v1/chat/completions", t.key, chat("tl-fixed", { stream: i % 2 === 0 })).then(status),
          ),
        );
        expect(results.filter((s) => s === 200).length).toBe(K);
        expect(results.every((s) => s === 200 || s === 429)).toBe(true);
        await fx.flush();
        const row = await tokenRow(fx, t.id);
        const logs = await logsOf(fx, user.id);
        expect(logs.length).toBe(K);
        expect(Number(row.budget_used)).toBe(logs.reduce((s, l) => s + l.quota, 0));
        expect(Number(row.budget_used)).toBe(K * 1000);
      } finally {
        await fx.close();
      }
    }, 60_000);

    test(`${CALLS} simultaneous calls whose estimate is above their cost: the unused part goes back, budget_used = logged quota, never over`, async () => {
      const fx = await relayFixture(kind);
      try {
        // 10 prompt + 20 completion tokens at ratio 1 = 30 per call; the estimate holds the prompt + max_tokens 60.
        await fx.option("ModelRatio", JSON.stringify({ "tl-ratio": 1 }));
        await fx.option("CompletionRatio", JSON.stringify({ "tl-ratio": 1 }));
        await fx.channel({ base_url: fx.mock.url, models: ["tl-ratio"] });
        const user = await fx.user(100_000_000);
        const t = await fx.token(user.id, { unlimited_quota: true });
        const BUDGET = 30 * K;
        await setLimits(fx, t.id, { budget_quota: BUDGET, budget_period: "weekly" });
        const results = await Promise.all(
          Array.from({ length: CALLS }, () =>
            fx.call("/v1/chat/completions", t.key, chat("tl-ratio", { max_tokens: 60 })).then(status),
          ),
        );
        const ok = results.filter((s) => s === 200).length;
        expect(ok).toBeGreaterThan(0);
        expect(ok).toBeLessThanOrEqual(K);
        expect(results.every((s) => s === 200 || s === 429)).toBe(true);
        await fx.flush();
        const row = await tokenRow(fx, t.id);
        const logged = (await logsOf(fx, user.id)).reduce((s, l) => s + l.quota, 0);
        expect(logged).toBe(ok * 30);
        expect(Number(row.budget_used)).toBe(logged);
        expect(Number(row.budget_used)).toBeLessThanOrEqual(BUDGET);
      } finally {
        await fx.close();
      }
    }, 60_000);
  });
}

for (const kind of storageKinds())
  describe(`task endpoints count toward the token's limits on ${kind}`, () => {
    test("a Suno submit counts a request, spends its price from the budget and frees its slot; a failed task gives it back; past the budget, 429 in Suno's shape", async () => {
      const { taskFixture, PRICE_UNIT } = await import("./task-fixtures.ts");
      const { startSunoMock } = await import("../mocks/suno-upstream.ts");
      const { SUNO_MODELS } = await import("../../server/catalogue/tasks.ts");
      const fx = await taskFixture(kind);
      const suno = startSunoMock({ key: "suno-key-tl" });
      try {
        await fx.channel({ type: 36, key: "suno-key-tl", base_url: suno.url, models: [...SUNO_MODELS] });
        const MUSIC = 0.1 * PRICE_UNIT;
        const LYRICS = 0.01 * PRICE_UNIT;
        const p = await fx.payer(10_000_000, null);
        await setLimits(fx, p.tokenId, {
          rpm_limit: 10,
          concurrency_limit: 1,
          budget_quota: MUSIC,
          budget_period: "daily",
        });
        const used = async () => Number((await tokenRow(fx, p.tokenId)).budget_used);
        const submit = (action: string, prompt: string) =>
          fx.ctx.app.handle(
            new Request(`http://localhost/suno/submit/${action}`, {
              method: "POST",
              headers: { authorization: `Bearer ${p.key}`, "content-type": "application/json" },
              body: JSON.stringify({ prompt }),
            }),
          );
        const lyrics = await submit("lyrics", "words that fail");
        expect(lyrics.status).toBe(200);
        const lyricsId = ((await lyrics.json()) as any).data;
        expect(await used()).toBe(LYRICS);
        expect(limitsRuntime(fx.ctx.deps).live.size).toBe(0);
        // LYRICS + MUSIC would pass the budget
        const over = await submit("music", "a sea shanty");
        expect(over.status).toBe(429);
        expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(await over.json()).toMatchObject({ code: "budget_exceeded", data: null });
        // The lyrics fail upstream: their price goes back to the quota and to the budget, once.
        suno.advance(4);
        await fx.round();
        await fx.round();
        expect(
          (
            await fx.ctx.deps.db
              .selectFrom("tasks")
              .select("status")
              .where("task_id", "=", lyricsId)
              .executeTakeFirstOrThrow()
          ).status,
        ).toBe("FAILURE");
        expect(await used()).toBe(0);
        expect((await submit("music", "a sea shanty")).status).toBe(200);
        expect(await used()).toBe(MUSIC);
        expect((await submit("lyrics", "more words")).status).toBe(429);
        const list = await fx.ctx.request("GET", "/api/token/?p=1&size=10", { as: p.session });
        expect(list.body.data.items[0]).toMatchObject({ rpm_used: 4, budget_used: MUSIC, budget_quota: MUSIC });
      } finally {
        await suno.stop();
        await fx.close();
      }
    });
  });
