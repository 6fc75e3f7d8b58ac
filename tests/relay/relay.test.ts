// The relay end to end over app.handle(): token checks, routing and retries, billing, logs, limits,
// playground and the form lists. Upstreams are local mocks; every model name is unique to its test.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, logsOf, tokenRow, userRow, type RelayFixture } from "./fixtures.ts";
import { startMockUpstream, SECRET_IN_ERRORS, type MockUpstream } from "../mocks/openai-upstream.ts";
import { ROLE } from "../../server/catalogue/index.ts";
import { countTokens } from "../../server/relay/tokenizer.ts";

let fx: RelayFixture;
const extra: MockUpstream[] = [];

beforeAll(async () => {
  fx = await relayFixture("sqlite", {}, { trustProxy: true });
});
afterAll(async () => {
  for (const m of extra) await m.stop();
  await fx.close();
});

const chat = (model: string, more: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "hi there" }],
  ...more,
});

async function price(model: string, ratio: number, completion = 1, cache?: number) {
  const o = fx.ctx.deps.options;
  await fx.option("ModelRatio", JSON.stringify({ ...o.json("ModelRatio", {}), [model]: ratio }));
  await fx.option("CompletionRatio", JSON.stringify({ ...o.json("CompletionRatio", {}), [model]: completion }));
  if (cache !== undefined)
    await fx.option("CacheRatio", JSON.stringify({ ...o.json("CacheRatio", {}), [model]: cache }));
}

async function fixedPrice(model: string, dollars: number) {
  await fx.option("ModelPrice", JSON.stringify({ ...fx.ctx.deps.options.json("ModelPrice", {}), [model]: dollars }));
}

/** A user with quota and a token, and a channel on the shared mock serving `models`. */
async function setup(
  models: string[],
  opts: { quota?: number; token?: Parameters<RelayFixture["token"]>[1]; role?: number } = {},
) {
  for (const m of models) await fx.channel({ base_url: fx.mock.url, models: [m] });
  const user = await fx.user(opts.quota ?? 10_000_000, opts.role ? { role: opts.role } : {});
  const token = await fx.token(user.id, opts.token);
  return { user, token };
}

function mock(options: Parameters<typeof startMockUpstream>[0] = {}) {
  const m = startMockUpstream(options);
  extra.push(m);
  return m;
}

async function json(res: Response) {
  return res.json() as Promise<any>;
}

