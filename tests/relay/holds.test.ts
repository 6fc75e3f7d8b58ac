// No answer costs more than its payer can pay. A call's hold covers its worst case: the prompt estimate plus
// its output bound (max_tokens, or the model's output limit when it names none) at the completion price.
// When the balance cannot pay that, the call is capped (a lower max-tokens field goes upstream, in that
// upstream's own name) or, when not even the prompt and one output token are paid, refused with the quota
// error. Calls running at once share the balance through their holds, so together they cannot take more than
// it; a balance never goes below zero unless QuotaCreditLimit lets it, and then never further than that.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { relayFixture, logsOf, tokenRow, userRow, type RelayFixture } from "./fixtures.ts";
import { LONG, startLongUpstream, type LongUpstream } from "./long-upstream.ts";
import { setLimits } from "./token-limits-fixtures.ts";
import { catalogueOutputLimit, DEFAULT_OUTPUT_LIMIT } from "../../server/catalogue/output-limits.ts";
import { affordableOutput, heldPrompt, outputBound, worstCaseQuota, type Price } from "../../server/relay/billing.ts";

const MODELS = ["long-m", "long-m-ignore", "claude-long", "gemini-long"];
const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "write a long story" }],
  ...extra,
});

async function prices(fx: RelayFixture) {
  const each = (v: number) => JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, v])));
  await fx.option("ModelRatio", each(1));
  await fx.option("CompletionRatio", each(1));
}

/** The output tokens an answer shows it delivered, in whichever format it is. */
function deliveredOutput(body: any): number {
  return Number(
    body?.usage?.completion_tokens ?? body?.usage?.output_tokens ?? body?.usageMetadata?.candidatesTokenCount ?? 0,
  );
}

interface Outcome {
  status: number;
  body: any;
}

async function calls(
  fx: RelayFixture,
  keys: string[],
  n: number,
  body: (i: number) => unknown,
  path = "/v1/chat/completions",
): Promise<Outcome[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      fx
        .call(path, keys[i % keys.length], body(i))
        .then(async (r) => ({ status: r.status, body: await r.json().catch(() => null) })),
    ),
  );
}

/** Every answer served was paid in full: its delivered output, at ratio 1, is within what its log billed. */
async function expectNothingUnpaid(fx: RelayFixture, userId: number, outcomes: Outcome[]) {
  await fx.flush();
  const logs = (await logsOf(fx, userId)).filter((l) => l.type === 2);
  const served = outcomes.filter((o) => o.status === 200);
  expect(logs.length).toBe(served.length);
  for (const o of served) expect(deliveredOutput(o.body)).toBeGreaterThan(0);
  const delivered = served.reduce((sum, o) => sum + 10 + deliveredOutput(o.body), 0);
  const billed = logs.reduce((sum, l) => sum + l.quota, 0);
  expect(delivered).toBeLessThanOrEqual(billed);
  for (const o of outcomes) expect([200, 403]).toContain(o.status);
  return billed;
}

describe("the worst case and the cap", () => {
  const price = (over: Partial<Price> = {}): Price => ({
    perCall: false,
    modelPrice: -1,
    modelRatio: 1.5,
    completionRatio: 4,
    cacheRatio: 1,
    cacheCreationRatio: 1.25,
    groupRatio: 1,
    outputLimit: 16_384,
    ...over,
  });
  test("the output bound is what the call asked for, at most the model's limit; the limit when it asked for nothing", () => {
    expect(outputBound(price(), 100)).toBe(100);
    expect(outputBound(price(), 1_000_000)).toBe(16_384);
    expect(outputBound(price(), 0)).toBe(16_384);
    expect(catalogueOutputLimit("gpt-4o-mini")).toBe(16_384);
    expect(catalogueOutputLimit("claude-3-5-haiku-20241022")).toBe(8192);
    expect(catalogueOutputLimit("some-new-model")).toBe(DEFAULT_OUTPUT_LIMIT);
  });
  test("the cap is the most output whose worst case the quota pays, exactly, rounding included", () => {
    const p = price();
    for (const quota of [7, 50, 51, 999, 5000, 123_457]) {
      const n = affordableOutput(p, 4, quota, 16_384);
      if (n > 0) expect(worstCaseQuota(p, 4, n)).toBeLessThanOrEqual(quota);
      if (n < 16_384) expect(worstCaseQuota(p, 4, n + 1)).toBeGreaterThan(quota);
    }
    expect(affordableOutput(p, 4, 6, 16_384)).toBe(0);
    expect(affordableOutput(p, 4, 1e12, 16_384)).toBe(16_384);
    expect(heldPrompt(4)).toBe(20);
    expect(heldPrompt(400)).toBe(500);
  });
});

