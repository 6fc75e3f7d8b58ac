// The permission split of the operations routes (issue 6): every route called as guest, user, admin and
// root. Whole-site routes are for admins, self routes for any logged-in user, pricing for everyone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";

type Who = "guest" | "user" | "admin" | "root";
const LEVEL: Record<Who, number> = { guest: 0, user: 1, admin: 10, root: 100 };
const now = Math.floor(Date.now() / 1000);
const range = `start_timestamp=${now - 3600}&end_timestamp=${now}`;

// [method, path, body, least role that may call it]
const ROUTES: [string, string, unknown, Who][] = [
  ["GET", "/api/redemption/?p=1", undefined, "admin"],
  ["GET", "/api/redemption/search?keyword=x", undefined, "admin"],
  ["GET", "/api/redemption/999999", undefined, "admin"],
  ["POST", "/api/redemption/", { name: "perm", quota: 1, count: 1 }, "admin"],
  ["PUT", "/api/redemption/", { id: 999999, name: "y" }, "admin"],
  ["PUT", "/api/redemption/?status_only=true", { id: 999999, status: 2 }, "admin"],
  ["DELETE", "/api/redemption/999999", undefined, "admin"],
  ["POST", "/api/user/topup", { key: "no-such-code" }, "user"],
  ["POST", "/api/user/amount", { amount: 10 }, "user"],
  ["POST", "/api/user/pay", { amount: 10, payment_method: "zfb" }, "user"],
  ["GET", "/api/log/?p=1", undefined, "admin"],
  ["GET", "/api/log/stat", undefined, "admin"],
  ["DELETE", "/api/log/?target_timestamp=1", undefined, "admin"],
  ["GET", "/api/log/self/?p=1", undefined, "user"],
  ["GET", "/api/log/self/stat", undefined, "user"],
  ["GET", `/api/data/?${range}`, undefined, "admin"],
  ["GET", `/api/data/self?${range}`, undefined, "user"],
  ["GET", "/api/mj/?p=0", undefined, "admin"],
  ["GET", "/api/mj/self/?p=0", undefined, "user"],
  ["GET", "/api/task/?p=0", undefined, "admin"],
  ["GET", "/api/task/self?p=0", undefined, "user"],
  ["GET", "/api/pricing", undefined, "guest"],
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
  // Switched on so that a refusal can only come from the role check.
  for (const [k, v] of [["DataExportEnabled", "true"], ["PayAddress", "https://pay.example.com"], ["EpayId", "1001"], ["EpayKey", "k"]]) {
    await ctx.deps.options.set(k, v);
  }
});
afterAll(() => ctx.close());

describe("operations permission matrix", () => {
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
});
