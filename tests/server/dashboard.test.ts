import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { bucketStart } from "../../server/modules/dashboard/service.ts";

describe("dashboard buckets", () => {
  test("hour, day and week (Monday) starts", () => {
    const t = Math.floor(new Date(2026, 10, 19, 15, 42, 7).getTime() / 1000); // a Thursday
    expect(bucketStart(t, "hour")).toBe(Math.floor(t / 3600) * 3600);
    expect(bucketStart(t, "day")).toBe(new Date(2026, 10, 19).getTime() / 1000);
    expect(bucketStart(t, "week")).toBe(new Date(2026, 10, 16).getTime() / 1000);
    const sunday = Math.floor(new Date(2026, 10, 22, 23, 0, 0).getTime() / 1000);
    expect(bucketStart(sunday, "week")).toBe(new Date(2026, 10, 16).getTime() / 1000);
  });
});

for (const kind of storageKinds()) {
  describe(`dashboard data [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let alice: Session;
    let bob: Session;
    const day0 = Math.floor(new Date(2026, 10, 18).getTime() / 1000);
    const H = 3600;

    beforeAll(async () => {
      ctx = await testContext({ kind });
      admin = await ctx.user(10);
      alice = await ctx.user(1);
      bob = await ctx.user(1);
      const q = (s: Session, model: string, at: number, token_used: number, count: number, quota: number) => ({
        user_id: s.id,
        username: s.username,
        model_name: model,
        created_at: at,
        token_used,
        count,
        quota,
      });
      await ctx.deps.db
        .insertInto("quota_data")
        .values([
          q(alice, "gpt-4o", day0 + 1 * H, 100, 2, 1000),
          q(alice, "gpt-4o", day0 + 2 * H, 50, 1, 500),
          q(alice, "claude", day0 + 2 * H, 10, 1, 70),
          q(bob, "gpt-4o", day0 + 1 * H, 300, 3, 3000),
          q(bob, "gpt-4o", day0 + 26 * H, 5, 1, 9),
        ])
        .execute();
    });
    afterAll(() => ctx.close());

    const range = `start_timestamp=${day0}&end_timestamp=${day0 + 3 * 24 * H}`;

    test("admin: all users per model per hour; optional username narrows to one user", async () => {
      const r = await ctx.request("GET", `/api/data/?${range}&granularity=hour`, { as: admin });
      expect(r.body.data).toEqual([
        { model_name: "gpt-4o", created_at: day0 + H, token_used: 400, count: 5, quota: 4000 },
        { model_name: "claude", created_at: day0 + 2 * H, token_used: 10, count: 1, quota: 70 },
        { model_name: "gpt-4o", created_at: day0 + 2 * H, token_used: 50, count: 1, quota: 500 },
        { model_name: "gpt-4o", created_at: day0 + 26 * H, token_used: 5, count: 1, quota: 9 },
      ]);
      const bobOnly = await ctx.request("GET", `/api/data/?${range}&username=${bob.username}`, { as: admin });
      expect(bobOnly.body.data.map((x: any) => x.quota)).toEqual([3000, 9]);
    });

    test("day granularity sums the hours of a day; the default follows DataExportDefaultTime", async () => {
      const r = await ctx.request("GET", `/api/data/?${range}&granularity=day`, { as: admin });
      expect(r.body.data).toEqual([
        { model_name: "claude", created_at: day0, token_used: 10, count: 1, quota: 70 },
        { model_name: "gpt-4o", created_at: day0, token_used: 450, count: 6, quota: 4500 },
        { model_name: "gpt-4o", created_at: day0 + 24 * H, token_used: 5, count: 1, quota: 9 },
      ]);
      await ctx.deps.options.set("DataExportDefaultTime", "week");
      const w = await ctx.request("GET", `/api/data/?${range}`, { as: admin });
      expect(w.body.data.find((x: any) => x.model_name === "gpt-4o").quota).toBe(4509);
      await ctx.deps.options.set("DataExportDefaultTime", "hour");
      expect((await ctx.request("GET", `/api/data/?${range}&granularity=month`, { as: admin })).body.message).toBe(
        "granularity must be hour, day or week",
      );
    });

    test("self sees only its own rows, ignores username, and may not span more than a month", async () => {
      const r = await ctx.request("GET", `/api/data/self?${range}&username=${bob.username}&granularity=day`, {
        as: alice,
      });
      expect(r.body.data).toEqual([
        { model_name: "claude", created_at: day0, token_used: 10, count: 1, quota: 70 },
        { model_name: "gpt-4o", created_at: day0, token_used: 150, count: 3, quota: 1500 },
      ]);
      const long = await ctx.request(
        "GET",
        `/api/data/self?start_timestamp=${day0 - 40 * 24 * H}&end_timestamp=${day0}`,
        { as: alice },
      );
      expect(long.body).toEqual({ success: false, message: "the time span cannot exceed one month" });
      expect((await ctx.request("GET", `/api/data/?${range}`, { as: alice })).status).toBe(403);
      expect((await ctx.request("GET", `/api/data/self?${range}`, {})).status).toBe(401);
    });

    test("DataExportEnabled off still answers what was recorded (new-api's dashboard throws on a refusal)", async () => {
      const before = (await ctx.request("GET", `/api/data/?${range}`, { as: admin })).body.data;
      await ctx.deps.options.set("DataExportEnabled", "false");
      try {
        const r = await ctx.request("GET", `/api/data/self?${range}`, { as: alice });
        expect(r.status).toBe(200);
        expect(r.body.success).toBe(true);
        const all = await ctx.request("GET", `/api/data/?${range}`, { as: admin });
        expect(all.status).toBe(200);
        expect(all.body.data).toEqual(before);
      } finally {
        await ctx.deps.options.set("DataExportEnabled", "true");
      }
    });
  });
}
