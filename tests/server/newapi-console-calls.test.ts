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

    const req = (method: string, path: string, as: Session | null, body?: unknown) => ctx.request(method, path, { as, body });

    test("GET /api/user/groups: the caller's usable groups {name: {desc, ratio}}, also for a guest; not /api/user/:id", async () => {
      await req("PUT", "/api/option/", root, { key: "UserUsableGroups", value: JSON.stringify({ default: "Default", vip: "VIP" }) });
      await req("PUT", "/api/option/", root, { key: "GroupRatio", value: JSON.stringify({ default: 1, vip: 2 }) });
      const mine = await req("GET", "/api/user/groups", alice);
      expect(mine.status).toBe(200);
      expect(mine.body).toEqual({ success: true, message: "", data: { default: { desc: "Default", ratio: 1 }, vip: { desc: "VIP", ratio: 2 } } });
      expect((await req("GET", "/api/user/groups", null)).body.data).toEqual(mine.body.data);
      // the same as the route Switchyard's own console reads
      expect((await req("GET", "/api/user/self/groups", alice)).body.data).toEqual(mine.body.data);
    });

    test("GET /api/user/topup/self and /api/user/topup: new-api's page {page, page_size, total, items}, newest first, keyword on the order number", async () => {
      const now = nowSeconds();
      const row = (user_id: number, trade_no: string, amount: number, money: number, status = "success") =>
        ({ user_id, amount, money, trade_no, payment_method: "zfb", create_time: now, complete_time: now, status });
      await ctx.deps.db.insertInto("top_ups").values([
        row(alice.id, "A-001", 10, 7.3), row(alice.id, "A-002", 20, 14.6, "pending"), row(bob.id, "B-001", 5, 3.65),
        row(alice.id, "A-003", 0, 0), row(alice.id, "A-004", 30, 21.9),
      ]).execute();
      const page1 = await req("GET", "/api/user/topup/self?p=1&page_size=2", alice);
      expect(page1.body.success).toBe(true);
      expect(page1.body.data).toMatchObject({ page: 1, page_size: 2, total: 3 });
      expect(page1.body.data.items.map((t: any) => t.trade_no)).toEqual(["A-004", "A-002"]);
      expect(page1.body.data.items[0]).toMatchObject({ user_id: alice.id, amount: 30, money: 21.9, payment_method: "zfb", status: "success", create_time: now });
      expect((await req("GET", "/api/user/topup/self?p=2&page_size=2", alice)).body.data.items.map((t: any) => t.trade_no)).toEqual(["A-001"]);
      expect((await req("GET", "/api/user/topup/self?p=1&page_size=10&keyword=002", alice)).body.data).toMatchObject({ total: 1, items: [{ trade_no: "A-002" }] });
      expect((await req("GET", "/api/user/topup/self?p=1&page_size=10", bob)).body.data.items.map((t: any) => t.trade_no)).toEqual(["B-001"]);

      const all = await req("GET", "/api/user/topup?p=1&page_size=10", admin);
      expect(all.status).toBe(200);
      expect(all.body.data.total).toBe(5);
      expect(all.body.data.items.map((t: any) => t.trade_no)).toEqual(["A-004", "A-003", "B-001", "A-002", "A-001"]);
      expect((await req("GET", "/api/user/topup?p=1&page_size=10&keyword=B-", admin)).body.data.items.map((t: any) => t.trade_no)).toEqual(["B-001"]);
      const refused = await req("GET", "/api/user/topup", alice);
      expect([refused.status, refused.body.success]).toEqual([403, false]);
    });

    test("POST /api/token/{id}/key: the owner's full key without the sk- prefix, never cached; another user's token is not found", async () => {
      const made = await req("POST", "/api/token/", alice, { name: "chat", remain_quota: 10 });
      const id = made.body.data[0].id as number;
      const stored = (await ctx.deps.db.selectFrom("tokens").select("key").where("id", "=", id).executeTakeFirstOrThrow()).key;
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
      const key = (await ctx.deps.db.selectFrom("tokens").select("key").where("id", "=", id).executeTakeFirstOrThrow()).key;
      const masked = `${key.slice(0, 4)}**********${key.slice(-4)}`;
      const newApi = { "cache-control": "no-store" };
      const list = await ctx.request("GET", "/api/token/?p=1&size=10", { as: alice, headers: newApi });
      expect(list.body.data.items.find((t: any) => t.id === id).key).toBe(masked);
      const search = await ctx.request("GET", "/api/token/search?keyword=listed&p=1&size=10", { as: alice, headers: newApi });
      expect(search.body.data.items.map((t: any) => t.key)).toEqual([masked]);
      expect((await ctx.request("GET", `/api/token/${id}`, { as: alice, headers: newApi })).body.data.key).toBe(masked);
      expect(JSON.stringify(list.body)).not.toContain(key);
      // the console then fetches the full key and adds sk- itself
      expect((await req("POST", `/api/token/${id}/key`, alice)).body.data.key).toBe(key);
      const own = await req("GET", "/api/token/?p=1&size=10", alice);
      expect(own.body.data.items.find((t: any) => t.id === id).key).toBe(`sk-${key}`);
      expect((await req("GET", `/api/token/${id}`, alice)).body.data.key).toBe(`sk-${key}`);
    });

    test("GET /api/status/test: admins only; the database answers and the requests in flight are counted", async () => {
      const r = await req("GET", "/api/status/test", admin);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ success: true, message: "Server is running", http_stats: { active_connections: expect.any(Number) } });
      expect((await req("GET", "/api/status/test", alice)).status).toBe(403);
    });

    test("custom OAuth is answered as new-api answers with no provider: empty lists, in the envelope", async () => {
      expect((await req("GET", "/api/user/oauth/bindings", alice)).body).toEqual({ success: true, message: "", data: [] });
      expect((await req("GET", `/api/user/${alice.id}/oauth/bindings`, admin)).body).toEqual({ success: true, message: "", data: [] });
      expect((await req("GET", "/api/user/999999/oauth/bindings", admin)).body.success).toBe(false);
      expect((await req("GET", "/api/custom-oauth-provider/", root)).body).toEqual({ success: true, message: "", data: [] });
      expect((await req("GET", "/api/custom-oauth-provider/", admin)).status).toBe(403);
      expect((await req("GET", "/api/user/oauth/bindings", null)).status).toBe(401);
    });
  });
}
