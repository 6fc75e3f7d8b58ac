import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { ipAllowed, parseAllowIps } from "../../server/modules/token/ips.ts";
import { onTokenChanged } from "../../server/modules/token/events.ts";

const future = () => Math.floor(Date.now() / 1000) + 3600;

describe("token allow-list parsing", () => {
  test("single addresses and CIDR ranges, IPv4 and IPv6; bad lines are named", () => {
    const { ranges, invalid } = parseAllowIps("10.0.0.1\n192.168.0.0/16\n\n2001:db8::/32\nnot-an-ip\n10.0.0.0/33\n::1");
    expect(invalid).toEqual(["not-an-ip", "10.0.0.0/33"]);
    expect(ipAllowed(ranges, "10.0.0.1")).toBe(true);
    expect(ipAllowed(ranges, "10.0.0.2")).toBe(false);
    expect(ipAllowed(ranges, "192.168.44.7")).toBe(true);
    expect(ipAllowed(ranges, "::ffff:192.168.1.1")).toBe(true);
    expect(ipAllowed(ranges, "2001:db8:1::5")).toBe(true);
    expect(ipAllowed(ranges, "2001:db9::5")).toBe(false);
    expect(ipAllowed(ranges, "::1")).toBe(true);
    expect(ipAllowed(parseAllowIps("").ranges, "1.2.3.4")).toBe(true);
    expect(ipAllowed(parseAllowIps("0.0.0.0/0").ranges, "8.8.8.8")).toBe(true);
  });
});

