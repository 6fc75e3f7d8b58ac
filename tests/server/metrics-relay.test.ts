// Relay metrics per model, channel and group: known traffic through mock upstreams (successes in two groups,
// a stream, a 500 and a 429 from upstream, a model nobody serves), then /metrics is scraped and its text
// parsed, and each counter and histogram is checked to the exact value the traffic implies. Quota is
// checked against the consume logs the same calls wrote.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FIRST_TOKEN_BUCKETS, LATENCY_BUCKETS, resetMetrics } from "../../server/http/metrics.ts";
import { logsOf, ratios, relayFixture, type RelayFixture } from "../relay/fixtures.ts";
import { testContext, type TestContext } from "../helpers/app.ts";
import { loadConfig } from "../../server/config.ts";
import { startMockUpstream } from "../mocks/openai-upstream.ts";
import { taskFixture, type TaskFixture } from "../relay/task-fixtures.ts";
import { startSunoMock, type SunoMock } from "../mocks/suno-upstream.ts";
import { SUNO_MODELS } from "../../server/catalogue/tasks.ts";

/** The configuration these variables give (with a session secret, so nothing is written to ./data). */
const config = (env: Record<string, string>) => loadConfig({ SESSION_SECRET: "test-secret", ...env });

/** Prometheus text exposition → samples: name → (sorted label set → value). */
function parse(text: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels = (m[2]?.match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []).sort().join(",");
    if (!out.has(m[1])) out.set(m[1], new Map());
    out.get(m[1])!.set(labels, Number(m[3]));
  }
  return out;
}

const set = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(",");