describe("token authentication", () => {
  test("a missing or unknown key is 401 in OpenAI format", async () => {
    const r1 = await fx.ctx.app.handle(
      new Request("http://localhost/v1/chat/completions", { method: "POST", body: JSON.stringify(chat("x")) }),
    );
    expect(r1.status).toBe(401);
    expect((await json(r1)).error.message).toContain("no API key");
    const r2 = await fx.call("/v1/chat/completions", "sk-doesnotexist", chat("x"));
    expect(r2.status).toBe(401);
    expect((await json(r2)).error).toMatchObject({ message: "invalid API key", type: "invalid_request_error" });
  });

  test("disabled and expired tokens are refused; expiry marks the token expired", async () => {
    await price("auth-m1", 1);
    const { user } = await setup(["auth-m1"]);
    const disabled = await fx.token(user.id, { status: 2 });
    expect((await fx.call("/v1/chat/completions", disabled.key, chat("auth-m1"))).status).toBe(401);
    const expired = await fx.token(user.id, { expired_time: Math.floor(Date.now() / 1000) - 10 });
    const r = await fx.call("/v1/chat/completions", expired.key, chat("auth-m1"));
    expect(r.status).toBe(401);
    expect((await json(r)).error.message).toContain("expired");
    await Bun.sleep(20);
    expect((await tokenRow(fx, expired.id)).status).toBe(3);
  });

  test("an exhausted token is 403", async () => {
    await price("auth-m2", 1);
    const { user } = await setup(["auth-m2"]);
    const empty = await fx.token(user.id, { remain_quota: 0 });
    const r = await fx.call("/v1/chat/completions", empty.key, chat("auth-m2"));
    expect(r.status).toBe(403);
    expect((await json(r)).error.message).toContain("quota");
  });

  test("model limits restrict which models a token may call and list", async () => {
    await price("auth-m3", 1);
    await price("auth-m4", 1);
    const { token } = await setup(["auth-m3", "auth-m4"], { token: { model_limits: ["auth-m3"] } });
    expect((await fx.call("/v1/chat/completions", token.key, chat("auth-m3"))).status).toBe(200);
    const r = await fx.call("/v1/chat/completions", token.key, chat("auth-m4"));
    expect(r.status).toBe(403);
    expect((await json(r)).error.message).toContain("auth-m4");
    const list = await json(
      await fx.ctx.app.handle(
        new Request("http://localhost/v1/models", { headers: { authorization: `Bearer ${token.key}` } }),
      ),
    );
    expect(list.data.map((m: any) => m.id)).toEqual(["auth-m3"]);
  });

  test("the IP allow list accepts single addresses and CIDR ranges", async () => {
    await price("auth-m5", 1);
    const { token } = await setup(["auth-m5"], { token: { allow_ips: "10.1.2.3\n192.168.0.0/16" } });
    const from = (ip: string) => fx.call("/v1/chat/completions", token.key, chat("auth-m5"), { "x-forwarded-for": ip });
    expect((await from("10.1.2.3")).status).toBe(200);
    expect((await from("192.168.44.5")).status).toBe(200);
    const denied = await from("10.1.2.4");
    expect(denied.status).toBe(403);
    expect((await json(denied)).error.message).toContain("10.1.2.4");
  });

  test("a banned user's tokens stop working", async () => {
    await price("auth-m6", 1);
    const { token } = await setup(["auth-m6"], { quota: 1000 });
    const owner = (
      await fx.ctx.deps.db
        .selectFrom("tokens")
        .select("user_id")
        .where("key", "=", token.key.slice(3))
        .executeTakeFirstOrThrow()
    ).user_id;
    await fx.ctx.deps.db.updateTable("users").set({ status: 2 }).where("id", "=", owner).execute();
    const r = await fx.call("/v1/chat/completions", token.key, chat("auth-m6"));
    expect(r.status).toBe(403);
    expect((await json(r)).error.message).toContain("banned");
  });

  test("only admins may pin a channel with sk-KEY-CHANNELID", async () => {
    await price("pin-m", 1);
    const low = mock();
    const high = mock();
    const lowId = await fx.channel({ base_url: low.url, models: ["pin-m"], priority: 0 });
    await fx.channel({ base_url: high.url, models: ["pin-m"], priority: 10 });
    const common = await fx.user(1_000_000);
    const ct = await fx.token(common.id);
    const r = await fx.call("/v1/chat/completions", `${ct.key}-${lowId}`, chat("pin-m"));
    expect(r.status).toBe(403);
    expect((await json(r)).error.message).toBe("ordinary users cannot specify a channel");
    const admin = await fx.user(1_000_000, { role: ROLE.admin });
    const at = await fx.token(admin.id);
    expect((await fx.call("/v1/chat/completions", `${at.key}-${lowId}`, chat("pin-m"))).status).toBe(200);
    expect(low.seen.length).toBe(1);
    expect(high.seen.length).toBe(0);
    expect((await fx.call("/v1/chat/completions", at.key, chat("pin-m"))).status).toBe(200);
    expect(high.seen.length).toBe(1);
  });
});

