import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";

for (const kind of storageKinds()) {
  describe(`redemption codes [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let alice: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      admin = await ctx.user(10);
      alice = await ctx.user(1);
    });
    afterAll(() => ctx.close());

    const quotaOf = async (id: number) =>
      Number(
        (await ctx.deps.db.selectFrom("users").select("quota").where("id", "=", id).executeTakeFirstOrThrow()).quota,
      );

    test("admin creates a batch and gets the generated keys back; ordinary users cannot", async () => {
      const r = await ctx.request("POST", "/api/redemption/", {
        as: admin,
        body: { name: "promo", quota: 100000, count: 3 },
      });
      expect(r.body.success).toBe(true);
      expect(r.body.data).toHaveLength(3);
      for (const k of r.body.data) expect(k).toMatch(/^[A-Za-z0-9]{32}$/);
      expect(new Set(r.body.data).size).toBe(3);
      const rows = await ctx.deps.db.selectFrom("redemptions").selectAll().where("name", "=", "promo").execute();
      expect(rows).toHaveLength(3);
      expect(rows.every((x) => x.status === 1 && Number(x.quota) === 100000 && x.user_id === admin.id)).toBe(true);
      const denied = await ctx.request("POST", "/api/redemption/", {
        as: alice,
        body: { name: "x", quota: 1, count: 1 },
      });
      expect(denied.status).toBe(403);
      expect((await ctx.request("GET", "/api/redemption/", { as: alice })).status).toBe(403);
      expect((await ctx.request("GET", "/api/redemption/", {})).status).toBe(401);
    });

    test("name defaults to the formatted quota; name length 1-20, count 1-100 enforced with nothing stored", async () => {
      const r = await ctx.request("POST", "/api/redemption/", {
        as: admin,
        body: { name: "", quota: 250000, count: 1 },
      });
      expect(r.body.success).toBe(true);
      const row = await ctx.deps.db
        .selectFrom("redemptions")
        .selectAll()
        .where("key", "=", r.body.data[0])
        .executeTakeFirstOrThrow();
      expect(row.name).toBe("$0.50");
      const before = (await ctx.deps.db.selectFrom("redemptions").select("id").execute()).length;
      const long = await ctx.request("POST", "/api/redemption/", {
        as: admin,
        body: { name: "x".repeat(21), quota: 1, count: 1 },
      });
      expect(long.body).toEqual({ success: false, message: "redemption code name length must be between 1 and 20" });
      const many = await ctx.request("POST", "/api/redemption/", {
        as: admin,
        body: { name: "many", quota: 1, count: 101 },
      });
      expect(many.body).toEqual({ success: false, message: "count must be an integer from 1 to 100" });
      const zero = await ctx.request("POST", "/api/redemption/", {
        as: admin,
        body: { name: "zero", quota: 1, count: 0 },
      });
      expect(zero.body).toEqual({ success: false, message: "count must be an integer from 1 to 100" });
      const frac = await ctx.request("POST", "/api/redemption/", {
        as: admin,
        body: { name: "frac", quota: 1.5, count: 1 },
      });
      expect(frac.status).toBe(400);
      expect(frac.body.message).toBe("quota must be an integer from 1 to 9007199254740991");
      expect((await ctx.deps.db.selectFrom("redemptions").select("id").execute()).length).toBe(before);
      const hundred = await ctx.request("POST", "/api/redemption/", {
        as: admin,
        body: { name: "hundred", quota: 1, count: 100 },
      });
      expect(hundred.body.data).toHaveLength(100);
    });

    test("list, search and get", async () => {
      const page = await ctx.request("GET", "/api/redemption/?p=1&page_size=5", { as: admin });
      expect(page.body.data.items).toHaveLength(5);
      expect(page.body.data).toMatchObject({ page: 1, page_size: 5 });
      expect(page.body.data.total).toBeGreaterThanOrEqual(104);
      const s = await ctx.request("GET", "/api/redemption/search?keyword=promo", { as: admin });
      expect(s.body.data.total).toBe(3);
      const id = s.body.data.items[0].id;
      const byId = await ctx.request("GET", `/api/redemption/search?keyword=${id}`, { as: admin });
      expect(byId.body.data.items.map((x: any) => x.id)).toContain(id);
      const one = await ctx.request("GET", `/api/redemption/${id}`, { as: admin });
      expect(one.body.data).toMatchObject({ id, name: "promo" });
      expect((await ctx.request("GET", "/api/redemption/999999", { as: admin })).body).toEqual({
        success: false,
        message: "redemption code not found",
      });
    });

    test("redeem credits the user once, writes a top-up log and returns the quota added", async () => {
      const [key] = (
        await ctx.request("POST", "/api/redemption/", { as: admin, body: { name: "one", quota: 777777, count: 1 } })
      ).body.data;
      const before = await quotaOf(alice.id);
      const r = await ctx.request("POST", "/api/user/topup", { as: alice, body: { key } });
      expect(r.body).toMatchObject({ success: true, data: 777777 });
      expect(await quotaOf(alice.id)).toBe(before + 777777);
      const code = await ctx.deps.db
        .selectFrom("redemptions")
        .selectAll()
        .where("key", "=", key)
        .executeTakeFirstOrThrow();
      expect(code).toMatchObject({ status: 3, used_user_id: alice.id });
      expect(Number(code.redeemed_time)).toBeGreaterThan(0);
      const logs = await ctx.deps.db
        .selectFrom("logs")
        .selectAll()
        .where("user_id", "=", alice.id)
        .where("type", "=", 1)
        .execute();
      expect(logs.some((l) => Number(l.quota) === 777777 && l.content.includes("$1.56"))).toBe(true);
      // Language-neutral facts for the console, which words the details in the reader's language.
      const redeemed = logs.find((l) => Number(l.quota) === 777777)!;
      expect(JSON.parse(redeemed.other!)).toEqual({ redemption_id: expect.any(Number) });
      const again = await ctx.request("POST", "/api/user/topup", { as: alice, body: { key } });
      expect(again.body).toEqual({ success: false, message: "redemption code already used" });
      expect(await quotaOf(alice.id)).toBe(before + 777777);
    });

    test("unknown, empty and disabled codes give clear messages and change nothing", async () => {
      const before = await quotaOf(alice.id);
      expect((await ctx.request("POST", "/api/user/topup", { as: alice, body: { key: "nope" } })).body).toEqual({
        success: false,
        message: "invalid redemption code",
      });
      expect((await ctx.request("POST", "/api/user/topup", { as: alice, body: { key: "  " } })).body).toEqual({
        success: false,
        message: "enter redemption code",
      });
      const [key] = (
        await ctx.request("POST", "/api/redemption/", { as: admin, body: { name: "dis", quota: 5, count: 1 } })
      ).body.data;
      const row = await ctx.deps.db
        .selectFrom("redemptions")
        .select("id")
        .where("key", "=", key)
        .executeTakeFirstOrThrow();
      const off = await ctx.request("PUT", "/api/redemption/?status_only=true", {
        as: admin,
        body: { id: row.id, status: 2 },
      });
      expect(off.body.data.status).toBe(2);
      expect((await ctx.request("POST", "/api/user/topup", { as: alice, body: { key } })).body).toEqual({
        success: false,
        message: "this redemption code has been disabled",
      });
      expect(await quotaOf(alice.id)).toBe(before);
      await ctx.request("PUT", "/api/redemption/?status_only=true", { as: admin, body: { id: row.id, status: 1 } });
      expect((await ctx.request("POST", "/api/user/topup", { as: alice, body: { key } })).body.data).toBe(5);
      expect((await ctx.request("POST", "/api/user/topup", { body: { key } })).status).toBe(401);
    });

    test("edit only while unused; used codes cannot be enabled or disabled; delete hides the code", async () => {
      const [key] = (
        await ctx.request("POST", "/api/redemption/", { as: admin, body: { name: "edit", quota: 10, count: 1 } })
      ).body.data;
      const { id } = await ctx.deps.db
        .selectFrom("redemptions")
        .select("id")
        .where("key", "=", key)
        .executeTakeFirstOrThrow();
      const e = await ctx.request("PUT", "/api/redemption/", { as: admin, body: { id, name: "edited", quota: 20 } });
      expect(e.body.data).toMatchObject({ name: "edited", quota: 20 });
      expect((await ctx.request("PUT", "/api/redemption/", { as: admin, body: { id, name: "" } })).body.message).toBe(
        "redemption code name length must be between 1 and 20",
      );
      expect(
        (await ctx.request("PUT", "/api/redemption/?status_only=true", { as: admin, body: { id, status: 3 } })).body
          .message,
      ).toBe("status must be 1 (enabled) or 2 (disabled)");
      await ctx.request("POST", "/api/user/topup", { as: alice, body: { key } });
      expect((await ctx.request("PUT", "/api/redemption/", { as: admin, body: { id, quota: 99 } })).body).toEqual({
        success: false,
        message: "only unused redemption codes can be edited",
      });
      expect(
        (await ctx.request("PUT", "/api/redemption/?status_only=true", { as: admin, body: { id, status: 1 } })).body,
      ).toEqual({
        success: false,
        message: "a used redemption code cannot be enabled or disabled",
      });
      const del = await ctx.request("DELETE", `/api/redemption/${id}/`, { as: admin });
      expect(del.body.success).toBe(true);
      expect((await ctx.request("GET", `/api/redemption/${id}`, { as: admin })).status).toBe(404);
      expect((await ctx.request("DELETE", `/api/redemption/${id}`, { as: admin })).status).toBe(404);
    });

    test("concurrent redemption of one code: exactly one success, quota credited once", async () => {
      const [key] = (
        await ctx.request("POST", "/api/redemption/", { as: admin, body: { name: "race", quota: 1000, count: 1 } })
      ).body.data;
      const racers = await Promise.all(Array.from({ length: 6 }, () => ctx.user(1)));
      const results = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          ctx.request("POST", "/api/user/topup", { as: racers[i % racers.length], body: { key } }),
        ),
      );
      const wins = results.filter((r) => r.body.success);
      expect(wins).toHaveLength(1);
      for (const r of results.filter((r) => !r.body.success))
        expect(r.body.message).toBe("redemption code already used");
      const quotas = await Promise.all(racers.map((s) => quotaOf(s.id)));
      expect(quotas.reduce((a, b) => a + b, 0)).toBe(1000);
      const code = await ctx.deps.db
        .selectFrom("redemptions")
        .selectAll()
        .where("key", "=", key)
        .executeTakeFirstOrThrow();
      expect(racers.map((s) => s.id)).toContain(code.used_user_id);
      const logs = await ctx.deps.db
        .selectFrom("logs")
        .select("id")
        .where("type", "=", 1)
        .where("content", "like", `%code id ${code.id}`)
        .execute();
      expect(logs).toHaveLength(1);
    });
  });
}
