// A fresh install retries on another channel: with two channels for a model and one of them down, every
// call succeeds (RetryTimes defaults to 2, not one-api's 0), and each is billed and logged once.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { logsOf, relayFixture, userRow, type RelayFixture } from "./fixtures.ts";
import { startMockUpstream } from "../mocks/openai-upstream.ts";
import { OPTION_DEFAULTS } from "../../server/modules/option/defaults.ts";

const MODEL = "fresh-retry";
let fx: RelayFixture;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
});
afterAll(() => fx.close());

test("RetryTimes is 2 on a fresh install, in the defaults and in GET /api/option/", async () => {
  expect(OPTION_DEFAULTS.RetryTimes).toBe("2");
  expect(
    await fx.ctx.deps.db.selectFrom("options").select("key").where("key", "=", "RetryTimes").executeTakeFirst(),
  ).toBeUndefined();
  const root = await fx.user(0, { role: 100 });
  const r = await fx.ctx.request("GET", "/api/option/", { as: root });
  expect(r.body.data.find((o: { key: string }) => o.key === "RetryTimes").value).toBe("2");
});

test("two channels of one tier, one down: every call succeeds, billed and logged once", async () => {
  await fx.option("ModelRatio", JSON.stringify({ [MODEL]: 1 }));
  const dead = startMockUpstream();
  const deadUrl = dead.url;
  await dead.stop();
  // Same priority and weight: each call picks one of the two at random, so about half start on the dead one.
  const deadId = await fx.channel({ name: "down", base_url: deadUrl, models: [MODEL] });
  const liveId = await fx.channel({ name: "up", base_url: fx.mock.url, models: [MODEL] });
  const user = await fx.user(100_000_000);
  const token = await fx.token(user.id, { remain_quota: 100_000_000 });
  const calls = 24;
  for (let i = 0; i < calls; i++) {
    const res = await fx.call("/v1/chat/completions", token.key, {
      model: MODEL,
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 5,
    });
    expect(res.status).toBe(200);
    await res.text();
  }
  await fx.flush();
  const logs = (await logsOf(fx, user.id)).filter((l) => l.type === 2);
  expect(logs.length).toBe(calls);
  expect(logs.every((l) => l.channel_id === liveId)).toBe(true);
  // Some calls went to the dead channel first and were retried (24 fair coin flips all landing on "up": 6e-8).
  const retried = logs.filter((l) => JSON.parse(l.other).admin_info.use_channel.length === 2);
  expect(retried.length).toBeGreaterThan(0);
  for (const l of retried) expect(JSON.parse(l.other).admin_info.use_channel).toEqual([String(deadId), String(liveId)]);
  const charged = logs.reduce((s, l) => s + l.quota, 0);
  expect((await userRow(fx, user.id)).quota).toBe(100_000_000 - charged);
});

test("AutomaticRetryStatusCodes decides which upstream statuses move a call on to another channel", async () => {
  const model = "retry-401";
  await fx.option("ModelRatio", JSON.stringify({ [model]: 1 }));
  // A channel whose key the upstream refuses (401) in a higher tier, a working one below it.
  const refusing = startMockUpstream({ failStatus: 401 });
  try {
    await fx.channel({ name: "refusing", base_url: refusing.url, models: [model], priority: 10 });
    await fx.channel({ name: "working", base_url: fx.mock.url, models: [model], priority: 0 });
    const user = await fx.user(100_000_000);
    const token = await fx.token(user.id, { remain_quota: 100_000_000 });
    const call = () =>
      fx.call("/v1/chat/completions", token.key, { model, messages: [{ role: "user", content: "hi" }], max_tokens: 5 });
    // Default 408,429,500-599: a 401 is the answer.
    expect((await call()).status).toBe(401);
    await fx.option("AutomaticRetryStatusCodes", "401,408,429,500-599");
    expect((await call()).status).toBe(200);
  } finally {
    await fx.option("AutomaticRetryStatusCodes", "408,429,500-599");
    await refusing.stop();
  }
});
