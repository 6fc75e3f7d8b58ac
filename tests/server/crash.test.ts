// kill -9 under load, then a restart: money is conserved exactly. Every unit that left the user's balance
// and the token's is in a consume log (initial − final == used_quota == sum of the logs), holds of calls that
// were running are refunded on start-up, and every call whose answer came back before the kill is billed and
// logged (the write-behind's journal is replayed at start), except at most the calls in flight at the kill —
// one per client — whose answers may have reached the client just before their settlement ran.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, provision } from "../helpers/server-process.ts";
import { tempDatabase } from "../helpers/db.ts";
import { readBooks } from "../helpers/books.ts";

const INTERVAL_MS = 200;
const MODEL = "gpt-4o-mini";

function upstream() {
  return Bun.serve({
    port: 0,
    async fetch(req) {
      const body = await req.json();
      await Bun.sleep(2 + Math.random() * 8);
      const usage = { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 };
      if (!body.stream) {
        return Response.json({
          id: "c",
          object: "chat.completion",
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: "fine" }, finish_reason: "stop" }],
          usage,
        });
      }
      const frame = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
      return new Response(
        frame({
          id: "c",
          object: "chat.completion.chunk",
          model: body.model,
          choices: [{ index: 0, delta: { content: "fine" }, finish_reason: "stop" }],
          usage,
        }) + "data: [DONE]\n\n",
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  });
}

const kinds: ("sqlite" | "postgres" | "mysql")[] = [
  "sqlite",
  ...(process.env.PG_DSN ? ["postgres" as const] : []),
  ...(process.env.MYSQL_DSN ? ["mysql" as const] : []),
];
const CLIENTS = 24;

describe("kill -9 under load", () => {
  let work: string;
  beforeAll(() => void (work = mkdtempSync(join(tmpdir(), "sy-crash-"))));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  for (const kind of kinds)
    test(`${kind}: after a restart the books balance to the unit`, async () => {
      const up = upstream();
      const db = kind === "sqlite" ? null : await tempDatabase(kind);
      const dataDir = join(work, kind);
      const env: Record<string, string> = {
        BATCH_UPDATE_INTERVAL: String(INTERVAL_MS),
        ...(db ? { SQL_DSN: db.url } : {}),
      };
      let srv = await startServer(dataDir, env);
      try {
        const TOKEN_QUOTA = 50_000_000;
        const p = await provision(srv.base, up.port!, { model: MODEL, remainQuota: TOKEN_QUOTA });
        const initial = await readBooks(db, dataDir, p.userId, p.tokenId);
        expect(initial.tokenRemain).toBe(TOKEN_QUOTA);

        let successes = 0;
        let stop = false;
        const worker = async (i: number) => {
          while (!stop) {
            const res = await fetch(`${srv.base}/v1/chat/completions`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${p.key}` },
              body: JSON.stringify({
                model: MODEL,
                stream: i % 2 === 0,
                messages: [{ role: "user", content: "count me" }],
              }),
            }).catch(() => null);
            if (!res) return;
            const ok =
              res.status === 200
              && (await res.text().then(
                (t) => !t.includes('"error"'),
                () => false,
              ));
            if (ok) successes++;
          }
        };
        const workers = Array.from({ length: CLIENTS }, (_, i) => worker(i));
        await Bun.sleep(1500);
        // What the write-behind had committed when the process died (read, then killed at once).
        const atKill = await readBooks(db, dataDir, p.userId, p.tokenId);
        srv.proc.kill("SIGKILL");
        await srv.proc.exited;
        stop = true;
        await Promise.all(workers);
        expect(successes).toBeGreaterThan(50);

        // The same instance (host, data folder, port) starts again and settles what its previous life left.
        srv = await startServer(dataDir, env, srv.port);
        let after = await readBooks(db, dataDir, p.userId, p.tokenId);
        for (let i = 0; i < 100 && after.holds > 0; i++) {
          await Bun.sleep(50);
          after = await readBooks(db, dataDir, p.userId, p.tokenId);
        }
        expect(after.holds).toBe(0);
        expect(initial.userQuota - after.userQuota).toBe(after.userUsed - initial.userUsed);
        expect(after.userUsed - initial.userUsed).toBe(after.logged);
        expect(TOKEN_QUOTA - after.tokenRemain).toBe(after.tokenUsed);
        expect(after.tokenUsed).toBe(after.logged);
        // Lost: at most the calls in flight when the process died. The write-behind was writing all along (logs
        // were committed before the kill), nothing it had committed is gone, and nothing is counted twice.
        const lost = successes - after.logs;
        expect(lost).toBeGreaterThanOrEqual(0);
        expect(lost).toBeLessThanOrEqual(CLIENTS);
        expect(atKill.logs).toBeGreaterThan(0);
        expect(after.logs).toBeGreaterThanOrEqual(atKill.logs);
      } finally {
        srv.proc.kill("SIGKILL");
        await srv.proc.exited;
        up.stop(true);
        await db?.drop();
      }
    }, 60_000);
});