for (const kind of storageKinds()) {
  describe(`holds cover the worst case on ${kind}`, () => {
    let fx: RelayFixture;
    let up: LongUpstream;
    beforeAll(async () => {
      fx = await relayFixture(kind, {}, { batchUpdateIntervalMs: 20 });
      up = startLongUpstream();
      await prices(fx);
      await fx.channel({ base_url: up.url, models: ["long-m", "long-m-ignore"] });
    });
    afterAll(async () => {
      up.stop();
      await fx.close();
    });

    test("a 50-unit token, 20 long answers at once: at most 50 billed, none delivered beyond what was paid", async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 50 });
      const before = up.seen.length;
      const out = await calls(fx, [token.key], 20, () => chat("long-m"));
      const billed = await expectNothingUnpaid(fx, user.id, out);
      expect(billed).toBeGreaterThan(0);
      expect(billed).toBeLessThanOrEqual(50);
      const t = await tokenRow(fx, token.id);
      expect(t.remain_quota).toBe(50 - billed);
      expect(t.used_quota).toBe(billed);
      // What went upstream was capped to what the token could pay (the prompt estimate taken first).
      const sent = up.seen.slice(before);
      expect(sent.length).toBeGreaterThan(0);
      for (const s of sent) {
        expect(s.field).toBe("max_tokens");
        expect(s.bound!).toBeGreaterThan(0);
        expect(s.bound!).toBeLessThan(50);
      }
      expect(out.filter((o) => o.status === 403).every((o) => o.body.error.code === "insufficient_token_quota")).toBe(
        true,
      );
    });

    test("a 50-unit user with several tokens, 20 long answers at once: at most 50 billed, the balance never below 0", async () => {
      const user = await fx.user(50);
      const keys = [];
      for (let i = 0; i < 4; i++) keys.push((await fx.token(user.id, { remain_quota: 1_000_000 })).key);
      keys.push((await fx.token(user.id, { unlimited_quota: true })).key);
      const out = await calls(fx, keys, 20, (i) => chat("long-m", i % 2 ? { max_tokens: 100_000 } : {}));
      const billed = await expectNothingUnpaid(fx, user.id, out);
      expect(billed).toBeGreaterThan(0);
      expect(billed).toBeLessThanOrEqual(50);
      const u = await userRow(fx, user.id);
      expect(u.quota).toBe(50 - billed);
      expect(u.used_quota).toBe(billed);
    });

    test("a 5,000-unit token without max_tokens: the model's output limit is held, capped to the balance, at most 5,000 billed", async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 5000 });
      const before = up.seen.length;
      const out = await calls(fx, [token.key], 9, () => chat("long-m"));
      const billed = await expectNothingUnpaid(fx, user.id, out);
      expect(billed).toBeGreaterThan(0);
      expect(billed).toBeLessThanOrEqual(5000);
      expect((await tokenRow(fx, token.id)).remain_quota).toBe(5000 - billed);
      for (const s of up.seen.slice(before)) expect(s.bound!).toBeLessThan(5000);
    });

    test("a rich payer without max_tokens is held at the model's output limit and sent no bound of the gateway's", async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 1_000_000_000 });
      const before = up.seen.length;
      const res = await fx.call("/v1/chat/completions", token.key, chat("long-m"));
      expect(res.status).toBe(200);
      // The upstream answered LONG tokens, past the limit held (DEFAULT_OUTPUT_LIMIT): the balance paid the rest.
      expect(deliveredOutput(await res.json())).toBe(LONG);
      expect(up.seen[before].bound).toBeNull();
      await fx.flush();
      const [log] = await logsOf(fx, user.id);
      expect(log.quota).toBe(10 + LONG);
      expect(DEFAULT_OUTPUT_LIMIT).toBeLessThan(LONG);
    });

    test("an upstream that ignores the cap: its whole answer is not delivered, nothing is billed, the balance is whole", async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 50 });
      const out = await calls(fx, [token.key], 5, () => chat("long-m-ignore"));
      expect(out.every((o) => o.status === 403)).toBe(true);
      expect(out[0].body.error.code).toBe("insufficient_token_quota");
      await fx.flush();
      expect((await logsOf(fx, user.id)).filter((l) => l.type === 2)).toEqual([]);
      expect((await tokenRow(fx, token.id)).remain_quota).toBe(50);
    });

    test("a balance that cannot pay the prompt and one output token is refused before the upstream is called", async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 3 });
      const before = up.seen.length;
      const res = await fx.call("/v1/chat/completions", token.key, chat("long-m", { max_tokens: 10 }));
      expect(res.status).toBe(403);
      expect((await res.json()).error.code).toBe("insufficient_token_quota");
      expect(up.seen.length).toBe(before);
    });

    test("QuotaCreditLimit lets a payer go at most that far below zero", async () => {
      await fx.option("QuotaCreditLimit", "100");
      try {
        const user = await fx.user(1_000_000_000);
        const token = await fx.token(user.id, { remain_quota: 50 });
        const out = await calls(fx, [token.key], 20, () => chat("long-m"));
        const billed = await expectNothingUnpaid(fx, user.id, out);
        expect(billed).toBeGreaterThan(50);
        expect(billed).toBeLessThanOrEqual(150);
        expect((await tokenRow(fx, token.id)).remain_quota).toBeGreaterThanOrEqual(-100);
      } finally {
        await fx.option("QuotaCreditLimit", "0");
      }
    });

    test("a token budget smaller than a call's worst case still serves it: the budget counts the call's usual estimate", async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 1_000_000 });
      await setLimits(fx, token.id, { budget_quota: 2000, budget_period: "daily" });
      const res = await fx.call("/v1/chat/completions", token.key, chat("long-m", { max_tokens: 100 }));
      expect(res.status).toBe(200);
      expect(deliveredOutput(await res.json())).toBe(100);
      const bare = await fx.call("/v1/chat/completions", token.key, chat("long-m"));
      expect(bare.status).toBe(200);
      await bare.arrayBuffer();
    });

    test("a fixed price per call is held at its price: a balance one unit short is refused, the price is billed exactly", async () => {
      await fx.option("ModelPrice", JSON.stringify({ "long-m": 0.0001 })); // 50 units a call
      try {
        const user = await fx.user(1_000_000_000);
        const short = await fx.token(user.id, { remain_quota: 49 });
        expect((await fx.call("/v1/chat/completions", short.key, chat("long-m"))).status).toBe(403);
        const token = await fx.token(user.id, { remain_quota: 120 });
        const out = await calls(fx, [token.key], 6, () => chat("long-m"));
        expect(out.filter((o) => o.status === 200).length).toBe(2);
        await fx.flush();
        expect((await tokenRow(fx, token.id)).remain_quota).toBe(20);
      } finally {
        await fx.option("ModelPrice", "{}");
      }
    });
  });
}

