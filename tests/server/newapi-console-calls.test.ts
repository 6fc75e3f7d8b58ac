// Calls of new-api's current consoles (classic and default UI) that met a 404 or another route's handler, in
// the request and answer shapes of new-api's router and controllers, on every database kind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, ROOT_PASSWORD, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { nowSeconds } from "../../db/index.ts";

for (const kind of storageKinds()) {
  describe(`new-api console calls [${kind}]`, () => {
    let ctx: TestContext;
    let root: Session;
    let admin: Session;
    let alice: Session;
    let bob: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      root = await ctx.login("root", ROOT_PASSWORD);
      admin = await ctx.user(10);
      alice = await ctx.user(1);
      bob = await ctx.user(1);
    });
    afterAll(() => ctx.close());

    const req = (method: string, path: string, as: Session | null, body?: unknown) =>
      ctx.request(method, path, { as, body });

    test("GET /api/user/groups: the caller's usable groups {name: {desc, ratio}}, also for a guest; not /api/user/:id", async () => {
      await req("PUT", "/api/option/", root, {
        key: "UserUsableGroups",
        value: JSON.stringify({ default: "Default", vip: "VIP" }),
      });
      await req("PUT", "/api/option/", root, { key: "GroupRatio", value: JSON.stringify({ default: 1, vip: 2 }) });
      const mine = await req("GET", "/api/user/groups", alice);
      expect(mine.status).toBe(200);
      expect(mine.body).toEqual({
        success: true,
        message: "",
        data: { default: { desc: "Default", ratio: 1 }, vip: { desc: "VIP", ratio: 2 } },
      });
      expect((await req("GET", "/api/user/groups", null)).body.data).toEqual(mine.body.data);
      // the same as the route Switchyard's own console reads
      expect((await req("GET", "/api/user/self/groups", alice)).body.data).toEqual(mine.body.data);
    });

    test("GET /api/user/topup/self and /api/user/topup: new-api's page {page, page_size, total, items}, newest first, keyword on the order number", async () => {
      const now = nowSeconds();
      const row = (user_id: number, trade_no: string, amount: number, money: number, status = "success") => ({
        user_id,
        amount,
        money,
        trade_no,
        payment_method: "zfb",
        create_time: now,
        complete_time: now,
        status,
      });
      await ctx.deps.db
        .insertInto("top_ups")
        .values([
          row(alice.id, "A-001", 10, 7.3),
          row(alice.id, "A-002", 20, 14.6, "pending"),
          row(bob.id, "B-001", 5, 3.65),
          row(alice.id, "A-003", 0, 0),
          row(alice.id, "A-004", 30, 21.9),
        ])
        .execute();
      const page1 = await req("GET", "/api/user/topup/self?p=1&page_size=2", alice);
      expect(page1.body.success).toBe(true);
      expect(page1.body.data).toMatchObject({ page: 1, page_size: 2, total: 3 });
      expect(page1.body.data.items.map((t: any) => t.trade_no)).toEqual(["A-004", "A-002"]);
      expect(page1.body.data.items[0]).toMatchObject({
        user_id: alice.id,
        amount: 30,
        money: 21.9,
        payment_method: "zfb",
        status: "success",
        create_time: now,
      });
      expect(
        (await req("GET", "/api/user/topup/self?p=2&page_size=2", alice)).body.data.items.map((t: any) => t.trade_no),
      ).toEqual(["A-001"]);
      expect((await req("GET", "/api/user/topup/self?p=1&page_size=10&keyword=002", alice)).body.data).toMatchObject({
        total: 1,
        items: [{ trade_no: "A-002" }],
      });
      expect(
        (await req("GET", "/api/user/topup/self?p=1&page_size=10", bob)).body.data.items.map((t: any) => t.trade_no),
      ).toEqual(["B-001"]);

      const all = await req("GET", "/api/user/topup?p=1&page_size=10", admin);
      expect(all.status).toBe(200);
      expect(all.body.data.total).toBe(5);
      expect(all.body.data.items.map((t: any) => t.trade_no)).toEqual(["A-004", "A-003", "B-001", "A-002", "A-001"]);
      expect(
        (await req("GET", "/api/user/topup?p=1&page_size=10&keyword=B-", admin)).body.data.items.map(
          (t: any) => t.trade_no,
        ),
      ).toEqual(["B-001"]);
      const refused = await req("GET", "/api/user/topup", alice);
      expect([refused.status, refused.body.success]).toEqual([403, false]);
    });

    test("POST /api/token/{id}/key: the owner's full key without the sk- prefix, never cached; another user's token is not found", async () => {
      const made = await req("POST", "/api/token/", alice, { name: "chat", remain_quota: 10 });
      const id = made.body.data[0].id as number;
      const stored = (
        await ctx.deps.db.selectFrom("tokens").select("key").where("id", "=", id).executeTakeFirstOrThrow()
      ).key;
      const r = await req("POST", `/api/token/${id}/key`, alice);
      expect(r.body).toEqual({ success: true, message: "", data: { key: stored } });
      expect(r.body.data.key.startsWith("sk-")).toBe(false);
      expect(r.headers.get("cache-control")).toBe("no-store");
      const other = await req("POST", `/api/token/${id}/key`, bob);
      expect(other.body.success).toBe(false);
      expect(JSON.stringify(other.body)).not.toContain(stored);
      expect((await req("POST", `/api/token/${id}/key`, null)).status).toBe(401);
    });

    test("token lists for new-api's consoles (Cache-Control: no-store): keys masked as new-api masks them, without sk-; Switchyard's console keeps sk- and the full key", async () => {
      const made = await req("POST", "/api/token/", alice, { name: "listed", remain_quota: 10 });
      const id = made.body.data[0].id as number;
      const key = (await ctx.deps.db.selectFrom("tokens").select("key").where("id", "=", id).executeTakeFirstOrThrow())
        .key;
      const masked = `${key.slice(0, 4)}**********${key.slice(-4)}`;
      const newApi = { "cache-control": "no-store" };
      const list = await ctx.request("GET", "/api/token/?p=1&size=10", { as: alice, headers: newApi });
      expect(list.body.data.items.find((t: any) => t.id === id).key).toBe(masked);
      const search = await ctx.request("GET", "/api/token/search?keyword=listed&p=1&size=10", {
        as: alice,
        headers: newApi,
      });
      expect(search.body.data.items.map((t: any) => t.key)).toEqual([masked]);
      expect((await ctx.request("GET", `/api/token/${id}`, { as: alice, headers: newApi })).body.data.key).toBe(masked);
      expect(JSON.stringify(list.body)).not.toContain(key);
      // the console then fetches the full key and adds sk- itself
      expect((await req("POST", `/api/token/${id}/key`, alice)).body.data.key).toBe(key);
      const own = await req("GET", "/api/token/?p=1&size=10", alice);
      expect(own.body.data.items.find((t: any) => t.id === id).key).toBe(`sk-${key}`);
      expect((await req("GET", `/api/token/${id}`, alice)).body.data.key).toBe(`sk-${key}`);
    });

    test("GET /api/data/users: usage per user and hour, every model summed, within the time range (admins)", async () => {
      const h = 1_760_000_400 - (1_760_000_400 % 3600);
      await ctx.deps.db
        .insertInto("quota_data")
        .values([
          {
            user_id: alice.id,
            username: alice.username,
            model_name: "gpt-4o",
            created_at: h,
            token_used: 100,
            count: 2,
            quota: 50,
          },
          {
            user_id: alice.id,
            username: alice.username,
            model_name: "claude",
            created_at: h,
            token_used: 30,
            count: 1,
            quota: 20,
          },
          {
            user_id: bob.id,
            username: bob.username,
            model_name: "gpt-4o",
            created_at: h,
            token_used: 5,
            count: 1,
            quota: 3,
          },
          {
            user_id: bob.id,
            username: bob.username,
            model_name: "gpt-4o",
            created_at: h + 3600,
            token_used: 7,
            count: 1,
            quota: 4,
          },
          {
            user_id: bob.id,
            username: bob.username,
            model_name: "gpt-4o",
            created_at: h + 7 * 86400,
            token_used: 9,
            count: 1,
            quota: 9,
          },
        ])
        .execute();
      const r = await req("GET", `/api/data/users?start_timestamp=${h}&end_timestamp=${h + 3600}`, admin);
      expect(r.body.success).toBe(true);
      const byUser = (r.body.data as any[]).sort(
        (a, b) => a.created_at - b.created_at || a.username.localeCompare(b.username),
      );
      expect(byUser).toEqual(
        [
          { username: alice.username, created_at: h, token_used: 130, count: 3, quota: 70 },
          { username: bob.username, created_at: h, token_used: 5, count: 1, quota: 3 },
          { username: bob.username, created_at: h + 3600, token_used: 7, count: 1, quota: 4 },
        ].sort((a, b) => a.created_at - b.created_at || a.username.localeCompare(b.username)),
      );
      expect((await req("GET", "/api/data/users", alice)).status).toBe(403);
    });

    test("GET /api/usage/token/ and /api/log/token: what the presented token (Bearer sk-...) has left and its latest calls", async () => {
      const made = await req("POST", "/api/token/", alice, {
        name: "usage",
        remain_quota: 700,
        model_limits_enabled: true,
        model_limits: "gpt-4o,claude",
      });
      const id = made.body.data[0].id as number;
      await ctx.deps.db.updateTable("tokens").set({ used_quota: 300 }).where("id", "=", id).execute();
      const key = (await ctx.deps.db.selectFrom("tokens").select("key").where("id", "=", id).executeTakeFirstOrThrow())
        .key;
      const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
      const usage = await ctx.request("GET", "/api/usage/token/", { headers: bearer(`sk-${key}`) });
      expect(usage.status).toBe(200);
      expect(usage.body).toEqual({
        code: true,
        message: "ok",
        data: {
          object: "token_usage",
          name: "usage",
          total_granted: 1000,
          total_used: 300,
          total_available: 700,
          unlimited_quota: false,
          model_limits: { "gpt-4o": true, claude: true },
          model_limits_enabled: true,
          expires_at: 0,
        },
      });
      // the key without its prefix names the same token
      expect((await ctx.request("GET", "/api/usage/token/", { headers: bearer(key) })).body.data.name).toBe("usage");
      const none = await ctx.request("GET", "/api/usage/token/", {});
      expect([none.status, none.body.success]).toEqual([401, false]);
      expect((await ctx.request("GET", "/api/usage/token/", { headers: bearer("sk-nosuchkey") })).status).toBe(401);

      const now = nowSeconds();
      await ctx.deps.db
        .insertInto("logs")
        .values([
          {
            user_id: alice.id,
            created_at: now - 2,
            type: 2,
            token_id: id,
            token_name: "usage",
            model_name: "gpt-4o",
            quota: 10,
            channel_id: 5,
            content: "first",
          },
          {
            user_id: alice.id,
            created_at: now - 1,
            type: 2,
            token_id: id,
            token_name: "usage",
            model_name: "claude",
            quota: 20,
            channel_id: 5,
            content: "second",
          },
          {
            user_id: alice.id,
            created_at: now,
            type: 2,
            token_id: id + 1000,
            token_name: "other",
            model_name: "gpt-4o",
            quota: 1,
            channel_id: 5,
            content: "not this token",
          },
        ])
        .execute();
      const logs = await ctx.request("GET", "/api/log/token", { headers: bearer(`sk-${key}`) });
      expect(logs.body.success).toBe(true);
      expect(logs.body.data.map((l: any) => l.content)).toEqual(["second", "first"]);
      // a token's own view carries no channel, as a user's log does
      expect(logs.body.data[0]).toMatchObject({ model_name: "claude", quota: 20, channel: 0, channel_name: "" });
      expect((await ctx.request("GET", "/api/log/token", {})).status).toBe(401);
    });

    test("GET /api/log/search and /api/log/self/search: retired in new-api, answered as it answers them", async () => {
      const r = await req("GET", "/api/log/search?keyword=x", admin);
      expect([r.status, r.body.success]).toEqual([200, false]);
      expect(r.body.message).toContain("GET /api/log/");
      expect((await req("GET", "/api/log/self/search?keyword=x", alice)).body.success).toBe(false);
      expect((await req("GET", "/api/log/search", alice)).status).toBe(403);
    });

    test("POST /api/token/batch/keys {ids}: the caller's own keys among them, id → key without sk-; at most 100", async () => {
      const made = await req("POST", "/api/token/", alice, { name: "batch", count: 2, remain_quota: 10 });
      const ids = made.body.data.map((t: any) => t.id as number);
      const theirs = (await req("POST", "/api/token/", bob, { name: "bobs", remain_quota: 10 })).body.data[0]
        .id as number;
      const rows = await ctx.deps.db.selectFrom("tokens").select(["id", "key"]).where("id", "in", ids).execute();
      const r = await req("POST", "/api/token/batch/keys", alice, { ids: [...ids, theirs] });
      expect(r.body).toEqual({
        success: true,
        message: "",
        data: { keys: Object.fromEntries(rows.map((x) => [String(x.id), x.key])) },
      });
      expect(r.headers.get("cache-control")).toBe("no-store");
      expect((await req("POST", "/api/token/batch/keys", alice, { ids: [] })).body.success).toBe(false);
      const many = await req("POST", "/api/token/batch/keys", alice, {
        ids: Array.from({ length: 101 }, (_, i) => i + 1),
      });
      expect([many.status, many.body.success]).toEqual([400, false]);
    });

    test("GET /api/data/tokens and /api/data/self/tokens: consumption per token, model and hour from the consume logs", async () => {
      const h = 1_750_000_000 - (1_750_000_000 % 3600);
      const log = (
        user: Session,
        token_id: number,
        token_name: string,
        model_name: string,
        created_at: number,
        quota: number,
        type = 2,
      ) => ({
        user_id: user.id,
        username: user.username,
        created_at,
        type,
        token_id,
        token_name,
        model_name,
        quota,
        prompt_tokens: 10,
        completion_tokens: 5,
        content: "",
      });
      await ctx.deps.db
        .insertInto("logs")
        .values([
          log(alice, 501, "a-main", "gpt-4o", h + 10, 100),
          log(alice, 501, "a-main", "gpt-4o", h + 20, 50),
          log(alice, 501, "a-main", "claude", h + 30, 7),
          log(alice, 502, "a-side", "gpt-4o", h + 3600 + 5, 9),
          log(bob, 601, "b-main", "gpt-4o", h + 40, 1),
          log(alice, 501, "a-main", "gpt-4o", h + 50, 999, 5),
        ])
        .execute();
      const range = `start_timestamp=${h}&end_timestamp=${h + 7200}`;
      const mine = await req("GET", `/api/data/self/tokens?${range}`, alice);
      expect(mine.body.success).toBe(true);
      const row = (
        token_id: number,
        token_name: string,
        model_name: string,
        created_at: number,
        count: number,
        quota: number,
        who = alice,
      ) => ({
        user_id: who.id,
        username: who.username,
        token_id,
        token_name,
        model_name,
        created_at,
        token_used: 15 * count,
        count,
        quota,
      });
      expect(mine.body.data).toEqual([
        row(501, "a-main", "claude", h, 1, 7),
        row(501, "a-main", "gpt-4o", h, 2, 150),
        row(502, "a-side", "gpt-4o", h + 3600, 1, 9),
      ]);
      expect((await req("GET", `/api/data/self/tokens?${range}&token_name=a-side`, alice)).body.data).toEqual([
        row(502, "a-side", "gpt-4o", h + 3600, 1, 9),
      ]);
      const all = await req("GET", `/api/data/tokens?${range}&username=${bob.username}`, admin);
      expect(all.body.data).toEqual([row(601, "b-main", "gpt-4o", h, 1, 1, bob)]);
      expect((await req("GET", "/api/data/self/tokens", alice)).body.success).toBe(false);
      expect(
        (await req("GET", `/api/data/self/tokens?start_timestamp=${h}&end_timestamp=${h + 31 * 86400}`, alice)).body
          .success,
      ).toBe(false);
      expect((await req("GET", `/api/data/tokens?${range}`, alice)).status).toBe(403);
    });

    test("GET /api/status/test: admins only; the database answers and the requests in flight are counted", async () => {
      const r = await req("GET", "/api/status/test", admin);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        success: true,
        message: "Server is running",
        http_stats: { active_connections: expect.any(Number) },
      });
      expect((await req("GET", "/api/status/test", alice)).status).toBe(403);
    });

    test("custom OAuth is answered as new-api answers with no provider: empty lists, in the envelope", async () => {
      expect((await req("GET", "/api/user/oauth/bindings", alice)).body).toEqual({
        success: true,
        message: "",
        data: [],
      });
      expect((await req("GET", `/api/user/${alice.id}/oauth/bindings`, admin)).body).toEqual({
        success: true,
        message: "",
        data: [],
      });
      expect((await req("GET", "/api/user/999999/oauth/bindings", admin)).body.success).toBe(false);
      expect((await req("GET", "/api/custom-oauth-provider/", root)).body).toEqual({
        success: true,
        message: "",
        data: [],
      });
      expect((await req("GET", "/api/custom-oauth-provider/", admin)).status).toBe(403);
      expect((await req("GET", "/api/user/oauth/bindings", null)).status).toBe(401);
    });
  });
}
