// What the console shows while "test all channels" and "update all balances" run: each run's progress
// carries one result per channel as it finishes (read from an offset with ?since=), and a failed test
// leaves its reason on the channel (other_info.test_error) so the list still shows it after a reload.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { backgroundRun } from "../../server/jobs/background.ts";
import { TEST_ALL_JOB } from "../../server/modules/channel/testing.ts";
import { BALANCE_REFRESH_JOB } from "../../server/modules/channel/balance.ts";

let ctx: TestContext;
let admin: Session;
let upstream: ReturnType<typeof Bun.serve>;
let base = "";
const CHAT = {
  id: "c",
  object: "chat.completion",
  created: 1,
  model: "gpt-4o-mini",
  choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};

beforeAll(async () => {
  ctx = await testContext();
  admin = await ctx.user(10);
  // /ok answers, /bad refuses the key; balances: DeepSeek-style under /ok, a 500 under /bad.
  upstream = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path.startsWith("/bad"))
        return Response.json({ error: { message: "invalid api key provided" } }, { status: 401 });
      if (path.endsWith("/user/balance"))
        return Response.json({ balance_infos: [{ currency: "USD", total_balance: "3.5" }] });
      return Response.json(CHAT);
    },
  });
  base = `http://127.0.0.1:${upstream.port}`;
});
afterAll(async () => {
  upstream.stop(true);
  await ctx.close();
});

const create = (body: Record<string, unknown>) =>
  ctx
    .request("POST", "/api/channel/", { as: admin, body: { key: "sk-x", models: "gpt-4o-mini", ...body } })
    .then((r) => r.body.data.ids[0] as number);
const row = (id: number) =>
  ctx.deps.db.selectFrom("channels").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

describe("test all channels: per-channel results", () => {
  test("each finished test is in the progress, with what was stored; a failure keeps its reason on the channel", async () => {
    const good = await create({ type: 1, name: "rr-good", base_url: `${base}/ok` });
    const bad = await create({ type: 1, name: "rr-bad", base_url: `${base}/bad` });
    expect((await ctx.request("GET", "/api/channel/test", { as: admin })).body.success).toBe(true);
    await backgroundRun(ctx.deps, TEST_ALL_JOB)!.done;

    const p = (await ctx.request("GET", "/api/channel/test/progress", { as: admin })).body.data;
    expect(p).toMatchObject({ running: false, total: 2, done: 2, succeeded: 1, failed: 1 });
    const byId = Object.fromEntries(p.results.map((r: any) => [r.id, r]));
    expect(byId[good]).toMatchObject({ id: good, name: "rr-good", success: true, message: "" });
    expect(byId[good].response_time).toBeGreaterThan(0);
    expect(byId[good].test_time).toBeGreaterThan(0);
    expect(byId[bad]).toMatchObject({ id: bad, name: "rr-bad", success: false, response_time: 0, status: 1 });
    expect(byId[bad].message).toContain("invalid api key provided");

    // After a reload the list tells a failed test (tested, no time, a reason) from an untested channel.
    const failed = await row(bad);
    expect(failed.test_time).toBeGreaterThan(0);
    expect(failed.response_time).toBe(0);
    expect(JSON.parse(failed.other_info!).test_error).toContain("invalid api key provided");
    expect(JSON.parse((await row(good)).other_info || "{}").test_error ?? "").toBe("");

    // ?since= skips the results the console already has.
    const later = (await ctx.request("GET", "/api/channel/test/progress?since=1", { as: admin })).body.data;
    expect(later.results).toEqual(p.results.slice(1));
    expect(later.done).toBe(2);

    // Once the key is fixed, a passing test clears the reason.
    await ctx.deps.db
      .updateTable("channels")
      .set({ base_url: `${base}/ok` })
      .where("id", "=", bad)
      .execute();
    const one = await ctx.request("GET", `/api/channel/test/${bad}`, { as: admin });
    expect(one.body.success).toBe(true);
    expect(JSON.parse((await row(bad)).other_info!).test_error).toBe("");
  });

  test("an auto-disabled channel's new status is in its result", async () => {
    await ctx.request("PUT", "/api/option/", {
      as: await ctx.login("root", "rootpass123"),
      body: { key: "AutomaticDisableChannelEnabled", value: "true" },
    });
    await ctx.deps.db.updateTable("channels").set({ status: 2 }).execute();
    const id = await create({ type: 1, name: "rr-disable", base_url: `${base}/bad` });
    await ctx.request("GET", "/api/channel/test", { as: admin });
    await backgroundRun(ctx.deps, TEST_ALL_JOB)!.done;
    const p = (await ctx.request("GET", "/api/channel/test/progress", { as: admin })).body.data;
    expect(p.results).toHaveLength(1);
    expect(p.results[0]).toMatchObject({ id, success: false, status: 3 });
    await ctx.request("PUT", "/api/option/", {
      as: await ctx.login("root", "rootpass123"),
      body: { key: "AutomaticDisableChannelEnabled", value: "false" },
    });
  });
});

describe("update all balances: progress route and per-channel results", () => {
  test("GET /api/channel/update_balance/progress shows the run and each channel's balance or reason", async () => {
    await ctx.deps.db.updateTable("channels").set({ status: 2 }).execute();
    const ok = await create({ type: 43, name: "bal-ok", base_url: `${base}/ok`, models: "deepseek-chat" });
    const bad = await create({ type: 43, name: "bal-bad", base_url: `${base}/bad`, models: "deepseek-chat" });
    const none = await create({ type: 14, name: "bal-none", base_url: `${base}/ok`, models: "claude-3-haiku" });
    expect((await ctx.request("GET", "/api/channel/update_balance/progress", { as: admin })).body).toMatchObject({
      success: true,
      data: null,
    });
    expect((await ctx.request("GET", "/api/channel/update_balance", { as: admin })).body.success).toBe(true);
    await backgroundRun(ctx.deps, BALANCE_REFRESH_JOB)!.done;

    const p = (await ctx.request("GET", "/api/channel/update_balance/progress", { as: admin })).body.data;
    expect(p).toMatchObject({ running: false, total: 3, done: 3, updated: 1, failed: 1, skipped: 1 });
    const byId = Object.fromEntries(p.results.map((r: any) => [r.id, r]));
    expect(byId[ok]).toMatchObject({ name: "bal-ok", success: true, balance: 3.5 });
    expect(byId[ok].balance_updated_time).toBeGreaterThan(0);
    expect(byId[bad]).toMatchObject({ success: false });
    expect(byId[bad].message).toContain("401");
    expect(byId[none]).toMatchObject({ success: false, skipped: true });
    expect(
      (await ctx.request("GET", "/api/channel/update_balance/progress?since=2", { as: admin })).body.data.results,
    ).toEqual(p.results.slice(2));
  });

  test("the progress routes are for admins", async () => {
    const user = await ctx.user(1);
    for (const path of ["/api/channel/test/progress", "/api/channel/update_balance/progress"]) {
      expect((await ctx.request("GET", path, { as: user })).body.success).toBe(false);
    }
  });
});
