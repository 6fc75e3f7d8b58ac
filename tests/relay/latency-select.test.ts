// ChannelSelectionStrategy "latency": inside the highest priority tier the fastest healthy channel (recent p50
// over 1 − error rate) is picked, a channel never measured is tried first, a channel that failed cools down
// (tried only when nothing else is left), and a share of picks explores so a recovered channel is measured
// again. "weighted" (the default) keeps one-api's weighted random pick and measures nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ChannelStats, WINDOW, channelStatsOf } from "../../server/relay/channel-stats.ts";
import { EXPLORE_SHARE, pickFastest, type Candidate } from "../../server/relay/select.ts";
import { logsOf, relayFixture, type RelayFixture } from "./fixtures.ts";
import { startMockUpstream, type MockUpstream } from "../mocks/openai-upstream.ts";

const c = (channelId: number, priority = 0, weight = 1): Candidate => ({ channelId, priority, weight });
const none = new Set<number>();
/** A random source that never explores (above EXPLORE_SHARE). */
const steady = () => 0.99;
const NOW = 1_000_000;
const M = "m";

function measured(entries: Record<number, number[]>): ChannelStats {
  const s = new ChannelStats();
  for (const [id, lat] of Object.entries(entries)) for (const ms of lat) s.succeeded(Number(id), M, ms);
  return s;
}

describe("ChannelStats", () => {
  test("the median and the error rate are over the last WINDOW attempts, per channel and model", () => {
    const s = new ChannelStats();
    for (const ms of [50, 10, 30]) s.succeeded(1, M, ms);
    expect(s.get(1, M)!.p50).toBe(30);
    s.succeeded(1, M, 20);
    expect(s.get(1, M)!.p50).toBe(25);
    for (let i = 0; i < WINDOW; i++) s.succeeded(1, M, 500);
    expect(s.get(1, M)!.p50).toBe(500);
    s.failed(1, M, 30_000, NOW);
    expect(s.get(1, M)!.errorRate).toBeCloseTo(1 / WINDOW);
    // Another model of the same channel has figures of its own; the cooldown is the channel's.
    s.succeeded(1, "big", 4000);
    expect(s.get(1, "big")!.p50).toBe(4000);
    expect(s.get(1, M)!.p50).toBe(500);
    expect(s.coolUntil(1)).toBe(0);
    s.failed(1, M, 30_000, NOW);
    expect(s.coolUntil(1)).toBe(NOW + 30_000);
    s.succeeded(1, M, 500);
    expect(s.coolUntil(1)).toBe(0);
  });

  test("stats are per app (channel ids are per database)", () => {
    const a = {};
    const b = {};
    channelStatsOf(a).succeeded(1, M, 5);
    expect(channelStatsOf(a).get(1, M)!.p50).toBe(5);
    expect(channelStatsOf(b).get(1, M)).toBeUndefined();
  });
});

describe("pickFastest", () => {
  test("the fastest channel of the tier", () => {
    const s = measured({ 1: [300, 310], 2: [90, 100], 3: [200] });
    expect(pickFastest([c(1), c(2), c(3)], none, s, M, NOW, steady)).toBe(2);
    // Not tried twice in one call: the next fastest.
    expect(pickFastest([c(1), c(2), c(3)], new Set([2]), s, M, NOW, steady)).toBe(3);
    expect(pickFastest([c(1), c(2), c(3)], new Set([1, 2, 3]), s, M, NOW, steady)).toBeNull();
  });

  test("speeds are per model: the fastest channel for one model need not be the fastest for another", () => {
    const s = new ChannelStats();
    s.succeeded(1, "small", 50);
    s.succeeded(1, "big", 3000);
    s.succeeded(2, "small", 400);
    s.succeeded(2, "big", 900);
    expect(pickFastest([c(1), c(2)], none, s, "small", NOW, steady)).toBe(1);
    expect(pickFastest([c(1), c(2)], none, s, "big", NOW, steady)).toBe(2);
  });

  test("a higher priority tier wins over a faster channel below it", () => {
    const s = measured({ 1: [900], 2: [10] });
    expect(pickFastest([c(1, 10), c(2, 0)], none, s, M, NOW, steady)).toBe(1);
  });

  test("a channel never measured is tried first, by weight", () => {
    const s = measured({ 1: [10] });
    expect(pickFastest([c(1), c(2, 0, 0), c(3, 0, 5)], none, s, M, NOW, () => 0.5)).toBe(3);
  });

  test("the error rate counts against a fast channel", () => {
    const s = measured({ 1: [100, 100], 2: [150, 150] });
    s.failed(1, M, 0, NOW);
    s.failed(1, M, 0, NOW);
    // Channel 1: p50 100 over (1 − 0.5) = 200 > 150.
    expect(pickFastest([c(1), c(2)], none, s, M, NOW, steady)).toBe(2);
  });

  test("a channel cooling down after a failure is tried only when nothing else is left, even below its tier", () => {
    const s = measured({ 1: [10], 2: [500], 3: [800] });
    s.failed(1, M, 30_000, NOW);
    const all = [c(1, 5), c(2, 5), c(3, 0)];
    expect(pickFastest(all, none, s, M, NOW + 1000, steady)).toBe(2);
    expect(pickFastest(all, new Set([2]), s, M, NOW + 1000, steady)).toBe(3);
    expect(pickFastest(all, new Set([2, 3]), s, M, NOW + 1000, steady)).toBe(1);
    // The cooldown over, it is the fastest again.
    expect(pickFastest(all, none, s, M, NOW + 31_000, steady)).toBe(1);
  });

  test(`exploration: ${EXPLORE_SHARE * 100} % of picks go to a random channel of the tier, so a recovered slow one is measured again`, () => {
    const s = measured({ 1: [20], 2: [2000, 2000, 2000] });
    const cands = [c(1), c(2)];
    // random() below the share explores; the second draw picks the slow channel.
    const draws = [EXPLORE_SHARE / 2, 0.9];
    expect(pickFastest(cands, none, s, M, NOW, () => draws.shift()!)).toBe(2);
    // Measured again, it has recovered: a few fast answers move its median below the other's.
    for (let i = 0; i < 4; i++) s.succeeded(2, M, 5);
    expect(pickFastest(cands, none, s, M, NOW, steady)).toBe(2);
  });
});