describe("routing", () => {
  test("no channel for the model in the group is 404 model_not_found naming both", async () => {
    await price("route-none", 1);
    const { token } = await setup([]);
    const r = await fx.call("/v1/chat/completions", token.key, chat("route-none"));
    expect(r.status).toBe(404);
    const body = await json(r);
    expect(body.error.code).toBe("model_not_found");
    expect(body.error.message).toBe(
      "the model 'route-none' does not exist or you do not have access to it (no channel serves it in group default)",
    );
  });

  test("a model whose channels are all disabled is 503 (down), not 404", async () => {
    await price("route-down", 1);
    const { token } = await setup([]);
    await fx.channel({ base_url: "http://127.0.0.1:9", models: ["route-down"], status: 2 });
    const r = await fx.call("/v1/chat/completions", token.key, chat("route-down"));
    expect(r.status).toBe(503);
    expect((await json(r)).error.message).toBe(
      "no available channel for model route-down in group default: its channels are disabled",
    );
  });

  test("the highest priority tier takes all traffic while it works", async () => {
    await price("route-tier", 1);
    const a = mock();
    const b = mock();
    await fx.channel({ base_url: a.url, models: ["route-tier"], priority: 5, weight: 1 });
    await fx.channel({ base_url: b.url, models: ["route-tier"], priority: 1, weight: 100 });
    const { token } = await setup([]);
    for (let i = 0; i < 10; i++)
      expect((await fx.call("/v1/chat/completions", token.key, chat("route-tier"))).status).toBe(200);
    expect(a.seen.length).toBe(10);
    expect(b.seen.length).toBe(0);
  });

  test("a failing channel is retried on another one and never picked twice", async () => {
    await price("route-retry", 1);
    await fx.option("RetryTimes", "3");
    const bad = mock({ failStatus: 500 });
    const good = mock();
    const badId = await fx.channel({ base_url: bad.url, models: ["route-retry"], priority: 10 });
    const goodId = await fx.channel({ base_url: good.url, models: ["route-retry"], priority: 0 });
    const { user, token } = await setup([]);
    const r = await fx.call("/v1/chat/completions", token.key, chat("route-retry"));
    expect(r.status).toBe(200);
    expect(bad.seen.length).toBe(1);
    expect(good.seen.length).toBe(1);
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(log.channel_id).toBe(goodId);
    expect(JSON.parse(log.other).admin_info.use_channel).toEqual([String(badId), String(goodId)]);
    await fx.option("RetryTimes", "0");
  });

  test("when every channel fails each is tried once, the client gets the upstream status, and nothing is charged", async () => {
    await price("route-allfail", 1);
    await fx.option("RetryTimes", "5");
    const b1 = mock({ failStatus: 502 });
    const b2 = mock({ failStatus: 502 });
    await fx.channel({ base_url: b1.url, models: ["route-allfail"] });
    await fx.channel({ base_url: b2.url, models: ["route-allfail"] });
    const { user, token } = await setup([]);
    const before = await userRow(fx, user.id);
    const r = await fx.call("/v1/chat/completions", token.key, chat("route-allfail"));
    expect(r.status).toBe(502);
    const body = await json(r);
    expect(body.error.message).toContain("upstream failure 502");
    expect(JSON.stringify(body)).not.toContain(SECRET_IN_ERRORS);
    expect(JSON.stringify(body)).not.toContain("10.0.0.9");
    expect(JSON.stringify(body)).not.toContain("127.0.0.1");
    expect(b1.seen.length + b2.seen.length).toBe(2);
    await fx.flush();
    expect((await userRow(fx, user.id)).quota).toBe(before.quota);
    expect(
      (
        await tokenRow(
          fx,
          (
            await fx.ctx.deps.db
              .selectFrom("tokens")
              .select("id")
              .where("key", "=", token.key.slice(3))
              .executeTakeFirstOrThrow()
          ).id,
        )
      ).remain_quota,
    ).toBe(1_000_000);
    await fx.option("RetryTimes", "0");
  });

  test("a channel that cannot be reached is skipped for the next one", async () => {
    await price("route-down", 1);
    await fx.option("RetryTimes", "1");
    const closed = mock();
    const deadUrl = closed.url;
    await closed.stop();
    await fx.channel({ base_url: deadUrl, models: ["route-down"], priority: 5 });
    const good = mock();
    await fx.channel({ base_url: good.url, models: ["route-down"], priority: 0 });
    const { token } = await setup([]);
    expect((await fx.call("/v1/chat/completions", token.key, chat("route-down"))).status).toBe(200);
    expect(good.seen.length).toBe(1);
    await fx.option("RetryTimes", "0");
    const r = await fx.call("/v1/chat/completions", token.key, chat("route-down"));
    // With no retries left the dead channel's 502 reaches the client whenever it is picked first (it is the top tier).
    expect(r.status).toBe(502);
    expect((await json(r)).error.message).toBe("could not connect to the upstream channel");
  });

  test("an upstream slower than RELAY_TIMEOUT answers 504", async () => {
    const own = await relayFixture("sqlite", { slowMs: 400 }, { relayTimeoutMs: 100 });
    try {
      await own.option("ModelRatio", JSON.stringify({ "t-slow": 1 }));
      await own.channel({ base_url: own.mock.url, models: ["t-slow"] });
      const user = await own.user(1_000_000);
      const token = await own.token(user.id);
      const r = await own.call("/v1/chat/completions", token.key, chat("t-slow"));
      expect(r.status).toBe(504);
      expect((await json(r)).error.message).toBe("the upstream channel did not answer in time");
      expect((await userRow(own, user.id)).quota).toBe(1_000_000);
    } finally {
      await own.close();
    }
  });

  test("a 400 from upstream is not retried", async () => {
    await price("route-400-fail-400", 1);
    await fx.option("RetryTimes", "3");
    const a = mock();
    const b = mock();
    await fx.channel({ base_url: a.url, models: ["route-400-fail-400"] });
    await fx.channel({ base_url: b.url, models: ["route-400-fail-400"] });
    const { token } = await setup([]);
    expect((await fx.call("/v1/chat/completions", token.key, chat("route-400-fail-400"))).status).toBe(400);
    expect(a.seen.length + b.seen.length).toBe(1);
    await fx.option("RetryTimes", "0");
  });

  test("model mapping, param override and status-code mapping apply per channel", async () => {
    await price("route-map", 1);
    const m = mock();
    await fx.channel({
      base_url: m.url,
      models: ["route-map"],
      model_mapping: { "route-map": "upstream-real" },
      param_override: { temperature: 0.1, seed: 7 },
    });
    const { user, token } = await setup([]);
    expect((await fx.call("/v1/chat/completions", token.key, chat("route-map", { temperature: 1 }))).status).toBe(200);
    expect(m.seen[0].body).toMatchObject({ model: "upstream-real", temperature: 0.1, seed: 7 });
    expect(m.seen[0].authorization).toBe("Bearer sk-channel-key");
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(log.model_name).toBe("route-map");
    expect(JSON.parse(log.other)).toMatchObject({ is_model_mapped: true, upstream_model_name: "upstream-real" });

    await price("route-code", 1);
    const f = mock({ failStatus: 500 });
    await fx.channel({ base_url: f.url, models: ["route-code"], status_code_mapping: { "500": "503" } });
    expect((await fx.call("/v1/chat/completions", token.key, chat("route-code"))).status).toBe(503);
  });
});

