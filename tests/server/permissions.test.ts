// The permission matrix of spec 000 §6: every admin/root route called as guest, user, admin and root.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";

type Who = "guest" | "user" | "admin" | "root";
const LEVEL: Record<Who, number> = { guest: 0, user: 1, admin: 10, root: 100 };

// [method, path, body, least role that may call it]
const ROUTES: [string, string, unknown, Who][] = [
  ["GET", "/api/user/self", undefined, "user"],
  ["GET", "/api/user/aff", undefined, "user"],
  ["PUT", "/api/user/setting", { notify_type: "email" }, "user"],
  ["GET", "/api/user/?p=1", undefined, "admin"],
  ["GET", "/api/user/search?keyword=x", undefined, "admin"],
  ["POST", "/api/user/", { username: "", password: "" }, "admin"],
  ["PUT", "/api/user/", { id: 999999 }, "admin"],
  ["POST", "/api/user/manage", { id: 999999, action: "disable" }, "admin"],
  ["GET", "/api/user/999999", undefined, "admin"],
  ["DELETE", "/api/user/999999", undefined, "admin"],
  ["GET", "/api/group/", undefined, "admin"],
  ["GET", "/api/option/", undefined, "root"],
  ["PUT", "/api/option/", { key: "Notice", value: "hello" }, "root"],
  ["POST", "/api/option/rest_model_ratio", undefined, "root"],
];

let ctx: TestContext;
const sessions: Partial<Record<Who, Session | null>> = {};
beforeAll(async () => {
  ctx = await testContext();
  sessions.guest = null;
  sessions.user = await ctx.user(1);
  sessions.admin = await ctx.user(10);
  sessions.root = await ctx.login("root", "rootpass123");
});
afterAll(() => ctx.close());

describe("permission matrix", () => {
  for (const [method, path, body, least] of ROUTES) {
    for (const who of ["guest", "user", "admin", "root"] as Who[]) {
      const allowed = LEVEL[who] >= LEVEL[least];
      test(`${method} ${path} as ${who} → ${allowed ? "allowed" : "refused"}`, async () => {
        const r = await ctx.request(method, path, { as: sessions[who] ?? null, body });
        if (allowed) {
          expect([401, 403]).not.toContain(r.status);
        } else {
          expect(r.status).toBe(who === "guest" ? 401 : 403);
          expect(r.body.success).toBe(false);
          expect(typeof r.body.message).toBe("string");
        }
      });
    }
  }

  test("public routes need no session", async () => {
    for (const p of ["/api/status", "/api/setup", "/api/notice", "/api/about", "/api/home_page_content"]) {
      const r = await ctx.request("GET", p);
      expect(r.status).toBe(200);
      expect(r.body.success).toBe(true);
    }
  });
});
