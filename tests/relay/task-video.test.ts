// OpenAI video through the task shape, end to end: POST /v1/videos on an OpenAI-format channel billed by
// ModelPrice per second, GET /v1/videos/{id} answered from the task row as the poller brings it from
// queued to completed, GET /v1/videos/{id}/content streamed from the channel, failures refunded, and the
// task in the creative task log with platform openai.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { logsOf } from "./fixtures.ts";
import { PRICE_UNIT, taskFixture, type TaskFixture } from "./task-fixtures.ts";
import { startVideoMock, VIDEO_BYTES, type VideoMock } from "../mocks/video-upstream.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";

const PER_SECOND = 0.1 * PRICE_UNIT;

for (const kind of storageKinds()) {
  describe(`OpenAI video tasks [${kind}]`, () => {
    let fx: TaskFixture;
    let up: VideoMock;
    let channelId: number;
    beforeAll(async () => {
      fx = await taskFixture(kind);
      up = startVideoMock();
      channelId = await fx.channel({
        type: 1,
        key: "sk-video-upstream",
        base_url: up.url,
        models: ["sora-2", "my-sora"],
        model_mapping: { "my-sora": "sora-2" },
      });
      // "my-sora" is the operator's own name for sora-2, priced alike.
      await fx.option("ModelPrice", JSON.stringify({ "sora-2": 0.1, "my-sora": 0.1 }));
    });
    afterAll(async () => {
      await up.stop();
      await fx.close();
    });

    test("create (8 s, billed per second) → queued → in_progress → completed; the content streams from the channel", async () => {
      const p = await fx.payer(10_000_000, 5_000_000);
      const r = await fx.post("/v1/videos", p.key, {
        model: "sora-2",
        prompt: "a paper boat on a river",
        seconds: "8",
        size: "720x1280",
      });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ object: "video", status: "queued", progress: 0, model: "sora-2", seconds: "8" });
      const id = r.body.id;
      expect(up.seen.at(-1)).toMatchObject({
        method: "POST",
        path: "/v1/videos",
        authorization: "Bearer sk-video-upstream",
        body: { seconds: "8", size: "720x1280" },
      });
      expect(await fx.balances(p.userId, p.tokenId, channelId)).toMatchObject({
        quota: 10_000_000 - 8 * PER_SECOND,
        remain: 5_000_000 - 8 * PER_SECOND,
      });
      const consume = (await logsOf(fx, p.userId)).filter((l) => l.type === LOG_TYPE.consume);
      expect(consume.map((l) => [l.model_name, Number(l.quota)])).toEqual([["sora-2", 8 * PER_SECOND]]);

      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        up.advance();
        await fx.round();
        const v = (await fx.get(`/v1/videos/${id}`, p.key)).body;
        seen.push(`${v.status} ${v.progress}`);
      }
      expect(seen).toEqual(["in_progress 30", "in_progress 70", "completed 100"]);
      const content = await fx.get(`/v1/videos/${id}/content`, p.key);
      expect(content.status).toBe(200);
      expect(content.res.headers.get("content-type")).toBe("video/mp4");
      expect(new Uint8Array(await content.res.arrayBuffer())).toEqual(VIDEO_BYTES);
      const listed = (await fx.ctx.request("GET", `/api/task/self?task_id=${id}`, { as: p.session })).body.data[0];
      expect(listed).toMatchObject({
        platform: "openai",
        action: "VIDEO",
        status: "SUCCESS",
        progress: "100%",
        quota: 8 * PER_SECOND,
      });
      expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(10_000_000 - 8 * PER_SECOND);
    });

    test("a task new-api left in flight is polled by the upstream id in its private_data, not by new-api's own task_id", async () => {
      const p = await fx.payer(10_000_000);
      const r = await fx.post("/v1/videos", p.key, { model: "sora-2", prompt: "a lighthouse", seconds: "4" });
      const upstreamId = r.body.id;
      // The row as new-api keeps it: its own public id, the upstream's in private_data.
      await fx.ctx.deps.db
        .updateTable("tasks")
        .set({ task_id: "task_newapi_left_1", private_data: JSON.stringify({ upstream_task_id: upstreamId }) })
        .where("task_id", "=", upstreamId)
        .execute();
      up.advance();
      await fx.round();
      expect(up.seen.some((s) => s.method === "GET" && s.path === `/v1/videos/${upstreamId}`)).toBe(true);
      expect(up.seen.some((s) => s.path.includes("task_newapi_left_1"))).toBe(false);
      const row = await fx.ctx.deps.db
        .selectFrom("tasks")
        .select(["status", "progress"])
        .where("task_id", "=", "task_newapi_left_1")
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ status: "IN_PROGRESS", progress: "30%" });
    });

    test("a failed video is refunded and shows as failed with its reason; the default length is 4 s", async () => {
      const p = await fx.payer(10_000_000);
      const r = await fx.post("/v1/videos", p.key, { model: "my-sora", prompt: "this will fail" });
      expect(up.seen.at(-1)!.body).toMatchObject({ model: "sora-2", seconds: "4" });
      expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(10_000_000 - 4 * PER_SECOND);
      up.advance(3);
      await fx.round();
      const v = (await fx.get(`/v1/videos/${r.body.id}`, p.key)).body;
      expect(v).toMatchObject({ status: "failed", error: { message: "the prompt was blocked" } });
      expect(await fx.balances(p.userId, p.tokenId, channelId)).toMatchObject({ quota: 10_000_000, userUsed: 0 });
    });
  });
}

