// The probe's shapes against a real gateway process on each database: a token worth 50 units, 20 long answers
// at once → at most 50 billed and no answer beyond what was paid; a user worth 50 units with several tokens → the
// same; a 5,000-unit token without max_tokens → at most 5,000. And one Host per request: two are a 400, in the
// caller's format, on the relay and on the management API.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, stopServer, type Running } from "../helpers/server-process.ts";
import { storageKinds, tempDatabase, type TempDb } from "../helpers/db.ts";
import { startLongUpstream, type LongUpstream } from "../relay/long-upstream.ts";

const JSON_HEADERS = { "content-type": "application/json" };

interface Admin {
  base: string;
  auth: Record<string, string>;
}

async function api(a: Admin, method: string, path: string, body?: unknown, auth = a.auth): Promise<any> {
  const r = await fetch(a.base + path, {
    method,
    headers: auth,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const j = await r.json();
  if (!j.success) throw new Error(`${method} ${path}: ${j.message}`);
  return j.data;
}

async function login(base: string, username: string, password: string): Promise<Record<string, string>> {
  const r = await fetch(`${base}/api/user/login`, {
    method: "POST",
    headers: JSON_HEADERS,
    body: JSON.stringify({ username, password }),
  });
  const user = (await r.json()).data;
  return {
    ...JSON_HEADERS,
    cookie: (r.headers.get("set-cookie") ?? "").split(";")[0],
    "New-Api-User": String(user.id),
  };
}

/** A token of the signed-in user; its id and key. */
async function token(
  a: Admin,
  auth: Record<string, string>,
  spec: Record<string, unknown>,
): Promise<{ id: number; key: string }> {
  const data = await api(
    a,
    "POST",
    "/api/token/",
    { name: "t", expired_time: -1, unlimited_quota: false, remain_quota: 0, ...spec },
    auth,
  );
  return { id: data[0].id, key: "sk-" + String(data[0].key).replace(/^sk-/, "") };
}

const chat = (model: string) => JSON.stringify({ model, messages: [{ role: "user", content: "write a long story" }] });

async function burst(base: string, keys: string[], n: number, model: string) {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { ...JSON_HEADERS, authorization: `Bearer ${keys[i % keys.length]}` },
        body: chat(model),
      }).then(async (r) => ({ status: r.status, body: await r.json() })),
    ),
  );
}

/** The consume logs of a user, once the write-behind has written them (BATCH_UPDATE_INTERVAL is short here). */
async function consumed(a: Admin, userId: number, expected: number): Promise<any[]> {
  let items: any[] = [];
  for (let i = 0; i < 100; i++) {
    items = (await api(a, "GET", `/api/log/?type=2&p=1&page_size=100&username=`)).items.filter(
      (l: any) => l.user_id === userId,
    );
    if (items.length >= expected) break;
    await Bun.sleep(50);
  }
  return items;
}

