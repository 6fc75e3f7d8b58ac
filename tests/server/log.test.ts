import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { nowSeconds } from "../../db/index.ts";
import { logStat } from "../../server/modules/log/service.ts";

for (const kind of storageKinds()) {
  describe(`usage logs [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let alice: Session;
    let bob: Session;
    let channelId: number;
    let now = 0;
    const HOUR = 3600;

    const row = (s: Session, over: Record<string, unknown>) => ({
      user_id: s.id,
      username: s.username,
      type: 2,
      created_at: now - 10,
      token_name: "tok",
      model_name: "gpt-4o",
      quota: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      channel_id: 0,
      group: "default",
      content: "",
      other: "",
      ...over,
    });

    beforeAll(async () => {
      ctx = await testContext({ kind });
      now = nowSeconds();
      admin = await ctx.user(10);
      alice = await ctx.user(1);
      bob = await ctx.user(1);
      await ctx.deps.db
        .insertInto("channels")
        .values({ name: "upstream-a", key: "sk-secret", created_time: now, type: 1 })
        .execute();
      channelId = (
        await ctx.deps.db.selectFrom("channels").select("id").where("name", "=", "upstream-a").executeTakeFirstOrThrow()
      ).id;
      await ctx.deps.db
        .insertInto("logs")
        .values([
          // alice: three consumption rows in the last minute, one an hour ago, one two days ago; a top-up
          row(alice, {
            quota: 100,
            prompt_tokens: 10,
            completion_tokens: 5,
            channel_id: channelId,
            other: JSON.stringify({ admin_info: { use_channel: [channelId] }, frt: 120 }),
          }),
          row(alice, {
            quota: 200,
            prompt_tokens: 20,
            completion_tokens: 7,
            model_name: "claude",
            created_at: now - 30,
          }),
          row(alice, {
            quota: 300,
            prompt_tokens: 1,
            completion_tokens: 2,
            token_name: "other",
            group: "vip",
            created_at: now - 50,
          }),
          row(alice, { quota: 1000, prompt_tokens: 100, completion_tokens: 100, created_at: now - HOUR }),
          row(alice, { quota: 5000, prompt_tokens: 500, completion_tokens: 500, created_at: now - 2 * 24 * HOUR }),
          row(alice, { type: 1, quota: 999999, content: "redeemed", created_at: now - 20 }),
          // bob: one consumption row in the last minute, one error row
          row(bob, {
            quota: 40,
            prompt_tokens: 4,
            completion_tokens: 4,
            channel_id: channelId,
            created_at: now - 5,
            request_id: "20260101000000abcdef01bobreq01",
            upstream_request_id: "req_upstream_bob",
          }),
          row(bob, { type: 5, quota: 0, content: "upstream error", created_at: now - 5 }),
        ])
        .execute();
    });
    afterAll(() => ctx.close());

    test("admin lists every user's logs newest first with {items, page, page_size, total} and channel names", async () => {
      const r = await ctx.request("GET", "/api/log/?p=1&page_size=3", { as: admin });
      expect(r.body.success).toBe(true);
      expect(r.body.data).toMatchObject({ page: 1, page_size: 3, total: 8 });
      expect(r.body.data.items).toHaveLength(3);
      const times = r.body.data.items.map((x: any) => x.created_at);
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      const all = (await ctx.request("GET", "/api/log/?p=1&page_size=100", { as: admin })).body.data.items;
      const first = all.find((x: any) => x.quota === 100);
      expect(first).toMatchObject({
        channel: channelId,
        channel_name: "upstream-a",
        is_stream: false,
        username: alice.username,
      });
      expect(JSON.parse(first.other).admin_info).toBeDefined();
      expect(JSON.stringify(all)).not.toContain("sk-secret");
      const p3 = await ctx.request("GET", "/api/log/?p=3&page_size=3", { as: admin });
      expect(p3.body.data.items).toHaveLength(2);
    });

    test("admin filters: type, username, token_name, model_name, time range, channel, group", async () => {
      const total = async (qs: string) => (await ctx.request("GET", `/api/log/?${qs}`, { as: admin })).body.data.total;
      expect(await total("type=2")).toBe(6);
      expect(await total("type=5")).toBe(1);
      expect(await total("type=0")).toBe(8);
      expect(await total(`username=${bob.username}`)).toBe(2);
      expect(await total("token_name=other")).toBe(1);
      expect(await total("model_name=claude")).toBe(1);
      expect(await total(`start_timestamp=${now - 120}&end_timestamp=${now}`)).toBe(6);
      expect(await total(`start_timestamp=${now - 2 * HOUR}&end_timestamp=${now - HOUR + 1}`)).toBe(1);
      expect(await total(`channel=${channelId}`)).toBe(2);
      expect(await total("group=vip")).toBe(1);
      expect(await total("request_id=20260101000000abcdef01bobreq01")).toBe(1);
      expect(await total("upstream_request_id=req_upstream_bob")).toBe(1);
      expect(await total("request_id=nothing-like-it")).toBe(0);
      const found = (await ctx.request("GET", "/api/log/?request_id=20260101000000abcdef01bobreq01", { as: admin }))
        .body.data.items;
      expect(found[0]).toMatchObject({
        username: bob.username,
        request_id: "20260101000000abcdef01bobreq01",
        upstream_request_id: "req_upstream_bob",
      });
      // Rows written without one answer "" (as new-api's column default), never null.
      const other = (await ctx.request("GET", `/api/log/?username=${alice.username}&type=1`, { as: admin })).body.data
        .items[0];
      expect(other).toMatchObject({ request_id: "", upstream_request_id: "" });
      expect(await total(`type=2&username=${alice.username}&model_name=gpt-4o&start_timestamp=${now - 2 * HOUR}`)).toBe(
        3,
      );
    });

    test("self lists only the caller's logs; username and channel filters are ignored; channel details hidden", async () => {
      const r = await ctx.request(
        "GET",
        `/api/log/self/?p=1&page_size=50&username=${bob.username}&channel=${channelId}`,
        { as: alice },
      );
      expect(r.body.data.total).toBe(6);
      expect(r.body.data.items.every((x: any) => x.user_id === alice.id)).toBe(true);
      const first = r.body.data.items.find((x: any) => x.quota === 100);
      expect(first.channel).toBe(0);
      expect(first.channel_name).toBe("");
      expect(JSON.parse(first.other)).toEqual({ frt: 120 });
      expect((await ctx.request("GET", "/api/log/self?type=1", { as: alice })).body.data.total).toBe(1);
      expect((await ctx.request("GET", "/api/log/self/", { as: bob })).body.data.total).toBe(2);
      // The request id finds the caller's own log, and nobody else's.
      expect(
        (await ctx.request("GET", "/api/log/self/?request_id=20260101000000abcdef01bobreq01", { as: bob })).body.data
          .total,
      ).toBe(1);
      expect(
        (await ctx.request("GET", "/api/log/self/?request_id=20260101000000abcdef01bobreq01", { as: alice })).body.data
          .total,
      ).toBe(0);
    });

    test("ordinary users cannot use the whole-site endpoints; guests get 401", async () => {
      expect((await ctx.request("GET", "/api/log/", { as: alice })).status).toBe(403);
      expect((await ctx.request("GET", "/api/log/stat", { as: alice })).status).toBe(403);
      expect((await ctx.request("DELETE", `/api/log/?target_timestamp=${now}`, { as: alice })).status).toBe(403);
      expect((await ctx.request("GET", "/api/log/self/", {})).status).toBe(401);
      expect((await ctx.request("GET", "/api/log/self/stat", {})).status).toBe(401);
    });

    test("stat: quota sums consumption over the filters and range; rpm/tpm count the last 60 seconds", async () => {
      const all = (await ctx.request("GET", "/api/log/stat", { as: admin })).body.data;
      // quota: consumption only (100+200+300+1000+5000+40); rpm: 4 consume rows within 60 s; tpm: 15+27+3+8
      expect(all).toEqual({ quota: 6640, rpm: 4, tpm: 53 });
      const ranged = (
        await ctx.request("GET", `/api/log/stat?start_timestamp=${now - 2 * HOUR}&end_timestamp=${now}`, { as: admin })
      ).body.data;
      expect(ranged).toEqual({ quota: 1640, rpm: 4, tpm: 53 });
      const aliceOnly = (
        await ctx.request("GET", `/api/log/stat?username=${alice.username}&model_name=gpt-4o`, { as: admin })
      ).body.data;
      // gpt-4o rows of alice: 100 + 300 + 1000 + 5000; in the last minute 100 (15 tokens) and 300 (3 tokens)
      expect(aliceOnly).toEqual({ quota: 6400, rpm: 2, tpm: 18 });
      const byChannel = (await ctx.request("GET", `/api/log/stat?channel=${channelId}`, { as: admin })).body.data;
      expect(byChannel).toEqual({ quota: 140, rpm: 2, tpm: 23 });
      const self = (await ctx.request("GET", `/api/log/self/stat?username=${bob.username}`, { as: alice })).body.data;
      expect(self).toEqual({ quota: 6600, rpm: 3, tpm: 45 });
      const none = (await ctx.request("GET", "/api/log/self/stat?model_name=nothing", { as: alice })).body.data;
      expect(none).toEqual({ quota: 0, rpm: 0, tpm: 0 });
    });

    test("the rate window is the 60 seconds before now", async () => {
      // 61 seconds later only rows that were at most -1 s old would count: none
      expect(await logStat(ctx.deps, { userId: alice.id }, now + 61)).toEqual({ quota: 6600, rpm: 0, tpm: 0 });
      // 29 seconds later the rows at now-10 and now-30 are still inside (now-30 >= now+29-60), now-50 is not
      expect(await logStat(ctx.deps, { userId: alice.id }, now + 29)).toMatchObject({ rpm: 2, tpm: 42 });
    });

    test("bad filter values are refused with a clear message", async () => {
      const r = await ctx.request("GET", "/api/log/?type=abc", { as: admin });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ success: false, message: "invalid parameter type: expected an integer" });
      expect((await ctx.request("GET", "/api/log/self/stat?start_timestamp=1.5", { as: alice })).body.message).toBe(
        "invalid parameter start_timestamp: expected an integer",
      );
    });

    test("admin deletes logs older than target_timestamp and gets the count", async () => {
      expect((await ctx.request("DELETE", "/api/log/", { as: admin })).body).toEqual({
        success: false,
        message: "target_timestamp is required",
      });
      const r = await ctx.request("DELETE", `/api/log/?target_timestamp=${now - HOUR + 1}`, { as: admin });
      expect(r.body).toMatchObject({ success: true, data: 2 });
      const left = await ctx.deps.db.selectFrom("logs").select("created_at").execute();
      expect(left).toHaveLength(6);
      expect(left.every((x) => Number(x.created_at) >= now - HOUR + 1)).toBe(true);
      expect(
        (await ctx.request("DELETE", `/api/log/?target_timestamp=${now - HOUR + 1}`, { as: admin })).body.data,
      ).toBe(0);
    });
  });
}