describe("the cap goes upstream in each upstream's own field", () => {
  let fx: RelayFixture;
  let up: LongUpstream;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    up = startLongUpstream();
    await prices(fx);
    await fx.channel({ base_url: up.url, models: ["long-m"] });
    await fx.channel({ type: 14, base_url: up.url, models: ["claude-long"] });
    await fx.channel({ type: 24, base_url: up.url, models: ["gemini-long"] });
  });
  afterAll(async () => {
    up.stop();
    await fx.close();
  });

  const cases: { name: string; path: string; body: unknown; field: string }[] = [
    {
      name: "OpenAI chat → OpenAI chat",
      path: "/v1/chat/completions",
      body: chat("long-m", { max_tokens: 50_000 }),
      field: "max_tokens",
    },
    {
      name: "OpenAI chat (max_completion_tokens) → OpenAI chat",
      path: "/v1/chat/completions",
      body: chat("long-m", { max_completion_tokens: 50_000 }),
      field: "max_completion_tokens",
    },
    {
      name: "Responses → Responses",
      path: "/v1/responses",
      body: { model: "long-m", input: "write a long story", max_output_tokens: 50_000 },
      field: "max_output_tokens",
    },
    {
      name: "Claude → Claude",
      path: "/v1/messages",
      body: { model: "claude-long", max_tokens: 50_000, messages: [{ role: "user", content: "write a long story" }] },
      field: "max_tokens",
    },
    { name: "OpenAI chat → Claude", path: "/v1/chat/completions", body: chat("claude-long"), field: "max_tokens" },
    {
      name: "Gemini → Gemini",
      path: "/v1beta/models/gemini-long:generateContent",
      body: {
        contents: [{ role: "user", parts: [{ text: "write a long story" }] }],
        generationConfig: { maxOutputTokens: 50_000 },
      },
      field: "generationConfig.maxOutputTokens",
    },
    {
      name: "OpenAI chat → Gemini",
      path: "/v1/chat/completions",
      body: chat("gemini-long"),
      field: "generationConfig.maxOutputTokens",
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const user = await fx.user(1_000_000_000);
      const token = await fx.token(user.id, { remain_quota: 1000 });
      const before = up.seen.length;
      const res = await fx.call(c.path, token.key, c.body);
      const body = await res.json();
      expect(res.status).toBe(200);
      const seen = up.seen[before];
      expect(seen.field).toBe(c.field);
      expect(seen.bound!).toBeGreaterThan(900);
      expect(seen.bound!).toBeLessThan(1000);
      expect(deliveredOutput(body)).toBe(seen.bound!);
      await fx.flush();
      const t = await tokenRow(fx, token.id);
      expect(t.remain_quota).toBeGreaterThanOrEqual(0);
      expect(t.used_quota).toBe(10 + seen.bound!);
    });
  }
});