for (const kind of storageKinds()) {
  describe(`tokens [${kind}]`, () => {
    let ctx: TestContext;
    let alice: Session;
    let bob: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      alice = await ctx.user(1);
      bob = await ctx.user(1, { group: "special" });
    });
    afterAll(() => ctx.close());

    const create = (as: Session, body: Record<string, unknown>) => ctx.request("POST", "/api/token/", { as, body });

    test("create: key is sk- + 48 characters shown, stored without the prefix", async () => {
      const r = await create(alice, { name: "main", remain_quota: 500000, expired_time: -1 });
      expect(r.body.success).toBe(true);
      const t = r.body.data[0];
      expect(t.key).toMatch(/^sk-[A-Za-z0-9]{48}$/);
      expect(t).toMatchObject({
        name: "main",
        status: 1,
        remain_quota: 500000,
        expired_time: -1,
        unlimited_quota: false,
        group: "",
      });
      const row = await ctx.deps.db.selectFrom("tokens").selectAll().where("id", "=", t.id).executeTakeFirstOrThrow();
      expect(row.key).toBe(t.key.slice(3));
      expect(row.user_id).toBe(alice.id);
    });

    test("create with count makes extra tokens whose names carry a 6-character suffix", async () => {
      const r = await create(alice, { name: "batch", count: 3, unlimited_quota: true });
      expect(r.body.data).toHaveLength(3);
      const names = r.body.data.map((t: any) => t.name);
      expect(names[0]).toBe("batch");
      expect(names[1]).toMatch(/^batch-[A-Za-z0-9]{6}$/);
      expect(names[2]).toMatch(/^batch-[A-Za-z0-9]{6}$/);
      expect(new Set(r.body.data.map((t: any) => t.key)).size).toBe(3);
      expect((await create(alice, { name: "x", count: 0 })).body.message).toBe(
        "count must be an integer from 1 to 100",
      );
    });

    test("validation messages; bad input creates nothing", async () => {
      const before = await ctx.deps.db
        .selectFrom("tokens")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      expect((await create(alice, { name: "" })).body).toEqual({
        success: false,
        message: "token name cannot be empty",
      });
      expect((await create(alice, { name: "x".repeat(31) })).body.message).toBe(
        "token name is too long (at most 30 characters)",
      );
      expect((await create(alice, { name: "a", expired_time: 12.5 })).body.message).toBe(
        "expired_time must be an integer from -1 to 9007199254740991",
      );
      expect((await create(alice, { name: "a", expired_time: 1000 })).body.message).toMatch(
        /expiry time is in the past/,
      );
      expect((await create(alice, { name: "a", remain_quota: -5 })).body.message).toBe(
        "remain_quota must be an integer from 0 to 9007199254740991",
      );
      expect((await create(alice, { name: "a", remain_quota: "lots" })).status).toBe(400);
      expect((await create(alice, { name: "a", allow_ips: "1.2.3.4\nfoo" })).body.message).toBe(
        "invalid IP address or CIDR range in allow_ips: foo",
      );
      expect((await create(alice, { name: "a", group: "svip" })).body.message).toBe(
        'group "svip" is not available to you',
      );
      expect((await create(alice, { name: "a", status: 3 })).body.message).toMatch(/^status must be 1/);
      const after = await ctx.deps.db
        .selectFrom("tokens")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n));
    });

    test("group: usable groups and the user's own group are accepted", async () => {
      expect((await create(alice, { name: "g", group: "vip" })).body.data[0].group).toBe("vip");
      expect((await create(bob, { name: "g", group: "special" })).body.data[0].group).toBe("special");
      expect((await create(alice, { name: "g", group: "special" })).body.success).toBe(false);
    });

    test("model limits and allow list are normalised", async () => {
      const r = await create(alice, {
        name: "lim",
        model_limits_enabled: true,
        model_limits: " gpt-4o, ,gpt-4o-mini,gpt-4o ",
        allow_ips: " 10.0.0.1 \n\n10.1.0.0/16\n",
      });
      expect(r.body.data[0]).toMatchObject({
        model_limits_enabled: true,
        model_limits: "gpt-4o,gpt-4o-mini",
        allow_ips: "10.0.0.1\n10.1.0.0/16",
      });
    });

    test("list and search page the caller's own tokens only", async () => {
      for (let i = 0; i < 4; i++) await create(bob, { name: `bobtok${i}` });
      const list = await ctx.request("GET", "/api/token/?p=1&size=3", { as: bob });
      expect(list.body.data.items).toHaveLength(3);
      expect(list.body.data.total).toBe(5);
      expect(list.body.data.items.every((t: any) => t.user_id === bob.id)).toBe(true);
      const search = await ctx.request("GET", "/api/token/search?keyword=bobtok", { as: bob });
      expect(search.body.data.items.map((t: any) => t.name).sort()).toEqual([
        "bobtok0",
        "bobtok1",
        "bobtok2",
        "bobtok3",
      ]);
      const one = search.body.data.items[0];
      const byKey = await ctx.request("GET", `/api/token/search?token=${encodeURIComponent(one.key)}`, { as: bob });
      expect(byKey.body.data.items.map((t: any) => t.id)).toEqual([one.id]);
      const fromAlice = await ctx.request("GET", "/api/token/search?keyword=bobtok", { as: alice });
      expect(fromAlice.body.data.total).toBe(0);
    });

    test("another user's token is not found for get, update and delete", async () => {
      const t = (await create(bob, { name: "private" })).body.data[0];
      expect((await ctx.request("GET", `/api/token/${t.id}`, { as: alice })).body).toEqual({
        success: false,
        message: "token not found",
      });
      expect((await ctx.request("PUT", "/api/token/", { as: alice, body: { id: t.id, name: "stolen" } })).status).toBe(
        404,
      );
      expect((await ctx.request("DELETE", `/api/token/${t.id}/`, { as: alice })).status).toBe(404);
      expect((await ctx.request("GET", `/api/token/${t.id}`, { as: bob })).body.data.name).toBe("private");
      expect((await ctx.request("GET", "/api/token/", {})).status).toBe(401);
    });

    test("update fields and status_only toggles; change events fire with the stored key", async () => {
      const t = (await create(alice, { name: "upd", remain_quota: 10 })).body.data[0];
      const heard: string[] = [];
      const sub = onTokenChanged(ctx.deps, (c) =>
        heard.push("key" in c ? c.key : "userId" in c ? `user ${c.userId}` : "all"),
      );
      const r = await ctx.request("PUT", "/api/token/", {
        as: alice,
        body: { ...t, name: "upd2", remain_quota: 99, expired_time: future() },
      });
      expect(r.body.data).toMatchObject({ name: "upd2", remain_quota: 99, status: 1 });
      const off2 = await ctx.request("PUT", "/api/token/?status_only=true", {
        as: alice,
        body: { id: t.id, status: 2, name: "ignored" },
      });
      expect(off2.body.data).toMatchObject({ status: 2, name: "upd2" });
      expect(
        (await ctx.request("PUT", "/api/token/?status_only=true", { as: alice, body: { id: t.id, status: 1 } })).body
          .data.status,
      ).toBe(1);
      expect(
        (await ctx.request("PUT", "/api/token/?status_only=true", { as: alice, body: { id: t.id, status: 4 } })).body
          .message,
      ).toMatch(/^status must be 1/);
      await sub.unsubscribe();
      // A new remaining quota is also announced for the owner, so every instance stops paying from the old leases.
      expect(heard).toEqual([t.key.slice(3), `user ${alice.id}`, t.key.slice(3), t.key.slice(3)]);
    });

    test("an expired token can be enabled only when its expiry is fixed in the same update", async () => {
      const t = (await create(alice, { name: "exp" })).body.data[0];
      await ctx.deps.db.updateTable("tokens").set({ status: 3, expired_time: 1000 }).where("id", "=", t.id).execute();
      const refused = await ctx.request("PUT", "/api/token/?status_only=true", {
        as: alice,
        body: { id: t.id, status: 1 },
      });
      expect(refused.body).toEqual({
        success: false,
        message: "the token has expired and cannot be enabled: change its expiry time first, or set it to never expire",
      });
      expect(
        (await ctx.deps.db.selectFrom("tokens").select("status").where("id", "=", t.id).executeTakeFirstOrThrow())
          .status,
      ).toBe(3);
      const fixed = await ctx.request("PUT", "/api/token/", {
        as: alice,
        body: { id: t.id, status: 1, expired_time: -1 },
      });
      expect(fixed.body.data).toMatchObject({ status: 1, expired_time: -1 });
    });

    test("an exhausted token can be enabled only with quota restored or unlimited", async () => {
      const t = (await create(alice, { name: "exh", remain_quota: 5 })).body.data[0];
      await ctx.deps.db.updateTable("tokens").set({ status: 4, remain_quota: 0 }).where("id", "=", t.id).execute();
      const refused = await ctx.request("PUT", "/api/token/?status_only=true", {
        as: alice,
        body: { id: t.id, status: 1 },
      });
      expect(refused.body.message).toBe(
        "the token's quota is used up and it cannot be enabled: raise its remaining quota first, or make it unlimited",
      );
      expect(
        (await ctx.request("PUT", "/api/token/", { as: alice, body: { id: t.id, status: 1, remain_quota: 1000 } })).body
          .data.status,
      ).toBe(1);
      await ctx.deps.db.updateTable("tokens").set({ status: 4, remain_quota: 0 }).where("id", "=", t.id).execute();
      expect(
        (await ctx.request("PUT", "/api/token/", { as: alice, body: { id: t.id, status: 1, unlimited_quota: true } }))
          .body.data.status,
      ).toBe(1);
    });

    test("delete removes the token for good", async () => {
      const t = (await create(alice, { name: "gone" })).body.data[0];
      const r = await ctx.request("DELETE", `/api/token/${t.id}/`, { as: alice });
      expect(r.body).toEqual({ success: true, message: "token deleted" });
      expect(
        await ctx.deps.db.selectFrom("tokens").select("id").where("id", "=", t.id).executeTakeFirst(),
      ).toBeUndefined();
      expect((await ctx.request("DELETE", `/api/token/${t.id}`, { as: alice })).status).toBe(404);
    });
  });
}