describe("billing", () => {
  test("a call costs group × model ratio × (prompt + completion × completion ratio), debited from token and user, logged", async () => {
    await price("bill-a", 2, 3);
    await fx.option("GroupRatio", JSON.stringify({ default: 1, vip: 0.5 }));
    const { user, token } = await setup(["bill-a"], { quota: 100_000 });
    const r = await fx.call("/v1/chat/completions", token.key, chat("bill-a", { max_tokens: 50 }));
    expect(r.status).toBe(200);
    await fx.flush();
    const cost = 2 * (10 + 20 * 3);
    const u = await userRow(fx, user.id);
    expect(u.quota).toBe(100_000 - cost);
    expect(u.used_quota).toBe(cost);
    expect(u.request_count).toBe(1);
    const tid = (
      await fx.ctx.deps.db
        .selectFrom("tokens")
        .select("id")
        .where("key", "=", token.key.slice(3))
        .executeTakeFirstOrThrow()
    ).id;
    const t = await tokenRow(fx, tid);
    expect(t.remain_quota).toBe(1_000_000 - cost);
    expect(t.used_quota).toBe(cost);
    const [log] = await logsOf(fx, user.id);
    expect(log).toMatchObject({
      type: 2,
      quota: cost,
      prompt_tokens: 10,
      completion_tokens: 20,
      model_name: "bill-a",
      token_name: "test-token",
      group: "default",
      token_id: tid,
    });
    expect(JSON.parse(log.other)).toMatchObject({
      model_ratio: 2,
      completion_ratio: 3,
      group_ratio: 1,
      model_price: -1,
    });
    const hour = await fx.ctx.deps.db.selectFrom("quota_data").selectAll().where("user_id", "=", user.id).execute();
    expect(hour).toHaveLength(1);
    expect(hour[0]).toMatchObject({ model_name: "bill-a", count: 1, quota: cost, token_used: 30 });
    expect(hour[0].created_at % 3600).toBe(0);
  });

  test("the token's group ratio applies", async () => {
    await price("bill-g", 1);
    await fx.option("GroupRatio", JSON.stringify({ default: 1, vip: 0.5 }));
    await fx.channel({ base_url: fx.mock.url, models: ["bill-g"], groups: ["vip"] });
    const user = await fx.user(100_000);
    const token = await fx.token(user.id, { group: "vip" });
    expect((await fx.call("/v1/chat/completions", token.key, chat("bill-g"))).status).toBe(200);
    await fx.flush();
    expect((await userRow(fx, user.id)).quota).toBe(100_000 - 15);
  });

  test("cached prompt tokens are billed at the cache ratio", async () => {
    const cm = mock({ usage: { prompt_tokens: 100, completion_tokens: 0, cached_tokens: 60 } });
    await price("bill-cache", 1, 1, 0.5);
    await fx.channel({ base_url: cm.url, models: ["bill-cache"] });
    const { user, token } = await setup([], { quota: 100_000 });
    await fx.call("/v1/chat/completions", token.key, chat("bill-cache"));
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(log.quota).toBe(40 + 30);
    expect(JSON.parse(log.other)).toMatchObject({ cache_tokens: 60, cache_ratio: 0.5 });
  });

  test("fixed-price models cost price × 500000 per image", async () => {
    await fixedPrice("bill-img", 0.02);
    const { user, token } = await setup(["bill-img"], { quota: 100_000 });
    const r = await fx.call("/v1/images/generations", token.key, { model: "bill-img", prompt: "a cat", n: 2 });
    expect(r.status).toBe(200);
    expect((await json(r)).data).toHaveLength(2);
    await fx.flush();
    expect((await userRow(fx, user.id)).quota).toBe(100_000 - 20_000);
    expect(JSON.parse((await logsOf(fx, user.id))[0].other).model_price).toBe(0.02);
  });

  test("a model with neither ratio nor price is refused, naming the model and the setting", async () => {
    const { user, token } = await setup(["bill-unset"], { quota: 100_000 });
    const r = await fx.call("/v1/chat/completions", token.key, chat("bill-unset"));
    expect(r.status).toBe(400);
    const msg = (await json(r)).error.message;
    expect(msg).toContain("bill-unset");
    expect(msg).toContain("accept_unset_model_ratio_model");
    expect((await userRow(fx, user.id)).quota).toBe(100_000);
  });

  test("unset models are accepted with the user's accept_unset_model_ratio_model setting or in self-use mode", async () => {
    await fx.channel({ base_url: fx.mock.url, models: ["bill-unset2"] });
    const user = await fx.user(10_000_000, { setting: JSON.stringify({ accept_unset_model_ratio_model: true }) });
    const token = await fx.token(user.id);
    expect((await fx.call("/v1/chat/completions", token.key, chat("bill-unset2"))).status).toBe(200);
    const other = await fx.user(10_000_000);
    const ot = await fx.token(other.id);
    expect((await fx.call("/v1/chat/completions", ot.key, chat("bill-unset2"))).status).toBe(400);
    await fx.option("SelfUseModeEnabled", "true");
    expect((await fx.call("/v1/chat/completions", ot.key, chat("bill-unset2"))).status).toBe(200);
    await fx.option("SelfUseModeEnabled", "false");
  });

  test("a user whose quota cannot pay the prompt and one output token is refused before any upstream call, and nothing moves", async () => {
    await price("bill-poor", 1);
    const m = mock();
    await fx.channel({ base_url: m.url, models: ["bill-poor"] });
    const user = await fx.user(1);
    const token = await fx.token(user.id);
    const r = await fx.call("/v1/chat/completions", token.key, chat("bill-poor", { max_tokens: 1000 }));
    expect(r.status).toBe(403);
    expect((await json(r)).error.message).toContain("user quota");
    expect(m.seen.length).toBe(0);
    expect((await userRow(fx, user.id)).quota).toBe(1);
  });

  test("unlimited tokens leave remain_quota alone but still charge the user", async () => {
    await price("bill-unl", 1);
    const { user, token } = await setup(["bill-unl"], {
      quota: 100_000,
      token: { unlimited_quota: true, remain_quota: 0 },
    });
    expect((await fx.call("/v1/chat/completions", token.key, chat("bill-unl"))).status).toBe(200);
    await fx.flush();
    expect((await userRow(fx, user.id)).quota).toBe(100_000 - 30);
    const t = await fx.ctx.deps.db
      .selectFrom("tokens")
      .selectAll()
      .where("user_id", "=", user.id)
      .executeTakeFirstOrThrow();
    expect(t.remain_quota).toBe(0);
    expect(t.used_quota).toBe(30);
  });
});

