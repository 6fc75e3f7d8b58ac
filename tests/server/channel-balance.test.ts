import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { startMockUpstream, type MockUpstream } from "./channel-upstream.ts";
import { backgroundRun } from "../../server/jobs/background.ts";
import { BALANCE_REFRESH_JOB } from "../../server/modules/channel/balance.ts";

const KEY = "sk-balance-key-abcdef";

for (const kind of storageKinds()) {
  describe(`channel balance and models [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let up: MockUpstream;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      admin = await ctx.user(10);
      up = startMockUpstream();
    });
    afterAll(async () => {
      up.stop();
      await ctx.close();
    });
    beforeEach(() => {
      up.fail = null;
      up.calls.length = 0;
    });

    const mk = async (type: number, extra: Record<string, unknown> = {}) => {
      const r = await ctx.request("POST", "/api/channel/", {
        as: admin,
        body: { type, name: `t${type}`, key: KEY, models: "m", base_url: up.url, ...extra },
      });
      if (!r.body.success) throw new Error(r.body.message);
      return r.body.data.ids[0] as number;
    };
    const balanceOf = async (id: number) => {
      const r = await ctx.request("GET", `/api/channel/update_balance/${id}/`, { as: admin });
      return r.body;
    };
    const stored = async (id: number) =>
      ctx.deps.db
        .selectFrom("channels")
        .select(["balance", "balance_updated_time"])
        .where("id", "=", id)
        .executeTakeFirstOrThrow();

    test("OpenAI billing: hard limit minus usage in cents", async () => {
      const id = await mk(1);
      const r = await balanceOf(id);
      expect(r).toMatchObject({ success: true, balance: 94.5, data: { balance: 94.5 } });
      const paths = up.calls.map((c) => c.path.split("?")[0]);
      expect(paths).toEqual(["/v1/dashboard/billing/subscription", "/v1/dashboard/billing/usage"]);
      expect(up.calls[1].path).toMatch(/start_date=\d{4}-\d{2}-\d{2}&end_date=\d{4}-\d{2}-\d{2}/);
      expect(up.calls.every((c) => c.auth === `Bearer ${KEY}`)).toBe(true);
      const s = await stored(id);
      expect(Number(s.balance)).toBe(94.5);
      expect(s.balance_updated_time).toBeGreaterThan(0);
    });

    test("OpenRouter credits: total credits minus usage", async () => {
      expect((await balanceOf(await mk(20))).balance).toBe(37.75);
    });

    test("DeepSeek: the USD entry of balance_infos", async () => {
      expect((await balanceOf(await mk(43))).balance).toBe(15.5);
      expect(up.calls.at(-1)!.path).toBe("/user/balance");
    });

    test("SiliconCloud: data.totalBalance", async () => {
      expect((await balanceOf(await mk(40))).balance).toBe(88.88);
    });

    test("Moonshot: data.available_balance", async () => {
      expect((await balanceOf(await mk(25))).balance).toBe(49.58894);
    });

    test("a base URL that already ends in /v1 is not doubled", async () => {
      await balanceOf(await mk(25, { base_url: `${up.url}/v1` }));
      expect(up.calls.at(-1)!.path).toBe("/v1/users/me/balance");
    });

    test("types without a balance endpoint answer a clear message and change nothing", async () => {
      const id = await mk(42);
      const r = await balanceOf(id);
      expect(r).toEqual({ success: false, message: "balance query is not supported for this type (Mistral)" });
      expect((await stored(id)).balance_updated_time).toBe(0);
      expect(up.calls).toEqual([]);
    });

    test("upstream errors are reported without the key", async () => {
      const id = await mk(20);
      up.fail = { status: 401, body: { error: { message: `bad key ${KEY}` } } };
      const r = await balanceOf(id);
      expect(r).toEqual({
        success: false,
        message: "balance query failed: the balance endpoint answered 401: bad key ***",
      });
      expect((await stored(id)).balance_updated_time).toBe(0);
    });

    test("update all: enabled channels with a reader; failures counted", async () => {
      await ctx.deps.db.updateTable("channels").set({ status: 2 }).execute();
      await mk(43);
      await mk(25);
      await mk(42);
      const r = await ctx.request("GET", "/api/channel/update_balance", { as: admin });
      expect(r.body.success).toBe(true);
      // The refresh runs in the background: wait for it, then read what it stored.
      await backgroundRun(ctx.deps, BALANCE_REFRESH_JOB)?.done;
      expect(r.body.data).toMatchObject({ running: true });
      const rows = await ctx.deps.db
        .selectFrom("channels")
        .select(["type", "balance_updated_time"])
        .where("status", "=", 1)
        .orderBy("type")
        .execute();
      expect(rows.map((c) => [c.type, c.balance_updated_time > 0])).toEqual([
        [25, true],
        [42, false],
        [43, true],
      ]);
    });

    test("fetch models of a channel and for the create form", async () => {
      const id = await mk(1);
      const r = await ctx.request("GET", `/api/channel/fetch_models/${id}`, { as: admin });
      expect(r.body.data).toEqual(["gpt-4o", "gpt-4o-mini", "text-embedding-3-small"]);
      expect(up.calls.at(-1)).toMatchObject({ path: "/v1/models", auth: `Bearer ${KEY}` });
      const form = await ctx.request("POST", "/api/channel/fetch_models", {
        as: admin,
        body: { type: 1, base_url: up.url, key: "k1\nk2" },
      });
      expect(form.body.data).toHaveLength(3);
      expect(up.calls.at(-1)!.auth).toBe("Bearer k1");
      expect(
        (
          await ctx.request("POST", "/api/channel/fetch_models", {
            as: admin,
            body: { type: 1, base_url: up.url, key: "" },
          })
        ).body,
      ).toEqual({ success: false, message: "fill in key" });
      up.fail = { status: 500, body: { error: { message: "down" } } };
      const failed = await ctx.request("GET", `/api/channel/fetch_models/${id}`, { as: admin });
      expect(failed.body.success).toBe(false);
      expect(failed.body.message).toMatch(/^failed to get model list/);
    });
  });
}
