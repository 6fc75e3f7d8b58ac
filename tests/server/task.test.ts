import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";

for (const kind of storageKinds()) {
  describe(`drawing and creative task logs [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let alice: Session;
    let bob: Session;
    const T0 = 1_760_000_000; // seconds
    beforeAll(async () => {
      ctx = await testContext({ kind });
      admin = await ctx.user(10);
      alice = await ctx.user(1);
      bob = await ctx.user(1);
      const mj = (s: Session, mj_id: string, channel_id: number, submitSec: number) => ({
        user_id: s.id,
        mj_id,
        channel_id,
        action: "IMAGINE",
        code: 1,
        status: "SUCCESS",
        progress: "100%",
        prompt: "a cat",
        submit_time: submitSec * 1000,
        finish_time: (submitSec + 30) * 1000,
        created_at: submitSec,
      });
      await ctx.deps.db
        .insertInto("midjourneys")
        .values([
          mj(alice, "mj-a1", 3, T0),
          mj(alice, "mj-a2", 4, T0 + 100),
          mj(alice, "mj-a3", 3, T0 + 200),
          mj(bob, "mj-b1", 3, T0 + 300),
        ])
        .execute();
      const task = (s: Session, task_id: string, channel_id: number, submit: number) => ({
        user_id: s.id,
        task_id,
        channel_id,
        platform: "suno",
        action: "MUSIC",
        status: "SUCCESS",
        progress: "100%",
        submit_time: submit,
        finish_time: submit + 40,
        created_at: submit,
        updated_at: submit + 40,
      });
      await ctx.deps.db
        .insertInto("tasks")
        .values([task(alice, "t-a1", 7, T0), task(alice, "t-a2", 8, T0 + 50), task(bob, "t-b1", 7, T0 + 60)])
        .execute();
    });
    afterAll(() => ctx.close());

    const ids = (r: any, field: string) => r.body.data.map((x: any) => x[field]);

    test("admin drawing log: all users, newest first, channel and mj_id filters, pages from 0", async () => {
      expect(ids(await ctx.request("GET", "/api/mj/", { as: admin }), "mj_id")).toEqual([
        "mj-b1",
        "mj-a3",
        "mj-a2",
        "mj-a1",
      ]);
      expect(ids(await ctx.request("GET", "/api/mj/?channel_id=3", { as: admin }), "mj_id")).toEqual([
        "mj-b1",
        "mj-a3",
        "mj-a1",
      ]);
      expect(ids(await ctx.request("GET", "/api/mj/?mj_id=mj-a2", { as: admin }), "mj_id")).toEqual(["mj-a2"]);
      expect(ids(await ctx.request("GET", "/api/mj/?p=0&page_size=3", { as: admin }), "mj_id")).toEqual([
        "mj-b1",
        "mj-a3",
        "mj-a2",
      ]);
      expect(ids(await ctx.request("GET", "/api/mj/?p=1&page_size=3", { as: admin }), "mj_id")).toEqual(["mj-a1"]);
      const first = (await ctx.request("GET", "/api/mj/?mj_id=mj-a1", { as: admin })).body.data[0];
      // The fields of a drawing task in spec 001 §3, created_at included.
      expect(first).toMatchObject({
        channel_id: 3,
        action: "IMAGINE",
        code: 1,
        status: "SUCCESS",
        progress: "100%",
        submit_time: T0 * 1000,
        finish_time: (T0 + 30) * 1000,
        mj_id: "mj-a1",
        prompt: "a cat",
        created_at: T0,
      });
      for (const k of ["image_url", "prompt_en", "fail_reason", "id"]) expect(first).toHaveProperty(k);
    });

    test("drawing time range is in milliseconds", async () => {
      const r = await ctx.request(
        "GET",
        `/api/mj/?start_timestamp=${(T0 + 100) * 1000}&end_timestamp=${(T0 + 200) * 1000}`,
        { as: admin },
      );
      expect(ids(r, "mj_id")).toEqual(["mj-a3", "mj-a2"]);
      // the same numbers read as seconds would match nothing
      expect(
        ids(
          await ctx.request("GET", `/api/mj/?start_timestamp=${T0 + 100}&end_timestamp=${T0 + 200}`, { as: admin }),
          "mj_id",
        ),
      ).toEqual([]);
    });

    test("self drawing log: only own rows, channel filter ignored and channel hidden", async () => {
      const r = await ctx.request("GET", "/api/mj/self/?channel_id=4", { as: alice });
      expect(ids(r, "mj_id")).toEqual(["mj-a3", "mj-a2", "mj-a1"]);
      expect(r.body.data.every((x: any) => x.channel_id === 0 && x.user_id === alice.id)).toBe(true);
      expect(
        ids(await ctx.request("GET", `/api/mj/self?start_timestamp=${(T0 + 150) * 1000}`, { as: alice }), "mj_id"),
      ).toEqual(["mj-a3"]);
      expect((await ctx.request("GET", "/api/mj/", { as: alice })).status).toBe(403);
      expect((await ctx.request("GET", "/api/mj/self/", {})).status).toBe(401);
    });

    test("creative tasks: admin sees all with filters, self sees own; times in seconds", async () => {
      expect(ids(await ctx.request("GET", "/api/task/", { as: admin }), "task_id")).toEqual(["t-b1", "t-a2", "t-a1"]);
      expect(ids(await ctx.request("GET", "/api/task/?channel_id=7", { as: admin }), "task_id")).toEqual([
        "t-b1",
        "t-a1",
      ]);
      expect(ids(await ctx.request("GET", "/api/task/?task_id=t-a2", { as: admin }), "task_id")).toEqual(["t-a2"]);
      expect(
        ids(
          await ctx.request("GET", `/api/task/?start_timestamp=${T0 + 10}&end_timestamp=${T0 + 55}`, { as: admin }),
          "task_id",
        ),
      ).toEqual(["t-a2"]);
      const self = await ctx.request("GET", `/api/task/self?start_timestamp=${T0}`, { as: alice });
      expect(ids(self, "task_id")).toEqual(["t-a2", "t-a1"]);
      expect(self.body.data[0]).toMatchObject({
        platform: "suno",
        action: "MUSIC",
        status: "SUCCESS",
        channel_id: 0,
        submit_time: T0 + 50,
      });
      expect(ids(await ctx.request("GET", "/api/task/self", { as: bob }), "task_id")).toEqual(["t-b1"]);
      expect((await ctx.request("GET", "/api/task/", { as: bob })).status).toBe(403);
    });

    test("new-api's consoles (Cache-Control: no-store) page from 1 and get {page, page_size, total, items}; the spec's shape is kept for others", async () => {
      const asNewApi = (path: string, as: Session) =>
        ctx.request("GET", path, { as, headers: { "cache-control": "no-store" } });
      const first = await asNewApi("/api/mj/?p=1&page_size=3", admin);
      expect(first.body.success).toBe(true);
      expect(first.body.data).toMatchObject({ page: 1, page_size: 3, total: 4 });
      expect(first.body.data.items.map((x: any) => x.mj_id)).toEqual(["mj-b1", "mj-a3", "mj-a2"]);
      expect((await asNewApi("/api/mj/?p=2&page_size=3", admin)).body.data).toMatchObject({
        page: 2,
        total: 4,
        items: [{ mj_id: "mj-a1" }],
      });
      // the classic console sends every filter, empty ones too
      const self = await asNewApi("/api/mj/self/?p=1&page_size=10&mj_id=&start_timestamp=&end_timestamp=", alice);
      expect(self.body.data).toMatchObject({ page: 1, total: 3 });
      expect(self.body.data.items.map((x: any) => x.mj_id)).toEqual(["mj-a3", "mj-a2", "mj-a1"]);
      const tasks = await asNewApi("/api/task/?p=1&page_size=2&channel_id=7", admin);
      expect(tasks.body.data).toMatchObject({ page: 1, page_size: 2, total: 2 });
      expect(tasks.body.data.items.map((x: any) => x.task_id)).toEqual(["t-b1", "t-a1"]);
      expect((await asNewApi("/api/task/self?p=1&page_size=10", bob)).body.data).toMatchObject({
        total: 1,
        items: [{ task_id: "t-b1" }],
      });
      // no p: the first page, as new-api reads it
      expect((await asNewApi("/api/task/self", alice)).body.data).toMatchObject({ page: 1, total: 2 });
      // without the header: pages from 0 and a bare list, as before
      expect(ids(await ctx.request("GET", "/api/mj/?p=1&page_size=3", { as: admin }), "mj_id")).toEqual(["mj-a1"]);
    });

    test("bad paging and filters are refused", async () => {
      expect((await ctx.request("GET", "/api/mj/?p=-1", { as: admin })).body).toEqual({
        success: false,
        message: "invalid parameter p: pages start at 0",
      });
      expect((await ctx.request("GET", "/api/task/self?start_timestamp=yesterday", { as: alice })).body).toEqual({
        success: false,
        message: "invalid parameter start_timestamp: expected an integer",
      });
    });
  });
}
