// The database goes away under load and comes back (a TCP proxy of the test's own between a real gateway process
// and PostgreSQL / MariaDB: every connection cut, new ones refused for a while). The process lives through it;
// calls that needed the database meanwhile are answered 503 in their caller's format; once it is back the
// gateway serves again, the holds taken before the outage go back, and the books balance to the unit. The same
// when the server itself ends the gateway's sessions over and over (pg_terminate_backend, MySQL's KILL, on the
// test's own database only), which made postgres.js throw from a callback of its own. A database that stops
// answering does not hold SIGTERM past its grace period.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, provision, type Running } from "../helpers/server-process.ts";
import { tempDatabase, type TempDb } from "../helpers/db.ts";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.ts";
import { readBooks } from "../helpers/books.ts";
import postgres from "postgres";
import { createConnection } from "mysql2/promise";

const MODEL = "gpt-4o-mini";
const kinds = [
  ...(process.env.PG_DSN ? ["postgres" as const] : []),
  ...(process.env.MYSQL_DSN ? ["mysql" as const] : []),
];

function upstream() {
  return Bun.serve({
    port: 0,
    async fetch(req) {
      const body = await req.json();
      await Bun.sleep(2);
      return Response.json({
        id: "c",
        object: "chat.completion",
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: "fine" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
      });
    },
  });
}

const rand = () => Math.random().toString(36).slice(2, 12);

/** Calls that must read the database (a key never seen, a console session), one per caller format. */
async function needDatabase(base: string, cookie: Record<string, string>) {
  const body = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 5 });
  const json = { "content-type": "application/json" };
  const openai = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { ...json, authorization: `Bearer sk-${rand()}` },
    body,
  });
  const claude = await fetch(`${base}/v1/messages`, {
    method: "POST",
    headers: { ...json, "x-api-key": `sk-${rand()}`, "anthropic-version": "2023-06-01" },
    body,
  });
  const gemini = await fetch(`${base}/v1beta/models/${MODEL}:generateContent?key=sk-${rand()}`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] }),
  });
  const api = await fetch(`${base}/api/token/?p=0`, { headers: cookie });
  return {
    openai: { status: openai.status, body: await openai.json() },
    claude: { status: claude.status, body: await claude.json() },
    gemini: { status: gemini.status, body: await gemini.json() },
    api: { status: api.status, body: await api.json() },
  };
}

