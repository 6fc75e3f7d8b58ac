// Exactly-once settlement with several instances: two more gateway processes poll the same database at the
// same time as this one, while the upstream's notify callbacks arrive too. Every failed task is refunded
// once and only once (one refund log each, balances and every used_quota exact); succeeded tasks keep
// their charge. SQLite (a file shared by processes), and PostgreSQL / MySQL when their DSNs are set.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storageKinds, tempDatabase, type TempDb } from "../helpers/db.ts";
import { BUN, ROOT } from "../helpers/server-process.ts";
import { logsOf } from "./fixtures.ts";
import { PRICE_UNIT, taskFixture, type TaskFixture } from "./task-fixtures.ts";
import { startMjMock, type MjMock } from "../mocks/midjourney-upstream.ts";
import { startSunoMock, type SunoMock } from "../mocks/suno-upstream.ts";
import { MJ_MODELS, SUNO_MODELS } from "../../server/catalogue/tasks.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";

const IMAGINE = 0.1 * PRICE_UNIT;
const MUSIC = 0.1 * PRICE_UNIT;

function runChild(db: TempDb, rounds: number) {
  const where = db.kind === "sqlite" ? db.sqlitePath : db.url;
  const proc = Bun.spawn([BUN, "tests/relay/task-poller-child.ts", db.kind, where, String(rounds)], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  return (async () => {
    const [out, err, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    if (code !== 0) throw new Error(`poller child failed (${code}): ${err}`);
    return out + err;
  })();
}

for (const kind of storageKinds()) {
  describe(`three instances settle each task once [${kind === "sqlite" ? "sqlite file" : kind}]`, () => {
    let dir = "";
    let db: TempDb;
    let fx: TaskFixture;
    let mj: MjMock;
    let suno: SunoMock;
    let mjChannel: number;
    let sunoChannel: number;
    beforeAll(async () => {
      if (kind === "sqlite") {
        dir = mkdtempSync(join(tmpdir(), "sy-tasks-"));
        db = {
          kind,
          url: "",
          sqlitePath: join(dir, "gateway.db"),
          drop: async () => rmSync(dir, { recursive: true, force: true }),
        };
      } else db = await tempDatabase(kind);
      fx = await taskFixture(kind, {}, db);
      mj = startMjMock({ secret: "s" });
      suno = startSunoMock({ key: "k" });
      mjChannel = await fx.channel({ type: 2, key: "s", base_url: mj.url, models: [...MJ_MODELS] });
      sunoChannel = await fx.channel({ type: 36, key: "k", base_url: suno.url, models: [...SUNO_MODELS] });
      await fx.option("ServerAddress", "https://gw.example");
    }, 30_000);
    afterAll(async () => {
      await mj.stop();
      await suno.stop();
      await fx.close();
      await db.drop();
    });

    test("8 drawings and 4 songs, half of them failing: each failure refunded once, whoever polls", async () => {
      const p = await fx.payer(100_000_000, 50_000_000);
      const drawings: string[] = [];
      for (let i = 0; i < 8; i++)
        drawings.push(
          (await fx.post("/mj/submit/imagine", p.key, { prompt: i % 2 ? `picture ${i} fail` : `picture ${i}` })).body
            .result,
        );
      const songs: string[] = [];
      for (let i = 0; i < 4; i++)
        songs.push(
          (await fx.post("/suno/submit/music", p.key, { prompt: i % 2 ? `song ${i} fail` : `song ${i}` })).body.data,
        );
      expect(drawings.every(Boolean) && songs.every(Boolean)).toBe(true);
      const paid = 8 * IMAGINE + 4 * MUSIC;
      expect((await fx.balances(p.userId, p.tokenId, mjChannel)).quota).toBe(100_000_000 - paid);

      mj.advance(3);
      suno.advance(4);
      // Two other processes poll while this one polls too and the upstream calls notify for every drawing.
      const notify = drawings.map((id) => {
        const hook = new URL(mj.tasks.get(id)!.notifyHook);
        return fx.post(hook.pathname + hook.search, null, mj.dto(id));
      });
      const [a, b] = await Promise.all([runChild(db, 3), runChild(db, 3), fx.round(), fx.round(), ...notify]);
      expect(a).toContain("polled");
      expect(b).toContain("polled");
      await fx.round();

      const rows = await fx.ctx.deps.db
        .selectFrom("midjourneys")
        .select(["mj_id", "status"])
        .where("user_id", "=", p.userId)
        .execute();
      expect(rows.filter((r) => r.status === "FAILURE").length).toBe(4);
      expect(rows.filter((r) => r.status === "SUCCESS").length).toBe(4);
      const tasks = await fx.ctx.deps.db
        .selectFrom("tasks")
        .select(["task_id", "status", "progress"])
        .where("user_id", "=", p.userId)
        .execute();
      expect(tasks.map((t) => t.status).sort()).toEqual(["FAILURE", "FAILURE", "SUCCESS", "SUCCESS"]);

      const logs = await logsOf(fx, p.userId);
      const refunds = logs.filter((l) => l.type === LOG_TYPE.system);
      expect(refunds.length).toBe(6);
      expect(new Set(refunds.map((l) => JSON.parse(l.other).task_id)).size).toBe(6);
      expect(logs.filter((l) => l.type === LOG_TYPE.consume).length).toBe(12);
      const kept = 4 * IMAGINE + 2 * MUSIC;
      const mjSide = await fx.balances(p.userId, p.tokenId, mjChannel);
      expect(mjSide).toEqual({
        quota: 100_000_000 - kept,
        userUsed: kept,
        remain: 50_000_000 - kept,
        tokenUsed: kept,
        channelUsed: 4 * IMAGINE,
      });
      expect((await fx.balances(p.userId, p.tokenId, sunoChannel)).channelUsed).toBe(2 * MUSIC);
    }, 60_000);
  });
}
