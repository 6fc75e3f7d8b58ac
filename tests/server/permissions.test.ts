// The permission matrix of spec 000 §6: every admin/root route called as guest, user, admin and root.
import { describe, expect, test } from "bun:test";
import { matrixContext, routeTests, type RouteRule } from "./permission-matrix.ts";

const ROUTES: RouteRule[] = [
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

const m = matrixContext();

describe("permission matrix", () => {
  routeTests(m, ROUTES);

  test("public routes need no session", async () => {
    for (const p of ["/api/status", "/api/setup", "/api/notice", "/api/about", "/api/home_page_content"]) {
      const r = await m.ctx.request("GET", p);
      expect(r.status).toBe(200);
      expect(r.body.success).toBe(true);
    }
  });
});