describe("holds on SQLite", () => {
  // PostgreSQL and MySQL hold in a quota_holds row (tests/relay/ledger.test.ts).
  test("sqlite: small and large balances alike are reserved in memory and debited with the log on the next flush", async () => {
    const own = await relayFixture("sqlite", {}, { batchUpdateIntervalMs: 0 });
    try {
      await own.option("ModelRatio", JSON.stringify({ "trust-m": 1 }));
      await own.option("CompletionRatio", JSON.stringify({ "trust-m": 1 }));
      await own.channel({ base_url: own.mock.url, models: ["trust-m"] });
      const small = await own.user(600);
      const st = await own.token(small.id, { unlimited_quota: true });
      const big = await own.user(50_000_000);
      const bt = await own.token(big.id, { unlimited_quota: true });
      const body = chat("trust-m", { max_tokens: 10 });
      expect((await own.call("/v1/chat/completions", st.key, body)).status).toBe(200);
      expect((await own.call("/v1/chat/completions", bt.key, body)).status).toBe(200);
      await Bun.sleep(30);
      expect((await userRow(own, small.id)).quota).toBe(600);
      expect((await userRow(own, big.id)).quota).toBe(50_000_000);
      await own.flush();
      for (const [u, start] of [
        [small, 600],
        [big, 50_000_000],
      ] as const) {
        expect((await userRow(own, u.id)).quota).toBe(start - 30);
        expect((await userRow(own, u.id)).used_quota).toBe(30);
        expect((await logsOf(own, u.id))[0].quota).toBe(30);
      }
    } finally {
      await own.close();
    }
  });
});