for (const kind of storageKinds()) {
  describe(`a real gateway on ${kind}`, () => {
    let dir: string;
    let db: TempDb | null = null;
    let server: Running;
    let up: LongUpstream;
    let admin: Admin;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "sy-holds-"));
      up = startLongUpstream();
      const env: Record<string, string> = { BATCH_UPDATE_INTERVAL: "50" };
      if (kind !== "sqlite") {
        db = await tempDatabase(kind);
        env.SQL_DSN = db.url;
      }
      server = await startServer(dir, env);
      const base = server.base;
      const setup = await fetch(`${base}/api/setup`, {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify({ username: "root", password: "rootpass123", confirmPassword: "rootpass123" }),
      }).then((r) => r.json());
      expect(setup.success).toBe(true);
      admin = { base, auth: await login(base, "root", "rootpass123") };
      await api(admin, "POST", "/api/channel/", {
        type: 1,
        name: "long",
        key: "sk-upstream",
        models: "long-m",
        base_url: up.url,
        group: "default",
      });
      for (const [key, value] of [
        ["ModelRatio", { "long-m": 1 }],
        ["CompletionRatio", { "long-m": 1 }],
      ] as const) {
        await api(admin, "PUT", "/api/option/", { key, value: JSON.stringify(value) });
      }
    }, 60_000);
    afterAll(async () => {
      await stopServer(server);
      up.stop();
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    /** The root user's id (the tokens below are root's unless a user is made for the test). */
    const rootId = () => Number(admin.auth["New-Api-User"]);

    test("a 50-unit token, 20 long answers at once: at most 50 billed, none delivered beyond what was paid", async () => {
      const t = await token(admin, admin.auth, { remain_quota: 50 });
      const before = (await consumed(admin, rootId(), 0)).length;
      const out = await burst(admin.base, [t.key], 20, "long-m");
      const served = out.filter((o) => o.status === 200);
      expect(served.length).toBeGreaterThan(0);
      expect(out.every((o) => o.status === 200 || o.status === 403)).toBe(true);
      const logs = (await consumed(admin, rootId(), before + served.length)).slice(0, served.length);
      const billed = logs.reduce((s, l) => s + l.quota, 0);
      const delivered = served.reduce((s, o) => s + o.body.usage.total_tokens, 0);
      expect(billed).toBeLessThanOrEqual(50);
      expect(delivered).toBeLessThanOrEqual(billed);
      const row = await api(admin, "GET", `/api/token/${t.id}`);
      expect(row.remain_quota).toBe(50 - billed);
      expect(row.remain_quota).toBeGreaterThanOrEqual(0);
    });

    test("a 50-unit user with three tokens, 20 long answers at once: at most 50 billed, the balance never below 0", async () => {
      await api(admin, "POST", "/api/user/", {
        username: `poor${kind.slice(0, 3)}`,
        password: "poorpass123",
        display_name: "poor",
      });
      const users = await api(admin, "GET", `/api/user/search?keyword=poor${kind.slice(0, 3)}`);
      const poor = (users.items ?? users)[0];
      await api(admin, "PUT", "/api/user/", { ...poor, quota: 50, password: "" });
      const auth = await login(admin.base, `poor${kind.slice(0, 3)}`, "poorpass123");
      const keys = [];
      for (let i = 0; i < 3; i++) keys.push((await token(admin, auth, { remain_quota: 1_000_000 })).key);
      const out = await burst(admin.base, keys, 20, "long-m");
      const served = out.filter((o) => o.status === 200);
      expect(served.length).toBeGreaterThan(0);
      const logs = await consumed(admin, poor.id, served.length);
      const billed = logs.reduce((s, l) => s + l.quota, 0);
      expect(billed).toBeLessThanOrEqual(50);
      expect(served.reduce((s, o) => s + o.body.usage.total_tokens, 0)).toBeLessThanOrEqual(billed);
      const after = await api(admin, "GET", `/api/user/${poor.id}`);
      expect(after.quota).toBe(50 - billed);
    });

    test("a 5,000-unit token without max_tokens, 9 long answers at once: at most 5,000 billed", async () => {
      const t = await token(admin, admin.auth, { remain_quota: 5000 });
      const before = (await consumed(admin, rootId(), 0)).length;
      const out = await burst(admin.base, [t.key], 9, "long-m");
      const served = out.filter((o) => o.status === 200);
      expect(served.length).toBeGreaterThan(0);
      const logs = (await consumed(admin, rootId(), before + served.length)).slice(0, served.length);
      const billed = logs.reduce((s, l) => s + l.quota, 0);
      expect(billed).toBeLessThanOrEqual(5000);
      expect(served.reduce((s, o) => s + o.body.usage.total_tokens, 0)).toBeLessThanOrEqual(billed);
      expect((await api(admin, "GET", `/api/token/${t.id}`)).remain_quota).toBe(5000 - billed);
    });

    if (kind === "sqlite") {
      test("two Host headers are refused with 400, in the caller's format, before anything else", async () => {
        const t = await token(admin, admin.auth, { remain_quota: 1_000_000 });
        const raw = async (request: string) => {
          let text = "";
          let done: () => void;
          const closed = new Promise<void>((r) => (done = r));
          const s = await Bun.connect({
            hostname: "127.0.0.1",
            port: server.port,
            socket: {
              data(_s, d) {
                text += d.toString();
              },
              close() {
                done();
              },
            },
          });
          s.write(request);
          await closed;
          return text;
        };
        const body = chat("long-m");
        const seen = up.seen.length;
        const relay = await raw(
          `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        );
        expect(relay.startsWith("HTTP/1.1 400")).toBe(true);
        expect(JSON.parse(relay.slice(relay.indexOf("\r\n\r\n") + 4)).error.code).toBe("invalid_host_header");
        expect(up.seen.length).toBe(seen);
        const manage = await raw(
          `GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`,
        );
        expect(manage.startsWith("HTTP/1.1 400")).toBe(true);
        expect(JSON.parse(manage.slice(manage.indexOf("\r\n\r\n") + 4)).success).toBe(false);
        const one = await raw(`GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
        expect(one.startsWith("HTTP/1.1 200")).toBe(true);
      });
    }
  });
}
