import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { startMockUpstream, type MockUpstream } from "./channel-upstream.ts";
import {
  disableReason,
  FAILURE_THRESHOLD,
  notifyRootOfChannel,
  probeDelaySeconds,
  recordChannelResult,
  setChannelNotifier,
} from "../../server/modules/channel/health.ts";
import { testAllProgress } from "../../server/modules/channel/testing.ts";
import { probeDueChannels } from "../../server/jobs/channel-probe.ts";
import { runScheduledChannelTest } from "../../server/jobs/channel-test.ts";
import { allowLocalFetches } from "../helpers/outbound.ts";

const KEY = "sk-secret-upstream-key-123456";

describe("disable decisions", () => {
  const kw = "Your credit balance is too low\nYou exceeded your current quota";
  test("auth, payment and permission failures, known codes and keywords disable; 429 and 5xx do not", () => {
    const f = (o: Record<string, unknown>) =>
      disableReason({ ok: false, source: "relay", message: "m", ...o } as any, kw);
    expect(f({ status: 401 })).toMatch(/^authentication failed \(401\)/);
    expect(f({ status: 402 })).toMatch(/^payment required/);
    expect(f({ status: 403 })).toMatch(/^permission denied/);
    expect(f({ status: 400, code: "invalid_api_key" })).toMatch(/^invalid_api_key/);
    expect(f({ status: 429, message: "YOU EXCEEDED your current QUOTA, please check" })).toBe(
      'matched keyword "You exceeded your current quota": YOU EXCEEDED your current QUOTA, please check',
    );
    expect(f({ status: 429, message: "rate limited" })).toBeNull();
    expect(f({ status: 500, message: "boom" })).toBeNull();
    expect(f({ status: 503, message: "overloaded" })).toBeNull();
    expect(disableReason({ ok: true, source: "test" }, kw)).toBeNull();
  });
  test("probe back-off doubles from one minute up to thirty", () => {
    expect([0, 1, 2, 3, 10].map(probeDelaySeconds)).toEqual([60, 120, 240, 480, 1800]);
  });
});