describe("relay metrics per model, channel and group", () => {
  let fx: RelayFixture;
  let ok: number, failing: number, gatedChannel: number;
  let release: () => void = () => {};
  let gate = Promise.resolve();
  // An upstream whose stream sends one chunk, then waits for the test: the stream is in flight for as long as the test wants.
  const gated = Bun.serve({
    port: 0,
    fetch() {
      const enc = new TextEncoder();
      const frame = (delta: object, finish: string | null) =>
        enc.encode(
          `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-gated", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
        );
      return new Response(
        new ReadableStream({
          async start(c) {
            c.enqueue(frame({ role: "assistant", content: "first" }, null));
            await gate;
            c.enqueue(frame({}, "stop"));
            c.enqueue(
              enc.encode(
                `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-gated", choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })}\n\n`,
              ),
            );
            c.enqueue(enc.encode("data: [DONE]\n\n"));
            c.close();
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  });

  beforeAll(async () => {
    fx = await relayFixture("sqlite", {}, { metricsEnabled: true });
    ok = await fx.channel({ base_url: fx.mock.url, models: ["gpt-4o"], groups: ["default", "vip"] });
    failing = await fx.channel({ base_url: fx.mock.url, models: ["gpt-fail-500", "gpt-fail-429"] });
    gatedChannel = await fx.channel({ base_url: `http://127.0.0.1:${gated.port}`, models: ["gpt-gated"] });
    await ratios(fx, ["gpt-4o", "gpt-fail-500", "gpt-fail-429", "gpt-gated"], 1, 2);
  });
  afterAll(async () => {
    gated.stop(true);
    await fx.close();
  });

  const scrape = async () => {
    const res = await fx.ctx.app.handle(new Request("http://localhost/metrics"));
    expect(res.status).toBe(200);
    return parse(await res.text());
  };

  test("requests, errors, tokens, quota and latency, each under its own model, channel and group", async () => {
    resetMetrics();
    const alice = await fx.user(10_000_000);
    const bob = await fx.user(10_000_000, { group: "vip" });
    const a = await fx.token(alice.id);
    const b = await fx.token(bob.id);
    const chat = (key: string, model: string, stream = false) =>
      fx.call("/v1/chat/completions", key, { model, stream, messages: [{ role: "user", content: "hi" }] });

    for (let i = 0; i < 2; i++) expect((await chat(a.key, "gpt-4o")).status).toBe(200);
    const streamed = await chat(b.key, "gpt-4o", true);
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain("[DONE]");
    expect((await chat(a.key, "gpt-fail-500")).status).toBe(500);
    expect((await chat(a.key, "gpt-fail-429")).status).toBe(429);
    expect((await chat(a.key, "no-such-model")).status).toBe(404);
    expect((await chat(a.key, "another-made-up-name")).status).toBe(404);
    await fx.flush();

    const m = await scrape();
    const requests = m.get("switchyard_relay_requests_total")!;
    const errors = m.get("switchyard_relay_errors_total")!;
    const dflt = { model: "gpt-4o", channel: String(ok), group: "default" };
    const vip = { model: "gpt-4o", channel: String(ok), group: "vip" };
    expect(requests.get(set({ ...dflt, status: "200" }))).toBe(2);
    expect(requests.get(set({ ...vip, status: "200" }))).toBe(1);
    const f500 = { model: "gpt-fail-500", channel: String(failing), group: "default", status: "500" };
    const f429 = { model: "gpt-fail-429", channel: String(failing), group: "default", status: "429" };
    expect(requests.get(set(f500))).toBe(1);
    expect(requests.get(set(f429))).toBe(1);
    expect(errors.get(set(f500))).toBe(1);
    expect(errors.get(set(f429))).toBe(1);
    // Refused before routing: no model or channel label, whatever name the client sent (no series per name).
    const refused = { model: "", channel: "", group: "default", status: "404" };
    expect(requests.get(set(refused))).toBe(2);
    expect(errors.get(set(refused))).toBe(2);
    expect([...requests.keys()].some((k) => k.includes("no-such-model") || k.includes("another-made-up-name"))).toBe(
      false,
    );
    // Upstream attempts: one per call that reached a channel, under the upstream's status.
    const attempts = m.get("switchyard_relay_upstream_attempts_total")!;
    expect(attempts.get(set({ ...dflt, status: "200" }))).toBe(2);
    expect(attempts.get(set({ ...vip, status: "200" }))).toBe(1);
    expect(attempts.get(set(f500))).toBe(1);
    expect(attempts.get(set(f429))).toBe(1);
    expect(attempts.size).toBe(4);
    // Every series is one of the above: successes are not errors.
    expect(requests.size).toBe(5);
    expect(errors.size).toBe(3);

    // The mock reports 10 prompt and 20 completion tokens per call.
    expect(m.get("switchyard_relay_prompt_tokens_total")!.get(set(dflt))).toBe(20);
    expect(m.get("switchyard_relay_completion_tokens_total")!.get(set(dflt))).toBe(40);
    expect(m.get("switchyard_relay_prompt_tokens_total")!.get(set(vip))).toBe(10);
    expect(m.get("switchyard_relay_completion_tokens_total")!.get(set(vip))).toBe(20);
    // Quota: what the consume logs of the same calls say was charged.
    const charged = async (userId: number) =>
      (await logsOf(fx, userId)).filter((l) => l.type === 2).reduce((sum, l) => sum + l.quota, 0);
    const aliceQuota = await charged(alice.id);
    expect(aliceQuota).toBeGreaterThan(0);
    expect(m.get("switchyard_relay_quota_total")!.get(set(dflt))).toBe(aliceQuota);
    expect(m.get("switchyard_relay_quota_total")!.get(set(vip))).toBe(await charged(bob.id));

    // Latency: one observation per served call, cumulative buckets ending in +Inf = count.
    const dur = m.get("switchyard_relay_request_duration_seconds_bucket")!;
    const buckets = LATENCY_BUCKETS.map((le) => dur.get(set({ ...dflt, le: String(le) }))!);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]).toBeGreaterThanOrEqual(buckets[i - 1]);
    expect(dur.get(set({ ...dflt, le: "+Inf" }))).toBe(2);
    expect(m.get("switchyard_relay_request_duration_seconds_count")!.get(set(dflt))).toBe(2);
    expect(m.get("switchyard_relay_request_duration_seconds_count")!.get(set(vip))).toBe(1);
    expect(m.get("switchyard_relay_request_duration_seconds_sum")!.get(set(dflt))).toBeGreaterThan(0);
    // Failed calls have no latency sample (their time is not an answer's).
    expect(m.get("switchyard_relay_request_duration_seconds_count")!.size).toBe(2);
    // First token: streamed calls only.
    expect(m.get("switchyard_relay_first_token_seconds_count")!.get(set(vip))).toBe(1);
    expect(m.get("switchyard_relay_first_token_seconds_count")!.has(set(dflt))).toBe(false);
    expect(m.get("switchyard_relay_first_token_seconds_bucket")!.get(set({ ...vip, le: "+Inf" }))).toBe(1);
    expect(
      m.get("switchyard_relay_first_token_seconds_bucket")!.has(set({ ...vip, le: String(FIRST_TOKEN_BUCKETS[0]) })),
    ).toBe(true);
    // The stream has ended: nothing in flight.
    expect(m.get("switchyard_relay_streams_in_flight")!.get(set(vip))).toBe(0);
    // Channel names for the dashboards' legends, one series per channel.
    expect(m.get("switchyard_channel_info")!.get(set({ channel: String(ok), name: "mock", type: "1" }))).toBe(1);
    expect(m.get("switchyard_channel_info")!.size).toBe(3);
    expect(m.get("switchyard_channel_status")!.get(`channel="${ok}"`)).toBe(1);
    // The write-behind queue depth is still exposed.
    expect(m.has("switchyard_pending_writes")).toBe(true);
  });

  /** One successful chat call of `model` by a new user, settled, then a scrape. */
  const servedBy = async (model: string) => {
    const user = await fx.user(10_000_000);
    const { key } = await fx.token(user.id);
    const res = await fx.call("/v1/chat/completions", key, { model, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    await res.text();
    await fx.flush();
    return scrape();
  };

  test("a call retried on a second channel: one request, served by the second; both attempts counted by status", async () => {
    resetMetrics();
    const flaky = startMockUpstream({ failStatus: 503 });
    try {
      const bad = await fx.channel({ name: "flaky", base_url: flaky.url, models: ["gpt-retry"], priority: 10 });
      const good = await fx.channel({ name: "good", base_url: fx.mock.url, models: ["gpt-retry"] });
      await ratios(fx, ["gpt-4o", "gpt-fail-500", "gpt-fail-429", "gpt-gated", "gpt-retry"], 1, 2);
      await fx.option("RetryTimes", "1");
      const m = await servedBy("gpt-retry");
      const at = (channel: number, status?: string) => ({
        model: "gpt-retry",
        channel: String(channel),
        group: "default",
        ...(status ? { status } : {}),
      });
      expect(m.get("switchyard_relay_requests_total")!.get(set(at(good, "200")))).toBe(1);
      expect(m.get("switchyard_relay_requests_total")!.size).toBe(1);
      expect(m.get("switchyard_relay_errors_total")?.size ?? 0).toBe(0);
      expect(m.get("switchyard_relay_upstream_attempts_total")!.get(set(at(bad, "503")))).toBe(1);
      expect(m.get("switchyard_relay_upstream_attempts_total")!.get(set(at(good, "200")))).toBe(1);
      expect(m.get("switchyard_upstream_errors_total")!.get(`channel="${bad}"`)).toBe(1);
      expect(m.get("switchyard_relay_request_duration_seconds_count")!.get(set(at(good)))).toBe(1);
    } finally {
      await fx.option("RetryTimes", "0");
      await flaky.stop();
    }
  });

  test("a call served by a fallback model: counted under the serving model, and as a fallback", async () => {
    resetMetrics();
    await fx.option("ModelFallbacks", JSON.stringify({ "gpt-fail-500": ["gpt-4o"] }));
    try {
      const m = await servedBy("gpt-fail-500");
      expect(
        m
          .get("switchyard_relay_fallbacks_total")!
          .get(set({ requested: "gpt-fail-500", served: "gpt-4o", reason: "upstream_error", group: "default" })),
      ).toBe(1);
      expect(
        m
          .get("switchyard_relay_requests_total")!
          .get(set({ model: "gpt-4o", channel: String(ok), group: "default", status: "200" })),
      ).toBe(1);
      expect(m.get("switchyard_relay_requests_total")!.size).toBe(1);
      // Both attempts: the requested model's channel failed, the fallback's answered.
      expect(
        m
          .get("switchyard_relay_upstream_attempts_total")!
          .get(set({ model: "gpt-fail-500", channel: String(failing), group: "default", status: "500" })),
      ).toBe(1);
      expect(
        m
          .get("switchyard_relay_upstream_attempts_total")!
          .get(set({ model: "gpt-4o", channel: String(ok), group: "default", status: "200" })),
      ).toBe(1);
    } finally {
      await fx.option("ModelFallbacks", "{}");
    }
  });

  test("a response-cache hit: a served call with an empty channel, tokens and the quota it was billed", async () => {
    resetMetrics();
    await fx.option("ResponseCacheEnabled", "true");
    try {
      const frank = await fx.user(10_000_000);
      const { key } = await fx.token(frank.id);
      const body = { model: "gpt-4o", messages: [{ role: "user", content: "the same question" }] };
      for (const expected of ["MISS", "HIT"]) {
        const res = await fx.call("/v1/chat/completions", key, body);
        expect(res.status).toBe(200);
        expect(res.headers.get("x-switchyard-cache")).toBe(expected);
        await res.text();
        await fx.flush();
      }
      const m = await scrape();
      const hit = { model: "gpt-4o", channel: "", group: "default" };
      expect(
        m
          .get("switchyard_relay_requests_total")!
          .get(set({ model: "gpt-4o", channel: String(ok), group: "default", status: "200" })),
      ).toBe(1);
      expect(m.get("switchyard_relay_requests_total")!.get(set({ ...hit, status: "200" }))).toBe(1);
      expect(m.get("switchyard_relay_prompt_tokens_total")!.get(set(hit))).toBe(10);
      // Hits are billed at ResponseCacheBillingRatio, 0 by default.
      expect(m.get("switchyard_relay_quota_total")!.get(set(hit))).toBe(0);
      expect(
        m
          .get("switchyard_relay_upstream_attempts_total")!
          .get(set({ model: "gpt-4o", channel: String(ok), group: "default", status: "200" })),
      ).toBe(1);
    } finally {
      await fx.option("ResponseCacheEnabled", "false");
    }
  });

  test("channel status: 1 enabled, 2 disabled by an admin, read at each scrape", async () => {
    await fx.ctx.deps.db.updateTable("channels").set({ status: 2 }).where("id", "=", failing).execute();
    try {
      const m = await scrape();
      expect(m.get("switchyard_channel_status")!.get(`channel="${failing}"`)).toBe(2);
      expect(m.get("switchyard_channel_status")!.get(`channel="${ok}"`)).toBe(1);
    } finally {
      await fx.ctx.deps.db.updateTable("channels").set({ status: 1 }).where("id", "=", failing).execute();
    }
    expect((await scrape()).get("switchyard_channel_status")!.get(`channel="${failing}"`)).toBe(1);
  });

  test("a stream is counted in flight from its first chunk until it ends", async () => {
    resetMetrics();
    const carol = await fx.user(10_000_000);
    const c = await fx.token(carol.id);
    gate = new Promise<void>((r) => (release = r));
    const res = await fx.call("/v1/chat/completions", c.key, {
      model: "gpt-gated",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain("first");
    const labels = set({ model: "gpt-gated", channel: String(gatedChannel), group: "default" });
    let m = await scrape();
    expect(m.get("switchyard_relay_streams_in_flight")!.get(labels)).toBe(1);
    expect(
      m
        .get("switchyard_relay_requests_total")
        ?.get(set({ model: "gpt-gated", channel: String(gatedChannel), group: "default", status: "200" })),
    ).toBeUndefined();
    release();
    while (!(await reader.read()).done);
    await fx.flush();
    m = await scrape();
    expect(m.get("switchyard_relay_streams_in_flight")!.get(labels)).toBe(0);
    expect(
      m
        .get("switchyard_relay_requests_total")!
        .get(set({ model: "gpt-gated", channel: String(gatedChannel), group: "default", status: "200" })),
    ).toBe(1);
    expect(m.get("switchyard_relay_prompt_tokens_total")!.get(labels)).toBe(3);
    expect(m.get("switchyard_relay_first_token_seconds_count")!.get(labels)).toBe(1);
  });
});

describe("task relays", () => {
  let fx: TaskFixture;
  let suno: SunoMock;
  let channelId: number;
  beforeAll(async () => {
    fx = await taskFixture("sqlite", { metricsEnabled: true });
    suno = startSunoMock({ key: "suno-key-123456" });
    channelId = await fx.channel({ type: 36, key: "suno-key-123456", base_url: suno.url, models: [...SUNO_MODELS] });
  });
  afterAll(async () => {
    await suno.stop();
    await fx.close();
  });

  test("an accepted submission is a served call of its action's model (price key), without quota", async () => {
    resetMetrics();
    const p = await fx.payer(10_000_000, 5_000_000);
    expect((await fx.post("/suno/submit/music", p.key, { prompt: "a sea shanty", tags: "folk" })).status).toBe(200);
    expect((await fx.post("/suno/submit/music", p.key, { prompt: "and another" })).status).toBe(200);
    const m = parse(await (await fx.ctx.app.handle(new Request("http://localhost/metrics"))).text());
    const l = { model: "suno_music", channel: String(channelId), group: "default" };
    expect(m.get("switchyard_relay_requests_total")!.get(set({ ...l, status: "200" }))).toBe(2);
    expect(m.get("switchyard_relay_request_duration_seconds_count")!.get(set(l))).toBe(2);
    // Quota of tasks is not counted at submission (a failed task is refunded later).
    expect(m.get("switchyard_relay_quota_total")?.get(set(l))).toBeUndefined();
  });
});

describe("METRICS_TOKEN", () => {
  let ctx: TestContext;
  beforeAll(
    async () =>
      (ctx = await testContext({
        config: { metricsEnabled: true, metricsToken: config({ METRICS_TOKEN: " s3cret-scrape " }).metricsToken },
      })),
  );
  afterAll(() => ctx.close());

  test("GET /metrics answers only the bearer token (Prometheus' bearer_token / authorization)", async () => {
    expect(ctx.deps.config.metricsToken).toBe("s3cret-scrape");
    const scrape = (headers: Record<string, string> = {}) =>
      ctx.app.handle(new Request("http://localhost/metrics", { headers }));
    const none = await scrape();
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    expect(await none.json()).toEqual({
      success: false,
      message: "metrics need Authorization: Bearer <METRICS_TOKEN>",
    });
    expect((await scrape({ authorization: "Bearer wrong" })).status).toBe(401);
    expect((await scrape({ authorization: "s3cret-scrape" })).status).toBe(401);
    const ok = await scrape({ authorization: "Bearer s3cret-scrape" });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("# TYPE switchyard_relay_requests_total counter");
  });
});