describe("over HTTP", () => {
  let fx: RelayFixture;
  let down: MockUpstream;
  let slow: ReturnType<typeof Bun.serve>;
  beforeAll(async () => {
    fx = await relayFixture("sqlite");
    down = startMockUpstream({ failStatus: 503 });
    // Answers like the mock, 150 ms later.
    slow = Bun.serve({
      port: 0,
      fetch: async (req) => (
        await Bun.sleep(150),
        fetch(fx.mock.url + new URL(req.url).pathname, { method: "POST", headers: req.headers, body: await req.text() })
      ),
    });
  });
  afterAll(async () => {
    slow.stop(true);
    await down.stop();
    await fx.close();
  });
  const chat = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 5 });
  async function calls(key: string, model: string, n: number) {
    for (let i = 0; i < n; i++) {
      const r = await fx.call("/v1/chat/completions", key, chat(model));
      expect(r.status).toBe(200);
      await r.text();
    }
  }

  test("weighted (the default) measures nothing", async () => {
    await fx.option("ModelRatio", JSON.stringify({ "w-m": 1, "lat-m": 1, "cool-m": 1 }));
    const id = await fx.channel({ base_url: fx.mock.url, models: ["w-m"] });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id, { remain_quota: 10_000_000 });
    await calls(token.key, "w-m", 3);
    expect(fx.ctx.deps.options.get("ChannelSelectionStrategy")).toBe("weighted");
    expect(channelStatsOf(fx.ctx.deps.options).get(id, "w-m")).toBeUndefined();
  });

  test("latency: the fast channel serves nearly every call", async () => {
    await fx.option("ChannelSelectionStrategy", "latency");
    const slowId = await fx.channel({
      name: "slow",
      base_url: `http://127.0.0.1:${slow.port}`,
      models: ["lat-m"],
      weight: 100,
    });
    const fastId = await fx.channel({ name: "fast", base_url: fx.mock.url, models: ["lat-m"], weight: 1 });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id, { remain_quota: 10_000_000 });
    await calls(token.key, "lat-m", 20);
    await fx.flush();
    const served = (await logsOf(fx, user.id)).filter((l) => l.type === 2).map((l) => l.channel_id);
    expect(served.length).toBe(20);
    // Each is measured once at first; then only exploration (10 % of picks, half of them the slow one) reaches
    // the slow channel: 8 or more of 20 would be a one-in-a-million run.
    expect(served.filter((id) => id === slowId).length).toBeLessThan(8);
    expect(served.filter((id) => id === fastId).length).toBeGreaterThan(12);
    const stats = channelStatsOf(fx.ctx.deps.options);
    expect(stats.get(slowId, "lat-m")!.p50).toBeGreaterThan(stats.get(fastId, "lat-m")!.p50);
  });

  test("latency: a channel that failed cools down and is not tried again while another serves", async () => {
    await fx.option("ChannelSelectionStrategy", "latency");
    const downId = await fx.channel({ name: "down", base_url: down.url, models: ["cool-m"] });
    const upId = await fx.channel({ name: "up", base_url: fx.mock.url, models: ["cool-m"] });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id, { remain_quota: 10_000_000 });
    await calls(token.key, "cool-m", 10);
    await fx.flush();
    const logs = (await logsOf(fx, user.id)).filter((l) => l.type === 2);
    expect(logs.every((l) => l.channel_id === upId)).toBe(true);
    // The down channel was tried at most once (a first pick before it was known), never again while cooling.
    const tries = logs
      .flatMap((l) => JSON.parse(l.other).admin_info.use_channel)
      .filter((id: string) => id === String(downId));
    expect(tries.length).toBeLessThanOrEqual(1);
    expect(channelStatsOf(fx.ctx.deps.options).coolUntil(downId)).toBeGreaterThanOrEqual(tries.length ? Date.now() : 0);
    await fx.option("ChannelSelectionStrategy", "weighted");
  });
});
