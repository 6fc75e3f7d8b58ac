// new-api's monitoring options: channels disabled on the status codes of AutomaticDisableStatusCodes, channel
// tests on the schedule of monitor_setting.auto_test_channel_*, and the Uptime Kuma panel's route.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { startMockUpstream, type MockUpstream } from "./channel-upstream.ts";
import { disableReason, setChannelNotifier } from "../../server/modules/channel/health.ts";
import { channelTestPeriodSeconds, tickChannelTestSchedule } from "../../server/jobs/channel-test.ts";
import { resetUptimeCache, CACHE_SECONDS } from "../../server/modules/panels/uptime.ts";

describe("disabling on chosen status codes", () => {
  test("AutomaticDisableStatusCodes decides which upstream statuses disable; keywords and codes still do", () => {
    const f = (status: number, codes: string, o: Record<string, unknown> = {}) =>
      disableReason({ ok: false, source: "test", status, message: "m", ...o } as any, "credit balance", codes);
    expect(f(401, "401")).toMatch(/^authentication failed \(401\)/);
    expect(f(403, "401")).toBeNull();
    expect(f(502, "401,500-503")).toBe("upstream status (502): m");
    expect(f(504, "401,500-503")).toBeNull();
    expect(f(401, "")).toBeNull();
    expect(f(429, "", { message: "your credit balance is low" })).toMatch(/^matched keyword/);
    expect(f(400, "", { code: "invalid_api_key" })).toMatch(/^invalid_api_key/);
  });
});

