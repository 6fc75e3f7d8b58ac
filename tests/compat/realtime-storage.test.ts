// Realtime billing on every configured database: a session keeps one hold, each response.done settles it at
// the audio ratios and takes the next, and a balance that cannot hold the next response ends the session —
// afterwards the balances equal the start minus the logged charges, to the unit, with no hold left behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { storageKinds } from "../helpers/db.ts";
import { relayFixture, logsOf, tokenRow, userRow, type RelayFixture } from "../relay/fixtures.ts";
import { startRealtimeUpstream, type RealtimeMock } from "../mocks/realtime-upstream.ts";

/** RT_USAGE at ratio 1, completion 2, AudioRatio 8, AudioCompletionRatio 2 (see realtime.test.ts). */
const RT_QUOTA = 20 + 20 + 80 * 8 + 30 * 2 + 120 * 8 * 2;
const HOLD = 1024 * 8 * 2;

for (const kind of storageKinds()) {
  describe(`realtime billing on ${kind}`, () => {
    let fx: RelayFixture;
    let up: RealtimeMock;
    let url: string;
    beforeAll(async () => {
      fx = await relayFixture(kind);
      up = startRealtimeUpstream();
      await fx.option("ModelRatio", JSON.stringify({ "rt-store": 1 }));
      await fx.option("CompletionRatio", JSON.stringify({ "rt-store": 2 }));
      await fx.option("AudioRatio", JSON.stringify({ "rt-store": 8 }));
      await fx.option("AudioCompletionRatio", JSON.stringify({ "rt-store": 2 }));
      await fx.channel({ type: 1, key: "sk-rt-channel", base_url: up.url, models: ["rt-store"] });
      const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
      url = `ws://127.0.0.1:${app.server!.port}/v1/realtime?model=rt-store`;
    });
    afterAll(async () => {
      await fx.ctx.app.stop(true);
      up.stop();
      await fx.close();
    });

    /** Opens a session, asks for `responses` responses, and resolves with the event types and the close code. */
    async function session(key: string, responses: number): Promise<{ types: string[]; code: number }> {
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } } as any);
      const types: string[] = [];
      let asked = 0;
      const ask = () => {
        if (asked++ < responses) ws.send(JSON.stringify({ type: "response.create" }));
        else ws.close(1000);
      };
      ws.addEventListener("message", (m) => {
        const ev = JSON.parse(String(m.data));
        types.push(ev.type);
        if (ev.type === "session.created" || ev.type === "response.done") ask();
      });
      const code = await new Promise<number>((resolve) => ws.addEventListener("close", (e) => resolve(e.code)));
      return { types, code };
    }

    test("three responses, three charges, the session's hold returned at the end", async () => {
      const user = await fx.user(5_000_000);
      const token = await fx.token(user.id, { remain_quota: 1_000_000 });
      const { types, code } = await session(token.key, 3);
      expect(code).toBe(1000);
      expect(types.filter((t) => t === "response.done").length).toBe(3);
      await Bun.sleep(50);
      await fx.flush();
      const logs = await logsOf(fx, user.id);
      expect(logs.map((l) => [l.quota, Boolean(l.is_stream)])).toEqual([
        [RT_QUOTA, true],
        [RT_QUOTA, true],
        [RT_QUOTA, true],
      ]);
      expect(Number((await userRow(fx, user.id)).quota)).toBe(5_000_000 - 3 * RT_QUOTA);
      const t = await tokenRow(fx, token.id);
      expect([Number(t.remain_quota), Number(t.used_quota)]).toEqual([1_000_000 - 3 * RT_QUOTA, 3 * RT_QUOTA]);
      if (kind !== "sqlite")
        expect((await fx.ctx.deps.db.selectFrom("quota_holds").selectAll().execute()).length).toBe(0);
    });

    test("a balance that cannot hold the next response ends the session after paying for the last; no event of the client's goes upstream unheld", async () => {
      const user = await fx.user(HOLD + RT_QUOTA - 1);
      const token = await fx.token(user.id, { unlimited_quota: true });
      const sent = up.received.length;
      // The client asks for the next response at once: it waits for the next hold, which fails.
      const { types, code } = await session(token.key, 5);
      expect(code).toBe(1008);
      expect(types.filter((t) => t === "response.done").length).toBe(1);
      expect(types.at(-1)).toBe("error");
      expect(up.received.slice(sent).map((e) => e.type)).toEqual(["response.create"]);
      await Bun.sleep(50);
      await fx.flush();
      expect((await logsOf(fx, user.id)).map((l) => l.quota)).toEqual([RT_QUOTA]);
      expect(Number((await userRow(fx, user.id)).quota)).toBe(HOLD - 1);
      if (kind !== "sqlite")
        expect((await fx.ctx.deps.db.selectFrom("quota_holds").selectAll().execute()).length).toBe(0);
    });
  });
}
