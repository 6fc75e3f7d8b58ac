// The permission split of the operations routes: every route called as guest, user, admin and
// root. Whole-site routes are for admins, self routes for any logged-in user, pricing for everyone.
import { describe } from "bun:test";
import { matrixContext, routeTests, type RouteRule } from "./permission-matrix.ts";

const now = Math.floor(Date.now() / 1000);
const range = `start_timestamp=${now - 3600}&end_timestamp=${now}`;

const ROUTES: RouteRule[] = [
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

const m = matrixContext(async (ctx) => {
  // Switched on so that a refusal can only come from the role check.
  for (const [k, v] of [
    ["DataExportEnabled", "true"],
    ["PayAddress", "https://pay.example.com"],
    ["EpayId", "1001"],
    ["EpayKey", "k"],
  ]) {
    await ctx.deps.options.set(k, v);
  }
});

describe("operations permission matrix", () => routeTests(m, ROUTES));
