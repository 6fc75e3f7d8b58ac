// GET /api/channel/update_balance (all channels) answers at once and refreshes in the background; the
// per-channel refresh stays synchronous; graceful shutdown cancels a running refresh and waits for it.
import { describe, expect, test } from "bun:test";
import type { Session, TestContext } from "../helpers/app.ts";
import { backgroundRun } from "../../server/jobs/background.ts";
import { BALANCE_REFRESH_JOB, type BalanceRefreshProgress } from "../../server/modules/channel/balance.ts";
import { sharedBackgroundFixture, shutdownLoggingErrors, until, withShutdownFixture } from "./background-fixture.ts";

/** What a DeepSeek-style balance endpoint answers. */
const BALANCE_REPLY = { is_available: true, balance_infos: [{ currency: "USD", total_balance: "7.25" }] };

const channel = (ctx: TestContext, admin: Session, base_url: string, name: string) =>
  ctx
    .request("POST", "/api/channel/", {
      as: admin,
      body: { type: 43, name, key: "sk-bg", models: "deepseek-chat", base_url },
    })
    .then((r) => r.body.data.ids[0] as number);
const balanceRow = (ctx: TestContext, id: number) =>
  ctx.deps.db
    .selectFrom("channels")
    .select(["balance", "balance_updated_time"])
    .where("id", "=", id)
    .executeTakeFirstOrThrow();

describe("update all balances in the background", () => {
  const fx = sharedBackgroundFixture(BALANCE_REPLY);

  test("the route answers success while the upstream has not answered yet; the refresh finishes afterwards", async () => {
    const { ctx, admin, up } = fx;
    const a = await channel(ctx, admin, up.url, "bg-a");
    const b = await channel(ctx, admin, up.url, "bg-b");
    const r = await ctx.request("GET", "/api/channel/update_balance", { as: admin });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.message).toContain("background");
    const run = backgroundRun<BalanceRefreshProgress>(ctx.deps, BALANCE_REFRESH_JOB);
    expect(run).not.toBeNull();
    expect((await balanceRow(ctx, a)).balance_updated_time).toBe(0);

    // A second request joins the running refresh instead of starting another.
    const again = await ctx.request("GET", "/api/channel/update_balance", { as: admin });
    expect(again.body.success).toBe(true);
    expect(again.body.message).toContain("already running");

    up.open();
    await run!.done;
    expect(run!.progress).toMatchObject({ running: false, total: 2, done: 2, updated: 2, failed: 0, skipped: 0 });
    for (const id of [a, b]) expect(Number((await balanceRow(ctx, id)).balance)).toBe(7.25);
    expect(up.state.hits).toBe(2);
    expect(backgroundRun(ctx.deps, BALANCE_REFRESH_JOB)).toBeNull();
  });

  test("the per-channel refresh still answers with the balance it read", async () => {
    const { ctx, admin, up } = fx;
    const id = await channel(ctx, admin, up.url, "bg-one");
    const r = await ctx.request("GET", `/api/channel/update_balance/${id}/`, { as: admin });
    expect(r.body).toMatchObject({ success: true, balance: 7.25, data: { balance: 7.25 } });
  });
});

describe("graceful shutdown during a background balance refresh", () => {
  test("the refresh is cancelled and awaited before the database closes", () =>
    withShutdownFixture(BALANCE_REPLY, async ({ ctx, admin, up }) => {
      await channel(ctx, admin, up.url, "sd-a");
      await channel(ctx, admin, up.url, "sd-b");
      const r = await ctx.request("GET", "/api/channel/update_balance", { as: admin });
      expect(r.body.success).toBe(true);
      const run = backgroundRun<BalanceRefreshProgress>(ctx.deps, BALANCE_REFRESH_JOB)!;
      await until(() => up.state.hits > 0);
      let settled = false;
      void run.done.then(() => (settled = true));
      // The gate never opens: only cancellation can end the refresh.
      const errors = await shutdownLoggingErrors(ctx);
      expect(settled).toBe(true);
      expect(run.progress.running).toBe(false);
      expect(run.progress.updated).toBe(0);
      // The second channel was never asked once the refresh was cancelled.
      expect(up.state.hits).toBe(1);
      expect(errors).toEqual([]);
      await expect(ctx.deps.db.selectFrom("users").select("id").execute()).rejects.toThrow();
    }));
});