describe("OpenAI video routes [sqlite]", () => {
  let fx: TaskFixture;
  let up: VideoMock;
  beforeAll(async () => {
    fx = await taskFixture("sqlite");
    up = startVideoMock();
    await fx.channel({ type: 1, key: "sk-video-upstream", base_url: up.url, models: ["sora-2"] });
  });
  afterAll(async () => {
    await up.stop();
    await fx.close();
  });

  test("multipart requests (a reference image) pass through as multipart", async () => {
    const p = await fx.payer(10_000_000);
    const form = new FormData();
    form.append("model", "sora-2");
    form.append("prompt", "animate this");
    form.append("seconds", "12");
    form.append("input_reference", new Blob([new Uint8Array([137, 80, 78, 71])], { type: "image/png" }), "ref.png");
    const res = await fx.ctx.app.handle(
      new Request("http://localhost/v1/videos", {
        method: "POST",
        headers: { authorization: `Bearer ${p.key}` },
        body: form,
      }),
    );
    expect(res.status).toBe(200);
    const last = up.seen.at(-1)!;
    expect(last.contentType).toContain("multipart/form-data");
    expect(last.body.seconds).toBe("12");
    expect(last.body.input_reference).toBeInstanceOf(Blob);
    expect((await fx.balances(p.userId, p.tokenId, 1)).quota).toBe(10_000_000 - 12 * PER_SECOND);
  });

  test("another user's video is not found; bad lengths are refused before the upstream", async () => {
    const alice = await fx.payer(10_000_000);
    const bob = await fx.payer(10_000_000);
    const id = (await fx.post("/v1/videos", alice.key, { model: "sora-2", prompt: "mine" })).body.id;
    const other = await fx.get(`/v1/videos/${id}`, bob.key);
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe("video_not_found");
    expect((await fx.get(`/v1/videos/${id}/content`, bob.key)).status).toBe(404);
    const n = up.seen.length;
    const bad = await fx.post("/v1/videos", alice.key, { model: "sora-2", prompt: "x", seconds: "600" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain("seconds");
    expect((await fx.post("/v1/videos", alice.key, { model: "sora-2" })).status).toBe(400);
    expect(up.seen.length).toBe(n);
  });
});
