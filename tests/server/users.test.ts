import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";

for (const kind of storageKinds()) {
  describe(`users [${kind}]`, () => {
    let ctx: TestContext;
    let root: Session;
    let admin: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      root = await ctx.login("root", "rootpass123");
      admin = await ctx.user(10);
    });
    afterAll(() => ctx.close());

    test("admin creates users; empty fields and equal-or-higher roles are refused", async () => {
      expect(
        (await ctx.request("POST", "/api/user/", { as: admin, body: { username: "", password: "" } })).body,
      ).toEqual({
        success: false,
        message: "username and password cannot be empty",
      });
      expect(
        (
          await ctx.request("POST", "/api/user/", {
            as: admin,
            body: { username: "newadm", password: "password1", role: 10 },
          })
        ).body.success,
      ).toBe(false);
      const r = await ctx.request("POST", "/api/user/", {
        as: admin,
        body: { username: "alice", password: "password1", display_name: "Alice" },
      });
      expect(r.body.success).toBe(true);
      const alice = await ctx.deps.db
        .selectFrom("users")
        .selectAll()
        .where("username", "=", "alice")
        .executeTakeFirstOrThrow();
      expect(alice).toMatchObject({ role: 1, status: 1, display_name: "Alice", group: "default" });
    });

    test("list and search page with {items, page, total}", async () => {
      for (let i = 0; i < 12; i++)
        await ctx.request("POST", "/api/user/", { as: root, body: { username: `pg${i}`, password: "password1" } });
      const p1 = await ctx.request("GET", "/api/user/?p=1&page_size=5", { as: admin });
      expect(p1.body.data.items).toHaveLength(5);
      expect(p1.body.data.page).toBe(1);
      expect(p1.body.data.total).toBeGreaterThanOrEqual(15);
      expect(p1.body.data.items[0].password).toBeUndefined();
      const s = await ctx.request("GET", "/api/user/search?keyword=pg1&p=1&page_size=20", { as: admin });
      expect(s.body.data.items.map((u: any) => u.username).sort()).toEqual(["pg1", "pg10", "pg11"]);
      expect(s.body.data.total).toBe(3);
      const g = await ctx.request("GET", "/api/user/search?keyword=&group=nosuch", { as: admin });
      expect(g.body.data.total).toBe(0);
    });

    test("update: quota integer and group; admin cannot touch equal or higher levels", async () => {
      const u = await ctx.user(1);
      const r = await ctx.request("PUT", "/api/user/", {
        as: admin,
        body: { id: u.id, quota: 123456, group: "vip", display_name: "X" },
      });
      expect(r.body.success).toBe(true);
      const row = await ctx.deps.db.selectFrom("users").selectAll().where("id", "=", u.id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ quota: 123456, group: "vip", display_name: "X" });
      const frac = await ctx.request("PUT", "/api/user/", { as: admin, body: { id: u.id, quota: 1.5 } });
      expect(frac.status).toBe(400);
      const other = await ctx.user(10);
      const denied = await ctx.request("PUT", "/api/user/", { as: admin, body: { id: other.id, quota: 1 } });
      expect(denied.body).toEqual({
        success: false,
        message: "no permission to access or change users of equal or higher level",
      });
      expect((await ctx.request("GET", `/api/user/${other.id}`, { as: admin })).status).toBe(403);
      expect((await ctx.request("GET", `/api/user/${u.id}`, { as: admin })).body.data.id).toBe(u.id);
      const promote = await ctx.request("PUT", "/api/user/", { as: admin, body: { id: u.id, role: 10 } });
      expect(promote.body.success).toBe(false);
    });

    test("manage actions follow the level rules", async () => {
      const u = await ctx.user(1);
      const act = (as: Session, id: number, action: string) =>
        ctx.request("POST", "/api/user/manage", { as, body: { id, action } });
      expect((await act(admin, u.id, "promote")).body).toEqual({
        success: false,
        message: "an ordinary admin cannot promote users to admin",
      });
      expect((await act(admin, u.id, "disable")).body).toEqual({
        success: true,
        message: "",
        data: { status: 2, role: 1 },
      });
      expect((await act(admin, u.id, "enable")).body.data).toEqual({ status: 1, role: 1 });
      expect((await act(root, u.id, "promote")).body.data).toEqual({ status: 1, role: 10 });
      expect((await act(admin, u.id, "demote")).body.message).toBe(
        "no permission to access or change users of equal or higher level",
      );
      expect((await act(root, u.id, "demote")).body.data).toEqual({ status: 1, role: 1 });
      const rootId = root.id;
      for (const a of ["disable", "delete", "demote"]) {
        expect((await act(root, rootId, a)).body).toEqual({
          success: false,
          message: "the super admin cannot be disabled, deleted or demoted",
        });
      }
      expect((await act(admin, u.id, "delete")).body.success).toBe(true);
      const row = await ctx.deps.db.selectFrom("users").selectAll().where("id", "=", u.id).executeTakeFirstOrThrow();
      expect(row.deleted_at).not.toBeNull();
      expect((await act(admin, u.id, "enable")).body).toEqual({ success: false, message: "user has been deleted" });
      expect((await ctx.request("GET", "/api/user/self", { as: u })).status).toBe(401);
      expect((await act(admin, u.id, "explode")).status).toBe(400);
    });

    test("self: profile, password change rules, delete own account", async () => {
      const u = await ctx.user(1);
      const put = (body: object) => ctx.request("PUT", "/api/user/self", { as: u, body });
      expect((await put({ display_name: "Me" })).body.success).toBe(true);
      expect((await put({ password: "newpassword1" })).body.message).toBe("the original password is required");
      expect((await put({ original_password: "wrongwrong", password: "newpassword1" })).body.message).toBe(
        "the original password is wrong",
      );
      expect((await put({ original_password: u.password, password: u.password })).body.message).toBe(
        "the new password must differ from the original one",
      );
      expect((await put({ original_password: u.password, password: "short" })).body.message).toBe(
        "password length must not be less than 8",
      );
      expect((await put({ original_password: u.password, password: "newpassword1" })).body.success).toBe(true);
      // The password change ended the old session; the browser that made it holds a renewed cookie.
      const renewed = await ctx.login(u.username, "newpassword1");
      const del = await ctx.request("DELETE", "/api/user/self", { as: renewed });
      expect(del.body).toMatchObject({ success: true, message: "account deleted" });
      expect(
        (await ctx.request("POST", "/api/user/login", { body: { username: u.username, password: "newpassword1" } }))
          .body.success,
      ).toBe(false);
      expect((await ctx.request("DELETE", "/api/user/self", { as: root })).body.success).toBe(false);
    });

    test("aff_transfer: at least one unit, atomic under concurrency", async () => {
      const u = await ctx.user(1, { aff_quota: 1_200_000, quota: 0 });
      const small = await ctx.request("POST", "/api/user/aff_transfer", { as: u, body: { quota: 1000 } });
      expect(small.body).toEqual({ success: false, message: "minimum transfer amount is 500000" });
      const results = await Promise.all(
        Array.from({ length: 6 }, () =>
          ctx.request("POST", "/api/user/aff_transfer", { as: u, body: { quota: 500_000 } }),
        ),
      );
      expect(results.filter((r) => r.body.success)).toHaveLength(2);
      const row = await ctx.deps.db.selectFrom("users").selectAll().where("id", "=", u.id).executeTakeFirstOrThrow();
      expect(row.aff_quota).toBe(200_000);
      expect(row.quota).toBe(1_000_000);
    });

    test("notification setting: https webhook only, threshold number", async () => {
      const u = await ctx.user(1);
      const put = (body: object) => ctx.request("PUT", "/api/user/setting", { as: u, body });
      expect((await put({ notify_type: "webhook", webhook_url: "http://example.com/hook" })).body.message).toBe(
        "webhook URL must use https",
      );
      expect((await put({ notify_type: "sms" })).body.message).toBe("notify_type must be email or webhook");
      const ok = await put({
        notify_type: "webhook",
        webhook_url: "https://example.com/hook",
        webhook_secret: "s",
        quota_warning_threshold: 100000,
        accept_unset_model_ratio_model: true,
      });
      expect(ok.body.success).toBe(true);
      const me = (await ctx.request("GET", "/api/user/self", { as: u })).body.data;
      expect(JSON.parse(me.setting)).toEqual({
        notify_type: "webhook",
        webhook_url: "https://example.com/hook",
        webhook_secret: "s",
        quota_warning_threshold: 100000,
        accept_unset_model_ratio_model: true,
      });
    });

    test("groups come from GroupRatio", async () => {
      const r = await ctx.request("GET", "/api/group/", { as: admin });
      expect(r.body.data).toEqual(["default", "vip", "svip"]);
    });
  });
}
