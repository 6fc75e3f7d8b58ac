// The Suno relay (channel type 36): /suno/submit/{music,lyrics} billed per task (suno_music, suno_lyrics)
// when the upstream takes it, rows in `tasks` with platform suno moving through the spec's statuses with a
// rising progress, /suno/fetch and /suno/fetch/{id} answering from those rows, failures refunded, and
// users reaching only their own tasks.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { logsOf } from "./fixtures.ts";
import { PRICE_UNIT, taskFixture, type TaskFixture } from "./task-fixtures.ts";
import { startSunoMock, type SunoMock } from "../mocks/suno-upstream.ts";
import { SUNO_MODELS } from "../../server/catalogue/tasks.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";

const MUSIC = 0.1 * PRICE_UNIT;
const LYRICS = 0.01 * PRICE_UNIT;
const KEY = "suno-key-123456";

const taskRow = (fx: TaskFixture, id: string) =>
  fx.ctx.deps.db.selectFrom("tasks").selectAll().where("task_id", "=", id).executeTakeFirstOrThrow();

for (const kind of storageKinds()) {
  describe(`Suno tasks [${kind}]`, () => {
    let fx: TaskFixture;
    let suno: SunoMock;
    let channelId: number;
    beforeAll(async () => {
      fx = await taskFixture(kind);
      suno = startSunoMock({ key: KEY });
      channelId = await fx.channel({ type: 36, key: KEY, base_url: suno.url, models: [...SUNO_MODELS] });
    });
    afterAll(async () => {
      await suno.stop();
      await fx.close();
    });

    test("music: billed suno_music when taken; SUBMITTED → QUEUED → IN_PROGRESS 40% → 70% → SUCCESS 100% with its clips", async () => {
      const p = await fx.payer(10_000_000, 5_000_000);
      const r = await fx.post("/suno/submit/music", p.key, { prompt: "a sea shanty", tags: "folk" });
      expect(r.status).toBe(200);
      expect(r.body.code).toBe("success");
      const id = r.body.data;
      expect(suno.seen.at(-1)).toMatchObject({
        path: "/suno/submit/music",
        authorization: `Bearer ${KEY}`,
        body: { prompt: "a sea shanty", mv: "chirp-v3-0" },
      });
      expect(await taskRow(fx, id)).toMatchObject({
        platform: "suno",
        action: "MUSIC",
        status: "SUBMITTED",
        progress: "0%",
        user_id: p.userId,
        channel_id: channelId,
      });
      expect(await fx.balances(p.userId, p.tokenId, channelId)).toMatchObject({
        quota: 10_000_000 - MUSIC,
        remain: 5_000_000 - MUSIC,
        userUsed: MUSIC,
      });
      const seen: string[] = [];
      for (let i = 0; i < 4; i++) {
        suno.advance();
        await fx.round();
        const row = await taskRow(fx, id);
        seen.push(`${row.status} ${row.progress}`);
      }
      expect(seen).toEqual(["QUEUED 20%", "IN_PROGRESS 40%", "IN_PROGRESS 70%", "SUCCESS 100%"]);
      const row = await taskRow(fx, id);
      expect(Number(row.finish_time)).toBeGreaterThan(0);
      expect(JSON.parse(row.data).map((c: any) => c.audio_url)).toEqual([
        `${suno.url}/audio/${id}-1.mp3`,
        `${suno.url}/audio/${id}-2.mp3`,
      ]);
      const one = await fx.get(`/suno/fetch/${id}`, p.key);
      expect(one.body).toMatchObject({
        code: "success",
        data: { task_id: id, action: "MUSIC", status: "SUCCESS", progress: "100%" },
      });
      expect(one.body.data.data).toHaveLength(2);
      const many = await fx.post("/suno/fetch", p.key, { ids: [id, "unknown"] });
      expect(many.body.data.map((t: any) => t.task_id)).toEqual([id]);
      expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(10_000_000 - MUSIC);
    });

    test("a failed song is refunded once; a refused submit costs nothing; lyrics need a prompt", async () => {
      const p = await fx.payer(2_000_000, 1_000_000);
      const id = (await fx.post("/suno/submit/lyrics", p.key, { prompt: "words that fail" })).body.data;
      expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(2_000_000 - LYRICS);
      suno.advance(4);
      await fx.round();
      await fx.round();
      expect(await taskRow(fx, id)).toMatchObject({
        action: "LYRICS",
        status: "FAILURE",
        progress: "100%",
        fail_reason: "the lyrics were refused",
      });
      expect(await fx.balances(p.userId, p.tokenId, channelId)).toEqual({
        quota: 2_000_000,
        userUsed: 0,
        remain: 1_000_000,
        tokenUsed: 0,
        channelUsed: expect.any(Number),
      });
      expect(
        (await logsOf(fx, p.userId))
          .filter((l) => l.type === LOG_TYPE.system)
          .map((l) => [l.model_name, Number(l.quota)]),
      ).toEqual([["suno_lyrics", LYRICS]]);

      const empty = await fx.post("/suno/submit/lyrics", p.key, {});
      expect(empty.status).toBe(400);
      expect(empty.body).toMatchObject({ code: "prompt_empty", data: null });
      expect((await fx.post("/suno/submit/video", p.key, { prompt: "x" })).body.code).toBe("invalid_action");
      suno.options.refuse = { message: "daily limit reached" };
      const refused = await fx.post("/suno/submit/music", p.key, { prompt: "more" });
      suno.options.refuse = undefined;
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: "fail_to_submit", message: "daily limit reached", data: null });
      expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(2_000_000);
    });

    test("TaskEnabled off refuses new submits and charges nothing; on again, they are taken", async () => {
      const p = await fx.payer(2_000_000, 1_000_000);
      await fx.ctx.deps.options.set("TaskEnabled", "false");
      try {
        const off = await fx.post("/suno/submit/music", p.key, { prompt: "quiet, please" });
        expect(off.status).toBe(403);
        expect(JSON.stringify(off.body)).toContain("TaskEnabled");
        expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(2_000_000);
      } finally {
        await fx.ctx.deps.options.set("TaskEnabled", "true");
      }
      expect((await fx.post("/suno/submit/music", p.key, { prompt: "now" })).status).toBe(200);
    });

    test("the task lists show every field of a creative task with the same JSON types, never private_data", async () => {
      const p = await fx.payer(1_000_000);
      const id = (await fx.post("/suno/submit/music", p.key, { prompt: "listed" })).body.data;
      const self = await fx.ctx.request("GET", "/api/task/self", { as: p.session });
      const item = self.body.data.find((t: any) => t.task_id === id);
      expect(Object.keys(item).sort()).toEqual([
        "action",
        "channel_id",
        "created_at",
        "data",
        "fail_reason",
        "finish_time",
        "id",
        "platform",
        "progress",
        "properties",
        "quota",
        "start_time",
        "status",
        "submit_time",
        "task_id",
        "updated_at",
        "user_id",
      ]);
      expect(item).toMatchObject({
        platform: "suno",
        action: "MUSIC",
        status: "SUBMITTED",
        channel_id: 0,
        quota: MUSIC,
        properties: { input: "listed" },
        data: null,
      });
      for (const k of ["id", "created_at", "submit_time", "finish_time", "quota"])
        expect(typeof item[k]).toBe("number");
      expect(JSON.stringify(self.body)).not.toContain("token_limited");
    });
  });
}