describe("streams", () => {
  async function sse(res: Response) {
    const text = await res.text();
    return text
      .split("\n\n")
      .filter((b) => b.startsWith("data: "))
      .map((b) => b.slice(6));
  }

  test("usage is forwarded only to clients that asked for it", async () => {
    await price("st-a", 1);
    const { token } = await setup(["st-a"]);
    const asked = await sse(
      await fx.call(
        "/v1/chat/completions",
        token.key,
        chat("st-a", { stream: true, stream_options: { include_usage: true } }),
      ),
    );
    expect(asked.at(-1)).toBe("[DONE]");
    expect(JSON.parse(asked.at(-2)!).usage.total_tokens).toBe(30);
    const plain = await sse(await fx.call("/v1/chat/completions", token.key, chat("st-a", { stream: true })));
    expect(plain.at(-1)).toBe("[DONE]");
    expect(plain.some((d) => d !== "[DONE]" && JSON.parse(d).usage)).toBe(false);
    expect(fx.mock.seen.at(-1)!.body.stream_options).toEqual({ include_usage: true });
  });

  test("without upstream usage the answer is counted with the tokenizer", async () => {
    await price("st-nousage", 1);
    const { user, token } = await setup(["st-nousage"]);
    const events = await sse(await fx.call("/v1/chat/completions", token.key, chat("st-nousage", { stream: true })));
    expect(events.at(-1)).toBe("[DONE]");
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(log.completion_tokens).toBe(await countTokens("Hello world!"));
    expect(log.prompt_tokens).toBeGreaterThan(0);
    expect(log.quota).toBe(log.prompt_tokens + log.completion_tokens);
    expect(Boolean(log.is_stream)).toBe(true);
  });

  test("a stream cut off mid-way gives the client what came and bills what was generated", async () => {
    await price("st-nousage-cut", 1);
    const { user, token } = await setup(["st-nousage-cut"]);
    const res = await fx.call("/v1/chat/completions", token.key, chat("st-nousage-cut", { stream: true }));
    expect(res.status).toBe(200);
    const events = (await sse(res)).map((d) => JSON.parse(d));
    // What came, then an error event saying the answer is incomplete (tests/relay/cut-stream.test.ts).
    expect(
      events
        .slice(0, -1)
        .map((e) => e.choices[0].delta.content)
        .join(""),
    ).toBe("Hello world");
    expect(events.at(-1).error.code).toBe("stream_interrupted");
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect(log.completion_tokens).toBe(await countTokens("Hello world"));
  });
});

describe("limits and filters", () => {
  test("the per-user request limit answers 429 in OpenAI format", async () => {
    await price("lim-a", 1);
    const { token } = await setup(["lim-a"]);
    await fx.option("ModelRequestRateLimitCount", "2");
    await fx.option("ModelRequestRateLimitEnabled", "true");
    try {
      expect((await fx.call("/v1/chat/completions", token.key, chat("lim-a"))).status).toBe(200);
      expect((await fx.call("/v1/chat/completions", token.key, chat("lim-a"))).status).toBe(200);
      const r = await fx.call("/v1/chat/completions", token.key, chat("lim-a"));
      expect(r.status).toBe(429);
      expect((await json(r)).error.message).toContain("rate limit");
    } finally {
      await fx.option("ModelRequestRateLimitEnabled", "false");
      await fx.option("ModelRequestRateLimitCount", "0");
    }
  });

  // Like the PostgreSQL and MySQL runs, this one exists when the environment names a server (REDIS_CONN_STRING).
  if (process.env.REDIS_CONN_STRING)
    test("with Redis as the cache the limit counters live in Redis", async () => {
      const own = await relayFixture("sqlite", {}, {}, true);
      try {
        expect(own.ctx.deps.cache.kind).toBe("redis");
        await own.option("ModelRatio", JSON.stringify({ "lim-r": 1 }));
        await own.channel({ base_url: own.mock.url, models: ["lim-r"] });
        const user = await own.user(1_000_000);
        const token = await own.token(user.id);
        await own.option("ModelRequestRateLimitCount", "1");
        await own.option("ModelRequestRateLimitEnabled", "true");
        expect((await own.call("/v1/chat/completions", token.key, chat("lim-r"))).status).toBe(200);
        expect((await own.call("/v1/chat/completions", token.key, chat("lim-r"))).status).toBe(429);
      } finally {
        await own.close();
      }
    });

  test("a group's [total, successful] limits override the defaults", async () => {
    await price("lim-g", 1);
    await fx.channel({ base_url: fx.mock.url, models: ["lim-g"], groups: ["svip"] });
    const user = await fx.user(1_000_000, { group: "svip" });
    const token = await fx.token(user.id);
    await fx.option("ModelRequestRateLimitGroup", JSON.stringify({ svip: [0, 1] }));
    await fx.option("ModelRequestRateLimitEnabled", "true");
    try {
      expect((await fx.call("/v1/chat/completions", token.key, chat("lim-g"))).status).toBe(200);
      await Bun.sleep(5);
      expect((await fx.call("/v1/chat/completions", token.key, chat("lim-g"))).status).toBe(429);
    } finally {
      await fx.option("ModelRequestRateLimitEnabled", "false");
      await fx.option("ModelRequestRateLimitGroup", "{}");
    }
  });

  test("prompts with sensitive words are refused when the check is on", async () => {
    await price("sens-a", 1);
    const { token } = await setup(["sens-a"]);
    await fx.option("SensitiveWords", "forbidden thing\nbadword");
    await fx.option("CheckSensitiveEnabled", "true");
    await fx.option("CheckSensitiveOnPromptEnabled", "true");
    try {
      const r = await fx.call("/v1/chat/completions", token.key, {
        model: "sens-a",
        messages: [{ role: "user", content: "say BADWORD now" }],
      });
      expect(r.status).toBe(400);
      expect((await fx.call("/v1/chat/completions", token.key, chat("sens-a"))).status).toBe(200);
    } finally {
      await fx.option("CheckSensitiveEnabled", "false");
    }
  });
});

