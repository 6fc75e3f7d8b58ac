// A real gateway process (bun server/main.ts) for tests that need signals, crashes or restarts, and the
// calls that make it usable: setup, an admin session, a channel and a token.
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "../..");
export const BUN = join(ROOT, "node_modules", ".bin", "bun");

export async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, fetch: () => new Response("") });
  const p = s.port!;
  s.stop(true);
  return p;
}

export interface Running {
  proc: ReturnType<typeof Bun.spawn>;
  base: string;
  port: number;
  dataDir: string;
  output: () => string;
}

/** Starts the server on `port` (a free one by default) and waits until /api/status answers. Without SQL_DSN
 * in `env` it runs on SQLite in `dataDir`; the parent's SQL_DSN and REDIS_CONN_STRING are never inherited. */
export async function startServer(dataDir: string, env: Record<string, string> = {}, port?: number): Promise<Running> {
  port ??= await freePort();
  const childEnv: Record<string, string> = {
    ...(process.env as Record<string, string>),
    SESSION_SECRET: "process-test",
  };
  delete childEnv.SQL_DSN;
  delete childEnv.REDIS_CONN_STRING;
  Object.assign(childEnv, env);
  const proc = Bun.spawn([BUN, "server/main.ts", "--port", String(port), "--data-dir", dataDir], {
    cwd: ROOT,
    env: childEnv,
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const dec = new TextDecoder();
  void (async () => {
    for await (const c of proc.stdout as ReadableStream<Uint8Array>) out += dec.decode(c);
  })();
  void (async () => {
    for await (const c of proc.stderr as ReadableStream<Uint8Array>) out += dec.decode(c);
  })();
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (proc.exitCode !== null) break;
    if (
      await fetch(`${base}/api/status`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { proc, base, port, dataDir, output: () => out };
    await Bun.sleep(50);
  }
  proc.kill("SIGKILL");
  throw new Error(`server did not start:\n${out}`);
}

/** Stops a server started by startServer (graceful: SIGTERM) and waits for it; nothing when none was started. */
export async function stopServer(server: Running | undefined): Promise<void> {
  if (!server) return;
  server.proc.kill("SIGTERM");
  await server.proc.exited;
}

export interface Provisioned {
  key: string;
  userId: number;
  tokenId: number;
}

/** Setup, login, a channel on the upstream serving `model`, and a token (unlimited unless `remainQuota`). */
export async function provision(
  base: string,
  upstreamPort: number,
  opts: { model?: string; remainQuota?: number } = {},
): Promise<Provisioned> {
  const json = { "content-type": "application/json" };
  const setup = await fetch(`${base}/api/setup`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ username: "root", password: "rootpass123", confirmPassword: "rootpass123" }),
  }).then((r) => r.json());
  if (!setup.success) throw new Error(setup.message);
  const login = await fetch(`${base}/api/user/login`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ username: "root", password: "rootpass123" }),
  });
  const user = (await login.json()).data;
  const auth = {
    ...json,
    cookie: (login.headers.get("set-cookie") ?? "").split(";")[0],
    "New-Api-User": String(user.id),
  };
  const model = opts.model ?? "gpt-4o-mini";
  const channel = await fetch(`${base}/api/channel/`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({
      type: 1,
      name: "mock",
      key: "sk-upstream",
      models: model,
      base_url: `http://127.0.0.1:${upstreamPort}`,
      group: "default",
    }),
  }).then((r) => r.json());
  if (!channel.success) throw new Error(channel.message);
  const limited = opts.remainQuota !== undefined;
  const token = await fetch(`${base}/api/token/`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({
      name: "test",
      unlimited_quota: !limited,
      remain_quota: opts.remainQuota ?? 0,
      expired_time: -1,
    }),
  }).then((r) => r.json());
  if (!token.success) throw new Error(token.message);
  return { key: token.data[0].key, userId: user.id, tokenId: token.data[0].id };
}