for (const kind of storageKinds()) {
  describe(`channel tests and automation [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let up: MockUpstream;
    const notes: string[] = [];
    beforeAll(async () => {
      ctx = await testContext({ kind });
      admin = await ctx.user(10);
      up = startMockUpstream();
      setChannelNotifier(async (_deps, subject) => void notes.push(subject));
    });
    afterAll(async () => {
      up.stop();
      await ctx.close();
    });
    beforeEach(async () => {
      up.fail = null;
      up.delayMs = 0;
      up.badKeys.clear();
      up.calls.length = 0;
      notes.length = 0;
      await ctx.deps.options.set("AutomaticDisableChannelEnabled", "true");
      await ctx.deps.options.set("AutomaticEnableChannelEnabled", "true");
      await ctx.deps.options.set("ChannelDisableThreshold", "5");
    });

    const mk = async (body: Record<string, unknown> = {}) => {
      const r = await ctx.request("POST", "/api/channel/", {
        as: admin,
        body: {
          type: 1,
          name: "mock",
          key: KEY,
          models: "gpt-4o-mini,text-embedding-3-small",
          base_url: up.url,
          ...body,
        },
      });
      if (!r.body.success) throw new Error(r.body.message);
      return r.body.data.ids[0] as number;
    };
    const row = (id: number) =>
      ctx.deps.db.selectFrom("channels").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    const enabledAbilities = async (id: number) =>
      (await ctx.deps.db.selectFrom("abilities").select("enabled").where("channel_id", "=", id).execute()).map((a) =>
        Boolean(a.enabled),
      );
    const test1 = (id: number, q = "") => ctx.request("GET", `/api/channel/test/${id}${q}`, { as: admin });

    test("a test sends a minimal chat through the adaptor and records response and test time", async () => {
      const id = await mk({ test_model: "alias", model_mapping: '{"alias":"gpt-4o-mini"}' });
      const r = await test1(id);
      expect(r.body).toMatchObject({ success: true, message: "" });
      expect(typeof r.body.time).toBe("number");
      const call = up.calls.at(-1)!;
      expect(call.path).toBe("/v1/chat/completions");
      expect(call.auth).toBe(`Bearer ${KEY}`);
      expect(call.body).toMatchObject({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 16,
      });
      const ch = await row(id);
      expect(ch.response_time).toBeGreaterThan(0);
      expect(ch.test_time).toBeGreaterThan(Math.floor(Date.now() / 1000) - 10);
    });

    test("embedding models are tested with an embedding; ?model= picks the model", async () => {
      const id = await mk();
      const r = await test1(id, "?model=text-embedding-3-small");
      expect(r.body.success).toBe(true);
      expect(up.calls.at(-1)).toMatchObject({
        path: "/v1/embeddings",
        body: { model: "text-embedding-3-small", input: "hi" },
      });
    });

    test("a failed test answers the upstream message without the key and disables (auth failure)", async () => {
      const id = await mk();
      up.fail = {
        status: 401,
        body: {
          error: {
            message: `Incorrect API key provided: ${KEY}`,
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        },
      };
      const r = await test1(id);
      expect(r.body.success).toBe(false);
      expect(r.body.message).toBe("Incorrect API key provided: ***");
      const ch = await row(id);
      expect(ch.status).toBe(3);
      expect(ch.response_time).toBe(0);
      const info = JSON.parse(ch.other_info);
      expect(info.status_reason).toBe("authentication failed (401): Incorrect API key provided: ***");
      expect(info.status_time).toBeGreaterThan(0);
      expect(await enabledAbilities(id)).toEqual([false, false]);
      expect(notes).toEqual([`Channel "mock" (#${id}) has been disabled`]);
    });

    test("no automatic disable when the option is off or the channel's auto_ban is 0; manual disables stay", async () => {
      up.fail = { status: 401, body: { error: { message: "bad key" } } };
      const noBan = await mk({ auto_ban: 0 });
      await test1(noBan);
      expect((await row(noBan)).status).toBe(1);
      await ctx.deps.options.set("AutomaticDisableChannelEnabled", "false");
      const off = await mk();
      await test1(off);
      expect((await row(off)).status).toBe(1);
      expect(notes).toEqual([]);
    });

    test("relay failures must repeat within the window; 5xx never disables", async () => {
      const id = await mk();
      const auth = { ok: false as const, source: "relay" as const, status: 401, message: "invalid key" };
      for (let i = 1; i < FAILURE_THRESHOLD; i++) expect(await recordChannelResult(ctx.deps, id, auth)).toBe("counted");
      expect((await row(id)).status).toBe(1);
      for (let i = 0; i < 5; i++)
        expect(
          await recordChannelResult(ctx.deps, id, {
            ok: false,
            source: "relay",
            status: 500,
            message: "upstream broke",
          }),
        ).toBe("none");
      expect(await recordChannelResult(ctx.deps, id, auth)).toBe("disabled");
      expect((await row(id)).status).toBe(3);
      expect(await recordChannelResult(ctx.deps, id, auth)).toBe("none");
    });

    test("multi-key channel: a failing key is set aside and the next key serves; all keys failing disables", async () => {
      const id = await mk({ name: "multi", key: "mk-one-aaaa\nmk-two-bbbb", mode: "multi_to_single" });
      up.badKeys.add("mk-one-aaaa");
      const first = await test1(id);
      expect(first.body.success).toBe(false);
      expect(up.calls.at(-1)!.auth).toBe("Bearer mk-one-aaaa");
      let ch = await row(id);
      expect(ch.status).toBe(1);
      expect(Object.keys(JSON.parse(ch.channel_info).multi_key_failed_at)).toEqual(["0"]);
      // The key is auto-disabled as new-api marks it: status 3 with the reason and time the console shows.
      const keyInfo = JSON.parse(ch.channel_info);
      expect(keyInfo.multi_key_status_list).toEqual({ "0": 3 });
      expect(keyInfo.multi_key_disabled_reason["0"]).toMatch(/^authentication failed \(401\)/);
      expect(keyInfo.multi_key_disabled_time["0"]).toBeGreaterThan(0);
      expect((await test1(id)).body.success).toBe(true);
      expect(up.calls.at(-1)!.auth).toBe("Bearer mk-two-bbbb");
      up.badKeys.add("mk-two-bbbb");
      expect((await test1(id)).body.success).toBe(false);
      ch = await row(id);
      expect(ch.status).toBe(3);
      expect(JSON.parse(ch.other_info).status_reason).toMatch(/^authentication failed \(401\)/);
    });

    test("keywords match case-insensitively", async () => {
      const id = await mk();
      up.fail = { status: 429, body: { error: { message: "you EXCEEDED YOUR CURRENT QUOTA, check billing" } } };
      await test1(id);
      const ch = await row(id);
      expect(ch.status).toBe(3);
      expect(JSON.parse(ch.other_info).status_reason).toMatch(/^matched keyword "You exceeded your current quota"/);
    });

    test("a plain rate limit or server error in a test does not disable", async () => {
      const id = await mk();
      up.fail = { status: 503, body: { error: { message: "overloaded" } } };
      const r = await test1(id);
      expect(r.body).toMatchObject({ success: false, message: "overloaded" });
      expect((await row(id)).status).toBe(1);
    });

    test("a successful test re-enables an auto-disabled channel only with AutomaticEnableChannelEnabled", async () => {
      const id = await mk();
      await ctx.deps.db
        .updateTable("channels")
        .set({ status: 3, other_info: JSON.stringify({ status_reason: "x", status_time: 1 }) })
        .where("id", "=", id)
        .execute();
      await ctx.request("POST", "/api/channel/fix", { as: admin });
      await ctx.deps.options.set("AutomaticEnableChannelEnabled", "false");
      await test1(id);
      expect((await row(id)).status).toBe(3);
      await ctx.deps.options.set("AutomaticEnableChannelEnabled", "true");
      await test1(id);
      const ch = await row(id);
      expect(ch.status).toBe(1);
      expect(JSON.parse(ch.other_info).status_reason).toBe("");
      expect(await enabledAbilities(id)).toEqual([true, true]);
      expect(notes).toEqual([`Channel "mock" (#${id}) has been enabled`]);
      const manual = await mk({ status: 2 });
      await test1(manual);
      expect((await row(manual)).status).toBe(2);
    });

    test("a full test slower than ChannelDisableThreshold disables; a single test does not", async () => {
      await ctx.deps.options.set("ChannelDisableThreshold", "0.05");
      up.delayMs = 150;
      const single = await mk({ name: "slow-single" });
      expect((await test1(single)).body.success).toBe(true);
      expect((await row(single)).status).toBe(1);
      await ctx.deps.db.updateTable("channels").set({ status: 2 }).where("id", "!=", single).execute();
      const start = await ctx.request("GET", "/api/channel/test", { as: admin });
      expect(start.body.success).toBe(true);
      expect(start.body.message).toBe("testing all channels started in the background");
      const again = await ctx.request("GET", "/api/channel/test", { as: admin });
      expect(again.body.message).toBe("a test of all channels is already running");
      for (let i = 0; i < 200 && testAllProgress(ctx.deps)!.running; i++) await Bun.sleep(10);
      const progress = (await ctx.request("GET", "/api/channel/test/progress", { as: admin })).body.data;
      expect(progress).toMatchObject({ running: false, total: 1, done: 1, failed: 1, succeeded: 0 });
      const ch = await row(single);
      expect(ch.status).toBe(3);
      expect(JSON.parse(ch.other_info).status_reason).toMatch(/^response time .* exceeds the threshold of 0.05s$/);
    });

    test("half-open probe: due auto-disabled channels are tested; a pass re-enables, a fail backs off", async () => {
      await ctx.deps.db.updateTable("channels").set({ status: 2 }).execute();
      const id = await mk({ name: "probe" });
      const old = Math.floor(Date.now() / 1000) - 3600;
      await ctx.deps.db
        .updateTable("channels")
        .set({ status: 3, other_info: JSON.stringify({ status_reason: "x", status_time: old, auto_disabled: true }) })
        .where("id", "=", id)
        .execute();
      up.fail = { status: 500, body: { error: { message: "still down" } } };
      expect(await probeDueChannels(ctx.deps)).toEqual([id]);
      let info = JSON.parse((await row(id)).other_info);
      expect(info.probe_failures).toBe(1);
      expect((await row(id)).status).toBe(3);
      await ctx.deps.cache.del(`job:channel-probe:${id}`);
      expect(await probeDueChannels(ctx.deps)).toEqual([]);
      up.fail = null;
      await ctx.deps.cache.del(`job:channel-probe:${id}`);
      expect(await probeDueChannels(ctx.deps, Math.floor(Date.now() / 1000) + probeDelaySeconds(1) + 1)).toEqual([id]);
      expect((await row(id)).status).toBe(1);
      info = JSON.parse((await row(id)).other_info);
      expect(info.status_reason).toBe("");
      await ctx.deps.options.set("AutomaticEnableChannelEnabled", "false");
      expect(await probeDueChannels(ctx.deps)).toEqual([]);
    });

    test("the scheduled run tests all channels once per period across instances", async () => {
      await ctx.deps.db.updateTable("channels").set({ status: 2 }).execute();
      const id = await mk({ name: "sched" });
      up.calls.length = 0;
      expect(await runScheduledChannelTest(ctx.deps, 10)).toBe(true);
      expect(await runScheduledChannelTest(ctx.deps, 10)).toBe(false);
      expect(up.calls.length).toBe(1);
      expect((await row(id)).test_time).toBeGreaterThan(0);
      await ctx.deps.cache.del("job:channel-test");
    });

    test("by default root is told through root's notification setting (webhook here)", async () => {
      const received: any[] = [];
      const hook = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(req) {
          received.push({ auth: req.headers.get("authorization"), body: await req.json() });
          return new Response("ok");
        },
      });
      try {
        (ctx.deps.config as any).allowLoopbackWebhooks = true;
        await allowLocalFetches(ctx.deps.options);
        const setting = JSON.stringify({
          notify_type: "webhook",
          webhook_url: `http://127.0.0.1:${hook.port}/hook`,
          webhook_secret: "s3",
        });
        await ctx.deps.db.updateTable("users").set({ setting }).where("username", "=", "root").execute();
        setChannelNotifier(notifyRootOfChannel);
        const id = await mk({ name: "hooked" });
        up.fail = { status: 401, body: { error: { message: "revoked" } } };
        await test1(id);
        expect(received).toHaveLength(1);
        expect(received[0].auth).toBe("Bearer s3");
        expect(received[0].body).toMatchObject({ title: `Channel "hooked" (#${id}) has been disabled` });
        expect(received[0].body.content).toContain("authentication failed (401): revoked");
      } finally {
        hook.stop(true);
        (ctx.deps.config as any).allowLoopbackWebhooks = false;
        setChannelNotifier(async (_deps, subject) => void notes.push(subject));
      }
    });

    test("a retired type (PaLM2) answers what happened and which type to use instead", async () => {
      const id = await mk({ type: 11, name: "palm" });
      const r = await test1(id);
      expect(r.body.success).toBe(false);
      expect(r.body.message).toBe(
        "the PaLM2 API has been shut down by its provider; this channel cannot answer any more — use a Google Gemini channel (type 24) instead",
      );
      expect((await test1(999999)).status).toBe(404);
    });
  });
}

// Runs when REDIS_CONN_STRING points at a Redis (as storageKinds() does for PG_DSN / MYSQL_DSN).
if (process.env.REDIS_CONN_STRING)
  describe("failure window counted in Redis", () => {
    test("three relay auth failures within the window disable the channel", async () => {
      const ctx = await testContext({ redis: true });
      try {
        expect(ctx.deps.cache.kind).toBe("redis");
        await ctx.deps.options.set("AutomaticDisableChannelEnabled", "true");
        const admin = await ctx.user(10);
        const r = await ctx.request("POST", "/api/channel/", {
          as: admin,
          body: { type: 1, name: "r", key: "k", models: "m" },
        });
        const id = r.body.data.ids[0];
        const auth = { ok: false as const, source: "relay" as const, status: 403, message: "forbidden" };
        expect(await recordChannelResult(ctx.deps, id, auth)).toBe("counted");
        expect(await recordChannelResult(ctx.deps, id, auth)).toBe("counted");
        expect(await recordChannelResult(ctx.deps, id, auth)).toBe("disabled");
      } finally {
        await ctx.close();
      }
    });
  });
