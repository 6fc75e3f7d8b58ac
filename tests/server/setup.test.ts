import { describe, expect, test } from "bun:test";
import { testContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";

for (const kind of storageKinds()) {
  describe(`setup wizard [${kind}]`, () => {
    test("before setup: status says so, management calls are refused, setup creates root once", async () => {
      const ctx = await testContext({ kind, setup: false });
      try {
        const s0 = await ctx.request("GET", "/api/setup");
        expect(s0.body).toEqual({
          success: true,
          message: "",
          data: { status: false, root_init: false, database_type: kind },
        });
        const st = await ctx.request("GET", "/api/status");
        expect(st.body.data.setup).toBe(false);
        const login = await ctx.request("POST", "/api/user/login", { body: { username: "x", password: "y" } });
        expect(login.status).toBe(403);
        expect(login.body.success).toBe(false);

        const empty = await ctx.request("POST", "/api/setup", {
          body: { username: "  ", password: "password1", confirmPassword: "password1" },
        });
        expect(empty.body).toMatchObject({ success: false, message: "username cannot be empty" });
        const short = await ctx.request("POST", "/api/setup", {
          body: { username: "root", password: "short", confirmPassword: "short" },
        });
        expect(short.body.message).toBe("password length must not be less than 8");
        const mismatch = await ctx.request("POST", "/api/setup", {
          body: { username: "root", password: "password1", confirmPassword: "password2" },
        });
        expect(mismatch.body.message).toBe("the two passwords do not match");
        expect(await ctx.deps.db.selectFrom("users").selectAll().execute()).toHaveLength(0);

        const ok = await ctx.request("POST", "/api/setup", {
          body: { username: " admin ", password: "password1", confirmPassword: "password1", SelfUseModeEnabled: true },
        });
        expect(ok.body).toMatchObject({ success: true, message: "system initialised" });
        const users = await ctx.deps.db.selectFrom("users").selectAll().execute();
        expect(users.map((u) => [u.username, u.role])).toEqual([["admin", 100]]);
        expect(ctx.deps.options.get("SelfUseModeEnabled")).toBe("true");
        expect(ctx.deps.options.get("DemoSiteEnabled")).toBe("false");

        const again = await ctx.request("POST", "/api/setup", {
          body: { username: "x", password: "password1", confirmPassword: "password1" },
        });
        expect(again.body).toMatchObject({ success: false, message: "the system is already initialised" });
        const s1 = await ctx.request("GET", "/api/setup");
        expect(s1.body.data).toMatchObject({ status: true, root_init: true });
        const login2 = await ctx.login("admin", "password1");
        expect(login2.id).toBeGreaterThan(0);
        // The console header shows the display name: it is the name chosen in the wizard, not a stock label.
        const self = await ctx.request("GET", "/api/user/self", { headers: login2.headers });
        expect(self.body.data).toMatchObject({ username: "admin", display_name: "admin" });
      } finally {
        await ctx.close();
      }
    });
  });
}
