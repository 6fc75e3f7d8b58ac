// GET /api/channel/test (all channels) runs through the background runner: it answers at once, a second
// request joins the running test, GET /api/channel/test/progress shows it while it runs and after it ends,
// and graceful shutdown cancels it (no upstream is asked any more, no result is written) and waits for
// it before the database closes.
import { describe, expect, test } from "bun:test";
import type { Session, TestContext } from "../helpers/app.ts";
import { backgroundRun } from "../../server/jobs/background.ts";
import { TEST_ALL_JOB, type TestAllProgress } from "../../server/modules/channel/testing.ts";
import { sharedBackgroundFixture, shutdownLoggingErrors, until, withShutdownFixture } from "./background-fixture.ts";

/** What an OpenAI-style chat endpoint answers. */
const CHAT_REPLY = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "gpt-4o-mini",
  choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};

const channel = (ctx: TestContext, admin: Session, base_url: string, name: string) =>
  ctx
    .request("POST", "/api/channel/", {
      as: admin,
      body: { type: 1, name, key: "sk-test-all", models: "gpt-4o-mini", base_url },
    })
    .then((r) => r.body.data.ids[0] as number);
const progressOf = (ctx: TestContext, admin: Session) =>
  ctx.request("GET", "/api/channel/test/progress", { as: admin }).then((r) => r.body.data as TestAllProgress);

describe("test all channels in the background", () => {
  const fx = sharedBackgroundFixture(CHAT_REPLY);

  test("answers at once, is joined by a second request, shows its progress while running and after", async () => {
    const { ctx, admin, up } = fx;
    const ids = [await channel(ctx, admin, up.url, "ta-a"), await channel(ctx, admin, up.url, "ta-b")];
    const r = await ctx.request("GET", "/api/channel/test", { as: admin });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: "testing all channels started in the background" });
    const run = backgroundRun<TestAllProgress>(ctx.deps, TEST_ALL_JOB);
    expect(run).not.toBeNull();

    await until(() => up.state.hits === 2);
    expect(await progressOf(ctx, admin)).toMatchObject({ running: true, total: 2, done: 0, succeeded: 0, failed: 0 });

    const again = await ctx.request("GET", "/api/channel/test", { as: admin });
    expect(again.body).toMatchObject({
      success: true,
      message: "a test of all channels is already running",
      data: { running: true, total: 2 },
    });

    up.open();
    await run!.done;
    expect(backgroundRun(ctx.deps, TEST_ALL_JOB)).toBeNull();
    const after = await progressOf(ctx, admin);
    expect(after).toMatchObject({ running: false, total: 2, done: 2, succeeded: 2, failed: 0 });
    expect(after.finished_at).toBeGreaterThan(0);
    expect(up.state.hits).toBe(2);
    for (const id of ids) {
      const row = await ctx.deps.db
        .selectFrom("channels")
        .select(["test_time", "response_time"])
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      expect(row.test_time).toBeGreaterThan(0);
      expect(row.response_time).toBeGreaterThan(0);
    }
  });
});

describe("graceful shutdown during a test of all channels", () => {
  test("the run is cancelled and awaited before the database closes; cancelled tests record nothing", () =>
    withShutdownFixture(CHAT_REPLY, async ({ ctx, admin, up }) => {
      // More channels than the run tests at once, so some are still waiting when shutdown comes.
      for (let i = 0; i < 6; i++) await channel(ctx, admin, up.url, `sd-${i}`);
      expect((await ctx.request("GET", "/api/channel/test", { as: admin })).body.success).toBe(true);
      const run = backgroundRun<TestAllProgress>(ctx.deps, TEST_ALL_JOB)!;
      expect(run).not.toBeNull();
      await until(() => up.state.hits === 4);
      let settled = false;
      void run.done.then(() => (settled = true));
      // The database is in memory and gone after shutdown: watch what is written to it instead.
      const written: string[] = [];
      const db = ctx.deps.db as any;
      const updateTable = db.updateTable.bind(db);
      db.updateTable = (table: string) => (written.push(table), updateTable(table));
      // The gate never opens: only cancellation can end the run (a test would otherwise wait 60 s).
      const errors = await shutdownLoggingErrors(ctx);
      expect(settled).toBe(true);
      expect(run.progress).toMatchObject({ running: false, total: 6, succeeded: 0, failed: 0 });
      // The waiting channels were never asked; the in-flight requests were cut.
      expect(up.state.hits).toBe(4);
      await until(() => up.state.aborted === 4);
      expect(errors).toEqual([]);
      await expect(ctx.deps.db.selectFrom("users").select("id").execute()).rejects.toThrow();
      // A cancelled test is no result: nothing was written to the channels.
      expect(written.filter((t) => t === "channels")).toEqual([]);
    }));
});