describe("logs and write-behind", () => {
  test("error logs are written when LogErrorEnabled is on", async () => {
    await price("log-fail-500", 1);
    const { user, token } = await setup(["log-fail-500"]);
    await fx.option("LogErrorEnabled", "true");
    await fx.call("/v1/chat/completions", token.key, chat("log-fail-500"));
    await fx.option("LogErrorEnabled", "false");
    await fx.call("/v1/chat/completions", token.key, chat("log-fail-500"));
    await fx.flush();
    const logs = await logsOf(fx, user.id);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ type: 5, quota: 0, model_name: "log-fail-500" });
    expect(logs[0].content).not.toContain(SECRET_IN_ERRORS);
  });

  test("channel used_quota is accumulated and pending writes land on shutdown", async () => {
    const own = await relayFixture("sqlite", {}, { batchUpdateIntervalMs: 0 });
    try {
      await own.option("ModelRatio", JSON.stringify({ "wb-m": 1 }));
      const ch = await own.channel({ base_url: own.mock.url, models: ["wb-m"] });
      const user = await own.user(1_000_000);
      const token = await own.token(user.id);
      for (let i = 0; i < 3; i++)
        expect((await own.call("/v1/chat/completions", token.key, chat("wb-m"))).status).toBe(200);
      await Bun.sleep(20);
      const db = own.ctx.deps.db;
      expect(await db.selectFrom("logs").selectAll().where("user_id", "=", user.id).execute()).toHaveLength(0);
      for (const hook of own.ctx.deps.shutdownHooks) await hook();
      expect(await db.selectFrom("logs").selectAll().where("user_id", "=", user.id).execute()).toHaveLength(3);
      expect(
        (await db.selectFrom("channels").select("used_quota").where("id", "=", ch).executeTakeFirstOrThrow())
          .used_quota,
      ).toBe(90);
      expect((await userRow(own, user.id)).request_count).toBe(3);
    } finally {
      await own.close();
    }
  });
});