async function login(base: string): Promise<Record<string, string>> {
  const res = await fetch(`${base}/api/user/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "root", password: "rootpass123" }),
  });
  const user = (await res.json()).data;
  return { cookie: (res.headers.get("set-cookie") ?? "").split(";")[0], "New-Api-User": String(user.id) };
}

describe("the database lost under load", () => {
  let work: string;
  beforeAll(() => void (work = mkdtempSync(join(tmpdir(), "sy-dbout-"))));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  for (const kind of kinds)
    test(`${kind}: the process lives, calls answer 503 in their format, the books balance after`, async () => {
      const up = upstream();
      const db: TempDb = await tempDatabase(kind);
      const target = new URL(db.url);
      const proxy: TcpProxy = startTcpProxy(target.hostname, Number(target.port));
      const via = new URL(db.url);
      via.port = String(proxy.port);
      const dataDir = join(work, kind);
      let srv: Running | undefined;
      try {
        srv = await startServer(dataDir, {
          SQL_DSN: via.toString(),
          BATCH_UPDATE_INTERVAL: "200",
          SQL_CONNECT_TIMEOUT_MS: "1000",
          SQL_QUERY_TIMEOUT_MS: "2000",
        });
        const base = srv.base;
        const TOKEN_QUOTA = 50_000_000;
        const p = await provision(base, up.port!, { model: MODEL, remainQuota: TOKEN_QUOTA });
        const cookie = await login(base);
        const initial = await readBooks(db, dataDir, p.userId, p.tokenId);

        const statuses = new Map<number, number>();
        const badBodies: string[] = [];
        let served = 0;
        let stop = false;
        const worker = async () => {
          while (!stop) {
            const res = await fetch(`${base}/v1/chat/completions`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${p.key}` },
              body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "count me" }] }),
            });
            const text = await res.text();
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (res.status === 200) served++;
            else if (res.status !== 503 || !JSON.parse(text)?.error?.message)
              badBodies.push(`${res.status} ${text.slice(0, 200)}`);
          }
        };
        const workers = Array.from({ length: 8 }, worker);
        await Bun.sleep(800);

        proxy.refuse(true);
        proxy.cut();
        await Bun.sleep(300);
        const during = await needDatabase(base, cookie);
        await Bun.sleep(1200);
        proxy.refuse(false);
        // Back: serving again (bounded: the connect bound is 1 s and the pools reconnect on their own).
        let again = 0;
        for (let i = 0; i < 100 && again < 20; i++) {
          const before = served;
          await Bun.sleep(100);
          again += served - before;
        }
        stop = true;
        await Promise.all(workers);

        expect(srv.proc.exitCode).toBeNull();
        expect(srv.output()).not.toContain("uncaught error");
        expect(srv.output()).not.toContain("unhandled rejection");
        if (badBodies.length)
          console.log(
            srv
              .output()
              .split("\n")
              .filter((l) => !/^\s+at /.test(l))
              .slice(-60)
              .join("\n"),
          );
        expect(badBodies).toEqual([]);
        expect(again).toBeGreaterThanOrEqual(20);

        expect(during.openai.status).toBe(503);
        expect(during.openai.body.error.type).toBe("server_error");
        expect(during.openai.body.error.message).toContain("database");
        expect(during.claude.status).toBe(503);
        expect(during.claude.body).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
        expect(during.gemini.status).toBe(503);
        expect(during.gemini.body.error).toMatchObject({ code: 503, status: "UNAVAILABLE" });
        expect(during.api.status).toBe(503);
        expect(during.api.body).toEqual({ success: false, message: expect.stringContaining("database") });

        // The holds of the outage go back while the process runs (idle leases), and every unit that left the
        // balances is in a log.
        let after = await readBooks(db, dataDir, p.userId, p.tokenId);
        for (let i = 0; i < 150 && (after.holds > 0 || after.logs < served); i++) {
          await Bun.sleep(100);
          after = await readBooks(db, dataDir, p.userId, p.tokenId);
        }
        expect(after.holds).toBe(0);
        expect(after.logs).toBe(served);
        expect(initial.userQuota - after.userQuota).toBe(after.userUsed - initial.userUsed);
        expect(after.userUsed - initial.userUsed).toBe(after.logged);
        expect(TOKEN_QUOTA - after.tokenRemain).toBe(after.tokenUsed);
        expect(after.tokenUsed).toBe(after.logged);
      } finally {
        if (srv && srv.proc.exitCode === null) {
          srv.proc.kill("SIGKILL");
          await srv.proc.exited;
        }
        proxy.stop();
        up.stop(true);
        await db.drop();
      }
    }, 60_000);

  for (const kind of kinds)
    test(`${kind}: the gateway's own sessions killed again and again under load (${kind === "postgres" ? "pg_terminate_backend" : "KILL"}): it lives, serves, and the books balance`, async () => {
      const up = upstream();
      const db: TempDb = await tempDatabase(kind);
      const name = new URL(db.url).pathname.slice(1);
      const dataDir = join(work, `${kind}-kill`);
      let srv: Running | undefined;
      // Only this test's database's sessions: the gateway's, never another test's.
      const killAll = async () => {
        if (kind === "postgres") {
          const admin = postgres(process.env.PG_DSN!, { max: 1, onnotice: () => {} });
          try {
            return (
              await admin.unsafe(
                `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}' and pid <> pg_backend_pid()`,
              )
            ).length;
          } finally {
            await admin.end();
          }
        }
        const admin = await createConnection(process.env.MYSQL_DSN!);
        try {
          const [rows] = (await admin.query(`select id from information_schema.processlist where db = ?`, [
            name,
          ])) as any;
          for (const r of rows) await admin.query(`kill ${Number(r.id)}`).catch(() => {});
          return rows.length as number;
        } finally {
          await admin.end();
        }
      };
      try {
        srv = await startServer(dataDir, {
          SQL_DSN: db.url,
          BATCH_UPDATE_INTERVAL: "200",
          SQL_CONNECT_TIMEOUT_MS: "1000",
          SQL_QUERY_TIMEOUT_MS: "2000",
        });
        const base = srv.base;
        const p = await provision(base, up.port!, { model: MODEL, remainQuota: 50_000_000 });
        const initial = await readBooks(db, dataDir, p.userId, p.tokenId);
        let served = 0;
        const bad: string[] = [];
        let stop = false;
        const worker = async () => {
          while (!stop) {
            const res = await fetch(`${base}/v1/chat/completions`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${p.key}` },
              body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "count me" }] }),
            });
            const text = await res.text();
            if (res.status === 200) served++;
            else if (res.status !== 503 || !JSON.parse(text)?.error?.message)
              bad.push(`${res.status} ${text.slice(0, 200)}`);
          }
        };
        const workers = Array.from({ length: 8 }, worker);
        await Bun.sleep(500);
        let killed = 0;
        for (let round = 0; round < 10; round++) {
          killed += await killAll();
          await Bun.sleep(100);
        }
        const before = served;
        await Bun.sleep(1000);
        stop = true;
        await Promise.all(workers);
        expect(srv.proc.exitCode).toBeNull();
        expect(killed).toBeGreaterThan(0);
        expect(bad).toEqual([]);
        expect(served).toBeGreaterThan(before);
        let after = await readBooks(db, dataDir, p.userId, p.tokenId);
        for (let i = 0; i < 150 && (after.holds > 0 || after.logs < served); i++) {
          await Bun.sleep(100);
          after = await readBooks(db, dataDir, p.userId, p.tokenId);
        }
        expect(after.holds).toBe(0);
        expect(after.logs).toBe(served);
        expect(initial.userQuota - after.userQuota).toBe(after.logged);
      } finally {
        if (srv && srv.proc.exitCode === null) {
          srv.proc.kill("SIGKILL");
          await srv.proc.exited;
        }
        up.stop(true);
        await db.drop();
      }
    }, 60_000);

  for (const kind of kinds)
    test(`${kind}: SIGTERM ends within the grace period while the database does not answer`, async () => {
      const db: TempDb = await tempDatabase(kind);
      const target = new URL(db.url);
      const proxy = startTcpProxy(target.hostname, Number(target.port));
      const via = new URL(db.url);
      via.port = String(proxy.port);
      let srv: Running | undefined;
      try {
        srv = await startServer(join(work, `${kind}-term`), {
          SQL_DSN: via.toString(),
          SHUTDOWN_GRACE_SECONDS: "3",
          SQL_CONNECT_TIMEOUT_MS: "60000",
          SQL_QUERY_TIMEOUT_MS: "60000",
        });
        await fetch(`${srv.base}/api/setup`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "root", password: "rootpass123", confirmPassword: "rootpass123" }),
        });
        // A console call stuck on a database that accepts connections and never answers.
        proxy.hang(true);
        proxy.cut();
        const stuck = fetch(`${srv.base}/api/user/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "root", password: "rootpass123" }),
        }).catch(() => null);
        await Bun.sleep(200);
        srv.proc.kill("SIGTERM");
        // Bounded by the test's time limit: with the bounds above (60 s) only the grace period can end it.
        expect(await srv.proc.exited).toBeDefined();
        await stuck;
        expect(srv.output()).toContain("SIGTERM received");
        expect(srv.output()).not.toContain("shutdown did not finish in time");
      } finally {
        if (srv && srv.proc.exitCode === null) srv.proc.kill("SIGKILL");
        proxy.stop();
        await db.drop();
      }
    }, 30_000);
});