describe("Suno tasks belong to their user [sqlite]", () => {
  let fx: TaskFixture;
  let suno: SunoMock;
  beforeAll(async () => {
    fx = await taskFixture("sqlite");
    suno = startSunoMock({ key: KEY });
    await fx.channel({ type: 36, key: KEY, base_url: suno.url, models: [...SUNO_MODELS] });
  });
  afterAll(async () => {
    await suno.stop();
    await fx.close();
  });

  test("another user cannot read a task by id or in a list", async () => {
    const alice = await fx.payer(1_000_000);
    const bob = await fx.payer(1_000_000);
    const id = (await fx.post("/suno/submit/music", alice.key, { prompt: "mine" })).body.data;
    const one = await fx.get(`/suno/fetch/${id}`, bob.key);
    expect(one.status).toBe(404);
    expect(one.body).toMatchObject({ code: "task_not_exist", data: null });
    expect((await fx.post("/suno/fetch", bob.key, { ids: [id] })).body).toEqual({
      code: "success",
      message: "",
      data: [],
    });
    expect((await fx.get(`/suno/fetch/${id}`, alice.key)).body.data.task_id).toBe(id);
  });

  test("continuing a clip goes to the channel of the task it continues, which must be the caller's", async () => {
    const alice = await fx.payer(10_000_000);
    const bob = await fx.payer(10_000_000);
    const first = (
      await fx.ctx.deps.db.selectFrom("channels").select("id").where("type", "=", 36).executeTakeFirstOrThrow()
    ).id;
    const id = (await fx.post("/suno/submit/music", alice.key, { prompt: "part one" })).body.data;
    const other = startSunoMock({ key: KEY });
    const second = await fx.channel({
      type: 36,
      key: KEY,
      base_url: other.url,
      models: [...SUNO_MODELS],
      priority: 50,
    });
    try {
      const next = await fx.post("/suno/submit/music", alice.key, {
        prompt: "part two",
        continue_clip_id: `${id}-clip1`,
        task_id: id,
        continue_at: 30,
      });
      expect(next.body.code).toBe("success");
      expect(
        (
          await fx.ctx.deps.db
            .selectFrom("tasks")
            .select("channel_id")
            .where("task_id", "=", next.body.data)
            .executeTakeFirstOrThrow()
        ).channel_id,
      ).toBe(first);
      expect(other.seen.length).toBe(0);
      const stolen = await fx.post("/suno/submit/music", bob.key, {
        prompt: "x",
        continue_clip_id: `${id}-clip1`,
        task_id: id,
      });
      expect(stolen.status).toBe(400);
      expect(stolen.body.code).toBe("task_not_exist");
    } finally {
      await other.stop();
      await fx.dropChannel(second);
    }
  });

  test("channel test of a Suno channel: an empty fetch with the key; a wrong key fails", async () => {
    const admin = await fx.ctx.user(10);
    const good = (
      await fx.ctx.deps.db.selectFrom("channels").select("id").where("type", "=", 36).executeTakeFirstOrThrow()
    ).id;
    expect((await fx.ctx.request("GET", `/api/channel/test/${good}`, { as: admin })).body.success).toBe(true);
    expect(suno.seen.at(-1)).toMatchObject({ path: "/suno/fetch", body: { ids: [] } });
    const bad = await fx.channel({ type: 36, key: "nope", base_url: suno.url, models: ["suno_music"] });
    expect((await fx.ctx.request("GET", `/api/channel/test/${bad}`, { as: admin })).body.success).toBe(false);
    await fx.dropChannel(bad);
  });
});
