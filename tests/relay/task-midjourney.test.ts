// The midjourney-proxy relay (channel types 2 and 5): submits billed at their action's fixed price when the
// upstream takes them (codes 1, 21, 22), progress brought in by the poller and the notify callback, failures
// refunded to user and token and taken out of every used_quota, once; the drawing options; users reaching
// only their own tasks.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { allowLocalFetches } from "../helpers/outbound.ts";
import { logsOf } from "./fixtures.ts";
import { PRICE_UNIT, taskFixture, type TaskFixture } from "./task-fixtures.ts";
import { startMjMock, TINY_PNG, type MjMock } from "../mocks/midjourney-upstream.ts";
import { MJ_MODELS } from "../../server/catalogue/tasks.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";

const IMAGINE = 0.1 * PRICE_UNIT;
const SECRET = "mj-secret-abcdef";

async function drawingRow(fx: TaskFixture, mjId: string) {
  return fx.ctx.deps.db.selectFrom("midjourneys").selectAll().where("mj_id", "=", mjId).executeTakeFirstOrThrow();
}

for (const kind of storageKinds()) {
  describe(`drawing tasks are paid once and refunded once [${kind}]`, () => {
    let fx: TaskFixture;
    let mj: MjMock;
    let channelId: number;
    beforeAll(async () => {
      fx = await taskFixture(kind);
      mj = startMjMock({ secret: SECRET });
      channelId = await fx.channel({ type: 2, key: SECRET, base_url: mj.url, models: [...MJ_MODELS] });
    });
    afterAll(async () => {
      await mj.stop();
      await fx.close();
    });

    test("imagine: code 1, billed mj_imagine when taken; the poller brings SUBMITTED → IN_PROGRESS → SUCCESS with its image", async () => {
      const p = await fx.payer(10_000_000, 5_000_000);
      const r = await fx.post("/mj/submit/imagine", p.key, { prompt: "a red fox" });
      expect(r.status).toBe(200);
      expect(r.body.code).toBe(1);
      const id = r.body.result;
      expect(mj.seen.at(-1)).toMatchObject({ path: "/mj/submit/imagine", secret: SECRET });
      let row = await drawingRow(fx, id);
      expect(row).toMatchObject({
        user_id: p.userId,
        channel_id: channelId,
        action: "IMAGINE",
        code: 1,
        status: "SUBMITTED",
        progress: "0%",
        prompt: "a red fox",
      });
      expect(Number(row.quota)).toBe(IMAGINE);
      // Paid at once: the charge is in the database before the answer (the row's quota is real money).
      expect(await fx.balances(p.userId, p.tokenId, channelId)).toMatchObject({
        quota: 10_000_000 - IMAGINE,
        userUsed: IMAGINE,
        remain: 5_000_000 - IMAGINE,
        tokenUsed: IMAGINE,
      });
      const consume = (await logsOf(fx, p.userId)).filter((l) => l.type === LOG_TYPE.consume);
      expect(consume.map((l) => [l.model_name, Number(l.quota)])).toEqual([["mj_imagine", IMAGINE]]);
      expect(JSON.parse(consume[0]!.other).task_id).toBe(id);

      const seen: string[] = [];
      for (let i = 0; i < 4; i++) {
        mj.advance();
        await fx.round();
        row = await drawingRow(fx, id);
        seen.push(`${row.status} ${row.progress}`);
      }
      expect(seen).toEqual(["IN_PROGRESS 25%", "IN_PROGRESS 60%", "SUCCESS 100%", "SUCCESS 100%"]);
      expect(row.image_url).toBe(`${mj.url}/img/${id}.png`);
      expect(Number(row.finish_time)).toBeGreaterThan(0);
      expect(row.prompt_en).toBe("a red fox (en)");
      const f = await fx.get(`/mj/task/${id}/fetch`, p.key);
      expect(f.body).toMatchObject({
        id,
        action: "IMAGINE",
        status: "SUCCESS",
        progress: "100%",
        imageUrl: `${mj.url}/img/${id}.png`,
        prompt: "a red fox",
      });
      expect(f.body.buttons[0].customId).toContain("upsample");
      // Success costs exactly the price: nothing refunded.
      expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(10_000_000 - IMAGINE);
    });

    test("a task that ends in FAILURE is refunded to user and token, out of every used_quota, with a log, once", async () => {
      const p = await fx.payer(10_000_000, 5_000_000);
      const before = await fx.balances(p.userId, p.tokenId, channelId);
      const id = (await fx.post("/mj/submit/imagine", p.key, { prompt: "please fail" })).body.result;
      expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(10_000_000 - IMAGINE);
      mj.advance(3);
      await fx.round();
      await fx.round();
      const row = await drawingRow(fx, id);
      expect(row).toMatchObject({
        status: "FAILURE",
        progress: "100%",
        fail_reason: "the prompt was refused by the moderators",
      });
      const after = await fx.balances(p.userId, p.tokenId, channelId);
      expect(after).toEqual({ ...before, quota: 10_000_000, userUsed: 0, remain: 5_000_000, tokenUsed: 0 });
      const refunds = (await logsOf(fx, p.userId)).filter((l) => l.type === LOG_TYPE.system);
      expect(refunds.map((l) => [l.model_name, Number(l.quota), JSON.parse(l.other).task_id])).toEqual([
        ["mj_imagine", IMAGINE, id],
      ]);
    });

    test("a submit the upstream refuses (code 24) costs nothing and is logged as a failed drawing", async () => {
      const p = await fx.payer(1_000_000, 1_000_000);
      const r = await fx.post("/mj/submit/imagine", p.key, { prompt: "something banned" });
      expect(r.status).toBe(200);
      expect(r.body.code).toBe(24);
      const rows = await fx.ctx.deps.db.selectFrom("midjourneys").selectAll().where("user_id", "=", p.userId).execute();
      expect(rows.map((x) => [x.code, x.status, Number(x.quota), x.fail_reason])).toEqual([
        [24, "FAILURE", 0, "may contain sensitive words"],
      ]);
      expect(await fx.balances(p.userId, p.tokenId, channelId)).toMatchObject({
        quota: 1_000_000,
        remain: 1_000_000,
        userUsed: 0,
      });
      expect((await logsOf(fx, p.userId)).filter((l) => l.type === LOG_TYPE.consume)).toEqual([]);
    });

    test("lists show every field of a drawing task with the same JSON types, and never private_data", async () => {
      const p = await fx.payer(1_000_000);
      const id = (await fx.post("/mj/submit/imagine", p.key, { prompt: "a list entry" })).body.result;
      const self = await fx.ctx.request("GET", "/api/mj/self", { as: p.session });
      const item = self.body.data.find((x: any) => x.mj_id === id);
      expect(Object.keys(item).sort()).toEqual([
        "action",
        "buttons",
        "channel_id",
        "code",
        "created_at",
        "description",
        "fail_reason",
        "finish_time",
        "id",
        "image_url",
        "mj_id",
        "progress",
        "prompt",
        "prompt_en",
        "properties",
        "quota",
        "start_time",
        "state",
        "status",
        "submit_time",
        "user_id",
      ]);
      const types = Object.fromEntries(Object.entries(item).map(([k, v]) => [k, typeof v]));
      expect(types).toMatchObject({
        id: "number",
        code: "number",
        submit_time: "number",
        finish_time: "number",
        quota: "number",
        created_at: "number",
        channel_id: "number",
        prompt_en: "string",
        image_url: "string",
        fail_reason: "string",
      });
      expect(JSON.stringify(self.body)).not.toContain("token_id");
    });
  });
}