for (const kind of storageKinds()) {
  describe(`channel monitoring options [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let up: MockUpstream;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      admin = await ctx.user(10);
      up = startMockUpstream();
      setChannelNotifier(async () => {});
    });
    afterAll(async () => {
      up.stop();
      await ctx.close();
    });
    beforeEach(async () => {
      up.fail = null;
      up.calls.length = 0;
      await ctx.deps.options.set("AutomaticDisableChannelEnabled", "true");
      await ctx.deps.db.updateTable("channels").set({ status: 2 }).execute();
    });
    const mk = async () => {
      const r = await ctx.request("POST", "/api/channel/", {
        as: admin,
        body: { type: 1, name: "mon", key: "sk-k", models: "gpt-4o-mini", base_url: up.url },
      });
      if (!r.body.success) throw new Error(r.body.message);
      return r.body.data.ids[0] as number;
    };
    const status = async (id: number) =>
      (await ctx.deps.db.selectFrom("channels").select("status").where("id", "=", id).executeTakeFirstOrThrow()).status;

    test("a failed test disables on a listed status only", async () => {
      await ctx.deps.options.set("AutomaticDisableStatusCodes", "500-503");
      const a = await mk();
      up.fail = { status: 401, body: { error: { message: "nope", type: "x" } } };
      expect((await ctx.request("GET", `/api/channel/test/${a}`, { as: admin })).body.success).toBe(false);
      expect(await status(a)).toBe(1);
      up.fail = { status: 502, body: { error: { message: "bad gateway", type: "x" } } };
      expect((await ctx.request("GET", `/api/channel/test/${a}`, { as: admin })).body.success).toBe(false);
      expect(await status(a)).toBe(3);
      await ctx.deps.options.set("AutomaticDisableStatusCodes", "401-403");
    });

    test("monitor_setting.auto_test_channel_* schedules channel tests; CHANNEL_TEST_FREQUENCY wins when set", async () => {
      const id = await mk();
      const state = { next: 0, period: 0 };
      expect(channelTestPeriodSeconds(ctx.deps)).toBe(0);
      expect(await tickChannelTestSchedule(ctx.deps, state, 1_000_000)).toBe(false);
      await ctx.deps.options.set("monitor_setting.auto_test_channel_enabled", "true");
      await ctx.deps.options.set("monitor_setting.auto_test_channel_minutes", "0.5");
      expect(channelTestPeriodSeconds(ctx.deps)).toBe(30);
      // The first look starts the clock; nothing runs until one period has passed.
      expect(await tickChannelTestSchedule(ctx.deps, state, 1_000_000)).toBe(false);
      expect(await tickChannelTestSchedule(ctx.deps, state, 1_029_000)).toBe(false);
      expect(up.calls.length).toBe(0);
      expect(await tickChannelTestSchedule(ctx.deps, state, 1_030_000)).toBe(true);
      expect(up.calls.length).toBe(1);
      const tested = await ctx.deps.db
        .selectFrom("channels")
        .select("test_time")
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      expect(tested.test_time).toBeGreaterThan(0);
      // Another instance's look in the same period finds the round taken.
      expect(await tickChannelTestSchedule(ctx.deps, { next: 1, period: 30 }, 1_031_000)).toBe(false);
      await ctx.deps.cache.del("job:channel-test");
      // A changed period restarts the count; switching off stops it.
      await ctx.deps.options.set("monitor_setting.auto_test_channel_minutes", "1");
      expect(await tickChannelTestSchedule(ctx.deps, state, 1_061_000)).toBe(false);
      expect(state.next).toBe(1_121_000);
      await ctx.deps.options.set("monitor_setting.auto_test_channel_enabled", "false");
      expect(await tickChannelTestSchedule(ctx.deps, state, 2_000_000)).toBe(false);
      expect(state).toEqual({ next: 0, period: 0 });
      const envDeps = { ...ctx.deps, config: { ...ctx.deps.config, channelTestFrequencyMinutes: 7 } };
      expect(channelTestPeriodSeconds(envDeps)).toBe(420);
    });
  });
}

describe("GET /api/uptime/status (Uptime Kuma)", () => {
  let ctx: TestContext;
  let root: Session;
  let kuma: ReturnType<typeof Bun.serve>;
  let hits = 0;
  beforeAll(async () => {
    ctx = await testContext();
    root = await ctx.login("root", "rootpass123");
    kuma = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        hits++;
        const path = new URL(req.url).pathname;
        if (path === "/api/status-page/main") {
          return Response.json({
            publicGroupList: [
              {
                id: 1,
                name: "APIs",
                monitorList: [
                  { id: 7, name: "OpenAI" },
                  { id: 8, name: "Claude" },
                ],
              },
              { id: 2, name: "empty", monitorList: [] },
            ],
          });
        }
        if (path === "/api/status-page/heartbeat/main") {
          return Response.json({
            heartbeatList: { 7: [{ status: 0 }, { status: 1 }], 8: [{ status: 1 }, { status: 0 }] },
            uptimeList: { "7_24": 0.9987, "8_24": 0.5 },
          });
        }
        return new Response("not found", { status: 404 });
      },
    });
  });
  afterAll(async () => {
    kuma.stop(true);
    await ctx.close();
  });

  test("no groups: an empty list, for guests too", async () => {
    resetUptimeCache();
    expect((await ctx.request("GET", "/api/uptime/status")).body).toEqual({ success: true, message: "", data: [] });
  });

  test("each group's monitors with the latest beat and the 24-hour uptime; an unreachable group stays empty; answers are shared for a minute", async () => {
    resetUptimeCache();
    const groups = [
      { categoryName: "Core", url: `http://127.0.0.1:${kuma.port}/`, slug: "main", description: "" },
      { categoryName: "Gone", url: "http://127.0.0.1:9", slug: "main" },
    ];
    const r = await ctx.request("PUT", "/api/option/", {
      as: root,
      body: { key: "console_setting.uptime_kuma_groups", value: JSON.stringify(groups) },
    });
    expect(r.body.success).toBe(true);
    const a = await ctx.request("GET", "/api/uptime/status");
    expect(a.body.data).toEqual([
      {
        categoryName: "Core",
        monitors: [
          { name: "OpenAI", uptime: 0.9987, status: 1, group: "APIs" },
          { name: "Claude", uptime: 0.5, status: 0, group: "APIs" },
        ],
      },
      { categoryName: "Gone", monitors: [] },
    ]);
    const before = hits;
    await ctx.request("GET", "/api/uptime/status");
    expect(hits).toBe(before);
    expect(CACHE_SECONDS).toBe(60);
  });
});
