// A whole gateway over a temporary database, driven through app.handle() (no socket), plus helpers to
// make users of each role with a real session cookie.
import { loadConfig, type Config } from "../../server/config.ts";
import type { AppDeps } from "../../server/deps.ts";
import { createApp, type App } from "../../server/app.ts";
import { closeDeps, startDatabaseWorker } from "../../server/bootstrap.ts";
import { openDatabase, nowSeconds, type Dialect } from "../../db/index.ts";
import { OptionStore } from "../../server/modules/option/store.ts";
import { MemoryCache, openCache, type Cache } from "../../server/infra/cache.ts";
import { hashPassword } from "../../server/modules/user/password.ts";
import { ROLE } from "../../server/catalogue/index.ts";
import { tempDatabase, type TempDb } from "./db.ts";
import { DEFAULT_DATABASE_TIMEOUTS } from "../../db/timeouts.ts";

export interface Session {
  id: number;
  username: string;
  password: string;
  cookie: string;
  headers: Record<string, string>;
}
export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface TestContext {
  deps: AppDeps;
  app: App;
  request<T = any>(
    method: string,
    path: string,
    opts?: { body?: unknown; as?: Session | null; headers?: Record<string, string>; raw?: string },
  ): Promise<Reply<T>>;
  /** Creates a user directly in the database and logs it in through the API. */
  user(role?: number, fields?: Record<string, unknown>): Promise<Session>;
  login(username: string, password: string): Promise<Session>;
  close(): Promise<void>;
}

let counter = 0;

/** `database`: open this one (shared with another context, as a second instance would) instead of a new one;
 * it is left in place on close, for its owner to drop. */
export async function testContext(
  opts: {
    kind?: Dialect;
    setup?: boolean;
    config?: Partial<Config>;
    redis?: boolean;
    database?: TempDb;
    cache?: Cache;
  } = {},
): Promise<TestContext> {
  const tmp: TempDb = opts.database ?? (await tempDatabase(opts.kind ?? "sqlite"));
  const config: Config = {
    ...loadConfig({
      SESSION_SECRET: "test-secret",
      NODE_ENV: "test",
      RATE_LIMIT_ENABLED: "false",
      SYNC_FREQUENCY: "0",
    }),
    database: { kind: tmp.kind, url: tmp.url, sqlitePath: tmp.sqlitePath, timeouts: DEFAULT_DATABASE_TIMEOUTS },
    // Each context is its own instance: one starting must not take another's quota holds for its previous life.
    instanceId: `test-${++counter}-${Math.random().toString(36).slice(2, 8)}`,
    // In process the write-behind keeps no journal (the process tests, tests/server/crash.test.ts, have one).
    journalDir: null,
    ...opts.config,
  };
  const db = await openDatabase({ kind: tmp.kind, url: tmp.url, sqlitePath: tmp.sqlitePath, poolSize: 20 });
  // As in production: PostgreSQL's and MySQL's write-behind commits on its worker thread.
  startDatabaseWorker(db, config.database);
  const options = new OptionStore(db);
  await options.load();
  const cache =
    opts.cache
    ?? (opts.redis && process.env.REDIS_CONN_STRING
      ? await openCache(process.env.REDIS_CONN_STRING, `sytest:${Math.random().toString(36).slice(2)}:`)
      : new MemoryCache());
  const deps: AppDeps = { config, db, options, cache, startTime: nowSeconds(), shutdownHooks: [] };
  const app = createApp(deps);
  const base = "http://localhost";

  const request: TestContext["request"] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...(o.as?.headers ?? {}), ...(o.headers ?? {}) };
    let body: string | undefined = o.raw;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers["content-type"] ??= "application/json";
    }
    const res = await app.handle(new Request(base + path, { method, headers, body }));
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed, headers: res.headers };
  };

  const login = async (username: string, password: string): Promise<Session> => {
    const res = await app.handle(
      new Request(base + "/api/user/login", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username, password }),
      }),
    );
    const body: any = await res.json();
    if (!body.success) throw new Error(`login failed: ${body.message}`);
    const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
    return { id: body.data.id, username, password, cookie, headers: { cookie, "New-Api-User": String(body.data.id) } };
  };

  const ctx: TestContext = {
    deps,
    app,
    request,
    login,
    async user(role = ROLE.common, fields = {}) {
      const username =
        (fields.username as string) ?? `u${++counter}_${Math.random().toString(36).slice(2, 6)}`.slice(0, 12);
      const password = "password123";
      await db
        .insertInto("users")
        .values({
          username,
          password: await hashPassword(password, deps.config.passwordHash),
          display_name: username,
          role,
          status: 1,
          group: "default",
          aff_code: `aff${counter}${Math.random().toString(36).slice(2, 8)}`,
          created_time: nowSeconds(),
          setting: "",
          ...fields,
        } as any)
        .execute();
      return login(username, password);
    },
    async close() {
      await closeDeps(deps);
      if (!opts.database) await tmp.drop();
    },
  };

  // A shared database is set up by the first context that opens it.
  const alreadySetUp = opts.database
    ? !!(await db.selectFrom("setups").select("id").limit(1).executeTakeFirst())
    : false;
  if (opts.setup !== false && !alreadySetUp) {
    const r = await request("POST", "/api/setup", {
      body: { username: "root", password: "rootpass123", confirmPassword: "rootpass123" },
    });
    if (!r.body.success) throw new Error("setup failed: " + r.body.message);
  }
  return ctx;
}

export const ROOT_PASSWORD = "rootpass123";