describe("midjourney-proxy routes and drawing options [sqlite]", () => {
  let fx: TaskFixture;
  let mj: MjMock;
  let channelId: number;
  let alice: Awaited<ReturnType<TaskFixture["payer"]>>;
  let bob: Awaited<ReturnType<TaskFixture["payer"]>>;
  beforeAll(async () => {
    fx = await taskFixture("sqlite");
    mj = startMjMock({ secret: SECRET });
    channelId = await fx.channel({ type: 5, key: SECRET, base_url: mj.url, models: [...MJ_MODELS] });
    alice = await fx.payer(50_000_000);
    bob = await fx.payer(50_000_000);
  });
  afterAll(async () => {
    await mj.stop();
    await fx.close();
  });
  const imagine = async (
    prompt: string,
    key = alice.key,
    headers: Record<string, string> = {},
    path = "/mj/submit/imagine",
  ) => fx.post(path, key, { prompt }, headers);
  const finish = async () => {
    mj.advance(3);
    await fx.round();
  };

  test("the mj-api-secret header is a key too; no key is 401 in midjourney-proxy's shape", async () => {
    const r = await fx.post("/mj/submit/imagine", null, { prompt: "cat" }, { "mj-api-secret": alice.key });
    expect(r.body.code).toBe(1);
    const none = await fx.post("/mj/submit/imagine", null, { prompt: "cat" });
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ code: 4 });
    expect(typeof none.body.description).toBe("string");
  });

  test("a user reaches only their own tasks: fetch, list-by-condition, image-seed and actions on another's task fail", async () => {
    const id = (await imagine("alice's cat")).body.result;
    await finish();
    expect((await fx.get(`/mj/task/${id}/fetch`, alice.key)).body.id).toBe(id);
    const other = await fx.get(`/mj/task/${id}/fetch`, bob.key);
    expect(other.status).toBe(404);
    expect(other.body.code).toBe(4);
    expect((await fx.post("/mj/task/list-by-condition", bob.key, { ids: [id] })).body).toEqual([]);
    expect(
      (await fx.post("/mj/task/list-by-condition", alice.key, { ids: [id, "nope"] })).body.map((x: any) => x.id),
    ).toEqual([id]);
    expect((await fx.get(`/mj/task/${id}/image-seed`, bob.key)).status).toBe(404);
    expect((await fx.get(`/mj/task/${id}/image-seed`, alice.key)).body).toMatchObject({
      code: 1,
      result: `seed-${id}`,
    });
    const change = await fx.post("/mj/submit/change", bob.key, { taskId: id, action: "UPSCALE", index: 1 });
    expect(change.status).toBe(404);
    const self = await fx.ctx.request("GET", "/api/mj/self", { as: bob.session });
    expect(self.body.data.map((x: any) => x.mj_id)).not.toContain(id);
  });

  test("actions on a task: billed at their own price, sent to the channel that made it, refused before it succeeded (MjActionCheckSuccessEnabled)", async () => {
    const other = await fx.channel({ type: 5, key: SECRET, base_url: mj.url, models: [...MJ_MODELS], priority: 10 });
    const id = (await imagine("a castle")).body.result;
    const early = await fx.post("/mj/submit/change", alice.key, { taskId: id, action: "UPSCALE", index: 2 });
    expect(early.status).toBe(400);
    expect(early.body.description).toContain("has not succeeded");
    await finish();
    const before = (await fx.balances(alice.userId, alice.tokenId, channelId)).quota;
    const up = await fx.post("/mj/submit/change", alice.key, { taskId: id, action: "UPSCALE", index: 2 });
    expect(up.body.code).toBe(1);
    const row = await drawingRow(fx, up.body.result);
    expect(row).toMatchObject({
      action: "UPSCALE",
      channel_id: (await drawingRow(fx, id)).channel_id,
      prompt: "a castle",
    });
    expect((await fx.balances(alice.userId, alice.tokenId, channelId)).quota).toBe(before - 0.05 * PRICE_UNIT);
    // simple-change and Plus buttons name their action differently.
    expect(
      (
        await drawingRow(
          fx,
          (
            await fx.post("/mj/submit/simple-change", alice.key, { content: `${id} V3` })
          ).body.result,
        )
      ).action,
    ).toBe("VARIATION");
    expect(
      (
        await drawingRow(
          fx,
          (
            await fx.post("/mj/submit/action", alice.key, { taskId: id, customId: `MJ::JOB::reroll::0::${id}::SOLO` })
          ).body.result,
        )
      ).action,
    ).toBe("REROLL");
    await fx.option("MjActionCheckSuccessEnabled", "false");
    const pending = (await imagine("a second castle")).body.result;
    expect(
      (await fx.post("/mj/submit/change", alice.key, { taskId: pending, action: "VARIATION", index: 1 })).body.code,
    ).toBe(1);
    await fx.option("MjActionCheckSuccessEnabled", "true");
    await fx.dropChannel(other);
  });

  test("codes 21 and 22 mean taken: billed and answered as code 1; a finished code 21 task is SUCCESS at once", async () => {
    const q = await imagine("queued please");
    expect(q.body.code).toBe(1);
    expect(await drawingRow(fx, q.body.result)).toMatchObject({ code: 22, status: "SUBMITTED" });
    const e = await imagine("exists already");
    expect(e.body.code).toBe(1);
    const row = await drawingRow(fx, e.body.result);
    expect(row).toMatchObject({
      code: 21,
      status: "SUCCESS",
      progress: "100%",
      image_url: `${mj.url}/img/${e.body.result}.png`,
    });
    expect(Number(row.quota)).toBe(IMAGINE);
  });

  test("upload-discord-images: billed mj_upload, done at once, the links as its result", async () => {
    const r = await fx.post("/mj/submit/upload-discord-images", alice.key, {
      base64Array: ["data:image/png;base64,AAAA"],
    });
    expect(r.body).toMatchObject({ code: 1, result: [`${mj.url}/img/upload.png`] });
    const row = await fx.ctx.deps.db
      .selectFrom("midjourneys")
      .selectAll()
      .where("action", "=", "UPLOAD")
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: "SUCCESS", progress: "100%", quota: 0.05 * PRICE_UNIT });
  });

  test("bad requests are refused before the upstream, in midjourney-proxy's shape", async () => {
    const n = mj.seen.length;
    expect((await fx.post("/mj/submit/imagine", alice.key, { prompt: "" })).body).toMatchObject({
      code: 4,
      description: "prompt is required",
    });
    expect((await fx.post("/mj/submit/simple-change", alice.key, { content: "123 X9" })).status).toBe(400);
    expect(
      (await fx.post("/mj/submit/action", alice.key, { taskId: "1", customId: "MJ::JOB::nonsense::1" })).status,
    ).toBe(400);
    expect((await fx.post("/mj/insight-face/swap", alice.key, { sourceBase64: "x" })).status).toBe(400);
    expect(mj.seen.length).toBe(n);
  });

  test("DrawingEnabled off refuses drawing submits", async () => {
    await fx.option("DrawingEnabled", "false");
    const r = await imagine("cat");
    expect(r.status).toBe(403);
    expect(r.body.code).toBe(4);
    await fx.option("DrawingEnabled", "true");
  });

  test("MjAccountFilterEnabled decides whether accountFilter reaches the upstream", async () => {
    await fx.post("/mj/submit/imagine", alice.key, { prompt: "cat", accountFilter: { channelId: "9" } });
    expect(mj.seen.at(-1)!.body.accountFilter).toBeUndefined();
    await fx.option("MjAccountFilterEnabled", "true");
    await fx.post("/mj/submit/imagine", alice.key, { prompt: "cat", accountFilter: { channelId: "9" } });
    expect(mj.seen.at(-1)!.body.accountFilter).toEqual({ channelId: "9" });
    await fx.option("MjAccountFilterEnabled", "false");
  });

  test("a mode prefix picks the upstream's mode path; MjModeClearEnabled drops it and strips --fast/--relax/--turbo", async () => {
    const r = await imagine("cat --relax", alice.key, {}, "/fast/mj/submit/imagine");
    expect(r.body.code).toBe(1);
    expect(mj.seen.at(-1)).toMatchObject({ path: "/mj-fast/mj/submit/imagine", body: { prompt: "cat --relax" } });
    expect((await fx.get(`/turbo/mj/task/${r.body.result}/fetch`, alice.key)).body.id).toBe(r.body.result);
    await fx.option("MjModeClearEnabled", "true");
    await imagine("cat --relax --v 6 --turbo", alice.key, {}, "/fast/mj/submit/imagine");
    expect(mj.seen.at(-1)).toMatchObject({ path: "/mj/submit/imagine", body: { prompt: "cat --v 6" } });
    await fx.option("MjModeClearEnabled", "false");
    expect((await fx.post("/slow/mj/submit/imagine", alice.key, { prompt: "cat" })).status).toBe(404);
  });

  test("MjForwardUrlEnabled: image links go through ServerAddress/mj/image/{id}, signed; the proxy serves the image", async () => {
    const id = (await imagine("forwarded")).body.result;
    await finish();
    await fx.option("ServerAddress", "https://gw.example");
    await fx.option("MjForwardUrlEnabled", "true");
    const f = (await fx.get(`/mj/task/${id}/fetch`, alice.key)).body;
    expect(f.imageUrl).toMatch(new RegExp(`^https://gw\\.example/mj/image/${id}\\?sig=[0-9a-f]{32}$`));
    const list = await fx.ctx.request("GET", `/api/mj/self?mj_id=${id}`, { as: alice.session });
    expect(list.body.data[0].image_url).toBe(f.imageUrl);
    const path = f.imageUrl.replace("https://gw.example", "");
    const img = await fx.get(path);
    expect(img.status).toBe(200);
    expect(img.res.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await img.res.arrayBuffer())).toEqual(TINY_PNG);
    expect((await fx.get(`/mj/image/${id}?sig=${"0".repeat(32)}`)).status).toBe(403);
    expect((await fx.get(`/mj/image/${id}`)).status).toBe(403);
    await fx.option("MjForwardUrlEnabled", "false");
    expect((await fx.get(`/mj/task/${id}/fetch`, alice.key)).body.imageUrl).toBe(`${mj.url}/img/${id}.png`);
    await fx.option("ServerAddress", "");
  });

  test("the upstream's notify callback (signed per channel) moves a task on; a forged one is refused", async () => {
    await fx.option("ServerAddress", "https://gw.example");
    const id = (await imagine("notified")).body.result;
    const hook = new URL(mj.tasks.get(id)!.notifyHook);
    expect(hook.origin + hook.pathname).toBe("https://gw.example/mj/notify");
    expect(hook.searchParams.get("channel")).toBe(String(channelId));
    mj.advance(2);
    const r = await fx.post(hook.pathname + hook.search, null, mj.dto(id));
    expect(r.status).toBe(200);
    expect(await drawingRow(fx, id)).toMatchObject({ status: "IN_PROGRESS", progress: "60%" });
    const forged = await fx.post(`/mj/notify?channel=${channelId}&sig=${"a".repeat(32)}`, null, {
      ...mj.dto(id),
      status: "FAILURE",
    });
    expect(forged.status).toBe(403);
    expect((await drawingRow(fx, id)).status).toBe("IN_PROGRESS");
    await fx.option("ServerAddress", "");
  });

  test("MjNotifyEnabled: the client's notifyHook hears each change from the gateway; the upstream never sees it", async () => {
    const heard: any[] = [];
    const hookServer = Bun.serve({
      port: 0,
      async fetch(req) {
        heard.push(await req.json());
        return new Response("ok");
      },
    });
    try {
      await allowLocalFetches(fx.ctx.deps.options);
      const clientHook = `http://127.0.0.1:${hookServer.port}/hook`;
      const quiet = (await fx.post("/mj/submit/imagine", alice.key, { prompt: "quiet", notifyHook: clientHook })).body
        .result;
      await fx.option("MjNotifyEnabled", "true");
      const loud = (await fx.post("/mj/submit/imagine", alice.key, { prompt: "loud", notifyHook: clientHook })).body
        .result;
      expect(mj.seen.some((s) => s.body?.notifyHook === clientHook)).toBe(false);
      const heardAtLeast = async (n: number) => {
        for (let i = 0; i < 100 && heard.length < n; i++) await Bun.sleep(20);
      };
      mj.advance();
      await fx.round();
      await heardAtLeast(1);
      mj.advance(2);
      await fx.round();
      await heardAtLeast(2);
      expect(heard.map((h) => [h.id, h.status, h.progress])).toEqual([
        [loud, "IN_PROGRESS", "25%"],
        [loud, "SUCCESS", "100%"],
      ]);
      expect(heard.some((h) => h.id === quiet)).toBe(false);
    } finally {
      hookServer.stop(true);
      await fx.option("MjNotifyEnabled", "false");
    }
  });

  test("a refused submit is tried on the next channel when the refusal is the upstream's own (queue full)", async () => {
    const busy = startMjMock({ secret: SECRET, refuse: { code: 23, description: "queue is full" } });
    const first = await fx.channel({
      type: 2,
      key: SECRET,
      base_url: busy.url,
      models: ["mj_describe"],
      priority: 100,
    });
    const second = await fx.channel({ type: 2, key: SECRET, base_url: mj.url, models: ["mj_describe"], priority: 0 });
    try {
      const r = await fx.post("/mj/submit/describe", alice.key, { base64: "data:image/png;base64,AAAA" });
      expect(r.body.code).toBe(1);
      expect(busy.seen.filter((s) => s.path === "/mj/submit/describe").length).toBe(1);
      // taken by a channel of the next tier (this one or the suite's, both priority 0), never the busy one
      expect([second, channelId]).toContain((await drawingRow(fx, r.body.result)).channel_id);
    } finally {
      await busy.stop();
      for (const id of [first, second]) await fx.dropChannel(id);
    }
  });

  test("an upstream that refuses every submit: nothing billed, the error in midjourney-proxy's shape", async () => {
    const down = startMjMock({ secret: SECRET, refuse: { status: 500 } });
    // The only channel of the vip group, so no healthy channel takes the retry.
    const only = await fx.channel({ type: 2, key: SECRET, base_url: down.url, models: ["mj_blend"], groups: ["vip"] });
    try {
      const session = await fx.user(1_000_000);
      const token = await fx.token(session.id, { remain_quota: 1_000_000, group: "vip" });
      const p = { userId: session.id, tokenId: token.id };
      const r = await fx.post("/mj/submit/blend", token.key, { base64Array: ["a", "b"] });
      expect(r.status).toBe(500);
      expect(r.body.code).toBe(4);
      expect(r.body.description).not.toContain(SECRET);
      expect(await fx.balances(p.userId, p.tokenId, only)).toMatchObject({ quota: 1_000_000, remain: 1_000_000 });
      expect(down.seen.filter((s) => s.path === "/mj/submit/blend").length).toBe(1);
    } finally {
      await down.stop();
      await fx.dropChannel(only);
    }
  });

  test("a task past the time limit is failed and refunded by the poller", async () => {
    const p = await fx.payer(1_000_000);
    const id = (await imagine("forever", p.key)).body.result;
    await fx.ctx.deps.db
      .updateTable("midjourneys")
      .set({ submit_time: Date.now() - 2 * 3_600_000 })
      .where("mj_id", "=", id)
      .execute();
    await fx.round();
    expect(await drawingRow(fx, id)).toMatchObject({
      status: "FAILURE",
      fail_reason: "the task did not finish within 60 minutes",
    });
    expect((await fx.balances(p.userId, p.tokenId, channelId)).quota).toBe(1_000_000);
  });

  test("a backlog larger than a round is polled in turns, and a channel that does not answer is backed off", async () => {
    const { TaskPoller } = await import("../../server/jobs/task-poller.ts");
    await fx.round();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await imagine(`turn ${i}`)).body.result);
    const small = new TaskPoller(fx.ctx.deps, { intervalMs: 0, timeoutMs: 3_600_000, roundLimit: 2 });
    const asked = () =>
      mj.seen.filter((s) => s.path === "/mj/task/list-by-condition").map((s) => s.body.ids as string[]);
    const before = asked().length;
    mj.advance();
    await small.round();
    await small.round();
    const rounds = asked().slice(before);
    // both rounds together asked about all three new tasks
    expect(ids.every((id) => rounds.flat().includes(id))).toBe(true);
    expect(rounds.every((r) => r.length <= 2)).toBe(true);
    // A channel whose proxy does not answer: asked, skipped for a round, asked again, skipped for two.
    mj.advance(3);
    await fx.round();
    const gone = Bun.serve({ port: 0, fetch: () => new Response("") });
    const deadUrl = `http://127.0.0.1:${gone.port}`;
    gone.stop(true);
    const dead = await fx.channel({
      type: 2,
      key: SECRET,
      base_url: deadUrl,
      models: ["mj_imagine"],
      groups: ["nobody"],
    });
    await fx.ctx.deps.db
      .insertInto("midjourneys")
      .values({
        user_id: alice.userId,
        action: "IMAGINE",
        mj_id: "stuck-1",
        status: "SUBMITTED",
        progress: "0%",
        channel_id: dead,
        submit_time: Date.now(),
        code: 1,
      })
      .execute();
    const reports: number[][] = [];
    for (let i = 0; i < 5; i++) reports.push((await small.round()).failedChannels);
    expect(reports).toEqual([[dead], [], [dead], [], []]);
    await fx.ctx.deps.db.updateTable("midjourneys").set({ status: "FAILURE" }).where("mj_id", "=", "stuck-1").execute();
    await fx.dropChannel(dead);
  });

  test("channel test of a Midjourney channel asks the proxy for an empty task list; a wrong secret fails it", async () => {
    const admin = await fx.ctx.user(10);
    const ok = await fx.ctx.request("GET", `/api/channel/test/${channelId}`, { as: admin });
    expect(ok.body.success).toBe(true);
    expect(mj.seen.at(-1)).toMatchObject({ path: "/mj/task/list-by-condition", body: { ids: [] } });
    const bad = await fx.channel({ type: 2, key: "wrong", base_url: mj.url, models: ["mj_imagine"] });
    const fail = await fx.ctx.request("GET", `/api/channel/test/${bad}`, { as: admin });
    expect(fail.body.success).toBe(false);
    await fx.dropChannel(bad);
  });
});

describe("request bodies of the task routes [sqlite]", () => {
  test("a body over MAX_BODY_BYTES is refused in the route's own error shape, under a mode prefix too", async () => {
    const fx = await taskFixture("sqlite", { maxBodyBytes: 2000 });
    try {
      const p = await fx.payer(1_000_000);
      const big = { prompt: "x".repeat(5000) };
      for (const path of ["/mj/submit/imagine", "/fast/mj/submit/imagine"]) {
        const r = await fx.post(path, p.key, big);
        expect(r.status).toBe(413);
        expect(r.body).toMatchObject({ code: 4 });
      }
      const s = await fx.post("/suno/submit/music", p.key, big);
      expect(s.status).toBe(413);
      expect(s.body).toMatchObject({ code: "request_too_large", data: null });
    } finally {
      await fx.close();
    }
  });
});