describe("other endpoints", () => {
  test("completions, embeddings, moderations, rerank and responses relay and bill", async () => {
    for (const m of ["ep-cmp", "ep-emb", "ep-mod", "ep-rr", "ep-resp"]) await price(m, 1);
    const { user, token } = await setup(["ep-cmp", "ep-emb", "ep-mod", "ep-rr", "ep-resp"]);
    const cmp = await json(await fx.call("/v1/completions", token.key, { model: "ep-cmp", prompt: "once upon" }));
    expect(cmp.choices[0].text).toBe("Hello world!");
    const emb = await json(await fx.call("/v1/embeddings", token.key, { model: "ep-emb", input: ["a", "b"] }));
    expect(emb.data).toHaveLength(2);
    expect((await fx.call("/v1/moderations", token.key, { model: "ep-mod", input: "text" })).status).toBe(200);
    expect((await fx.call("/v1/rerank", token.key, { model: "ep-rr", query: "q", documents: ["a"] })).status).toBe(200);
    expect(
      (await json(await fx.call("/v1/responses", token.key, { model: "ep-resp", input: "hi" }))).usage.output_tokens,
    ).toBe(20);
    await fx.flush();
    const logs = await logsOf(fx, user.id);
    // Settled in the order their usage is known: the moderation's is counted in the tokenizer's worker, so its
    // log may come last.
    const byModel = logs.map((l) => [l.model_name, l.quota]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(byModel).toEqual([
      ["ep-cmp", 30],
      ["ep-emb", 8],
      ["ep-mod", expect.any(Number)],
      ["ep-resp", 30],
      ["ep-rr", 12],
    ]);
  });

  test("audio: speech passes bytes through; transcription passes multipart through", async () => {
    await price("ep-tts", 1);
    await price("ep-stt", 1);
    const { user, token } = await setup(["ep-tts", "ep-stt"]);
    const speech = await fx.call("/v1/audio/speech", token.key, {
      model: "ep-tts",
      input: "Hello world",
      voice: "alloy",
    });
    expect(speech.headers.get("content-type")).toBe("audio/mpeg");
    expect(new Uint8Array(await speech.arrayBuffer())).toEqual(new Uint8Array([73, 68, 51, 4, 0, 0]));
    const form = new FormData();
    form.append("model", "ep-stt");
    form.append("file", new Blob([new Uint8Array(123)], { type: "audio/mpeg" }), "a.mp3");
    const stt = await fx.ctx.app.handle(
      new Request("http://localhost/v1/audio/transcriptions", {
        method: "POST",
        headers: { authorization: `Bearer ${token.key}` },
        body: form,
      }),
    );
    expect(await json(stt)).toEqual({ text: "transcribed 123 bytes" });
    await fx.flush();
    expect((await logsOf(fx, user.id)).map((l) => l.model_name)).toEqual(["ep-tts", "ep-stt"]);
  });

  test("unsupported routes answer 501; /v1/models/{model} answers one model or 404", async () => {
    await price("ep-one", 1);
    const { token } = await setup(["ep-one"]);
    const h = { authorization: `Bearer ${token.key}` };
    const r = await fx.ctx.app.handle(new Request("http://localhost/v1/files", { headers: h }));
    expect(r.status).toBe(501);
    expect((await json(r)).error.message).toContain("not implemented");
    expect(
      await json(await fx.ctx.app.handle(new Request("http://localhost/v1/models/ep-one", { headers: h }))),
    ).toMatchObject({ id: "ep-one", object: "model" });
    expect((await fx.ctx.app.handle(new Request("http://localhost/v1/models/nope", { headers: h }))).status).toBe(404);
  });

  test("bad bodies are 400 in OpenAI format and change nothing", async () => {
    const { user, token } = await setup([]);
    const raw = await fx.ctx.app.handle(
      new Request("http://localhost/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${token.key}`, "content-type": "application/json" },
        body: "{nope",
      }),
    );
    expect(raw.status).toBe(400);
    expect((await json(raw)).error.message).toContain("JSON");
    const nomodel = await fx.call("/v1/chat/completions", token.key, { messages: [] });
    expect(nomodel.status).toBe(400);
    expect((await json(nomodel)).error.message).toBe("model is required");
    expect((await userRow(fx, user.id)).quota).toBe(10_000_000);
  });
});

describe("playground", () => {
  test("the console session pays directly, in a group the user may use", async () => {
    await price("pg-m", 1);
    await fx.channel({ base_url: fx.mock.url, models: ["pg-m"] });
    const user = await fx.user(100_000);
    const r = await fx.ctx.request("POST", "/pg/chat/completions", {
      as: user,
      body: { ...chat("pg-m"), group: "default" },
    });
    expect(r.status).toBe(200);
    expect(r.body.choices[0].message.content).toBe("Hello world!");
    expect(fx.mock.seen.at(-1)!.body.group).toBeUndefined();
    await fx.flush();
    expect((await userRow(fx, user.id)).quota).toBe(100_000 - 30);
    const [log] = await logsOf(fx, user.id);
    expect(log).toMatchObject({ token_id: 0, token_name: "playground" });
    const denied = await fx.ctx.request("POST", "/pg/chat/completions", {
      as: user,
      body: { ...chat("pg-m"), group: "secret" },
    });
    expect(denied.status).toBe(403);
    const anon = await fx.ctx.request("POST", "/pg/chat/completions", { body: chat("pg-m") });
    expect(anon.status).toBe(401);
    expect(anon.body.error.message).toBeString();
  });
});

describe("form lists", () => {
  test("model and group lists for the console", async () => {
    await price("list-m", 1);
    await fx.channel({ base_url: fx.mock.url, models: ["list-m"] });
    const admin = await fx.user(0, { role: ROLE.admin });
    const common = await fx.user(0);
    const models = await fx.ctx.request("GET", "/api/models", { as: admin });
    expect(models.body.data["1"]).toContain("gpt-4o-mini");
    expect((await fx.ctx.request("GET", "/api/models", { as: common })).status).toBe(403);
    expect((await fx.ctx.request("GET", "/api/user/models", { as: common })).body.data).toContain("list-m");
    const groups = (await fx.ctx.request("GET", "/api/user/self/groups", { as: common })).body.data;
    expect(groups.default).toMatchObject({ ratio: 1 });
    expect(groups.vip.desc).toBeString();
    const enabled = (await fx.ctx.request("GET", "/api/channel/models_enabled", { as: admin })).body.data;
    expect(enabled).toContain("list-m");
    const all = (await fx.ctx.request("GET", "/api/channel/models", { as: admin })).body.data;
    expect(all.find((m: any) => m.id === "list-m")).toMatchObject({ object: "model" });
    expect((await fx.ctx.request("GET", "/api/channel/models_enabled", { as: common })).status).toBe(403);
  });
});
