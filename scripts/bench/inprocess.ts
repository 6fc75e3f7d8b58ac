// The gateway's own work per call, without sockets: app.handle() in this process with the upstream's fetch
// answered from memory, 16 callers at a time; prints the process's CPU (every thread, the SQLite worker's
// included) per call, and the event loop's thread's share. The network-facing benchmark (relay.ts) measures what
// a client sees; this one measures only the gateway's code, steadily enough to compare two builds on a busy machine.
//
//   bun scripts/bench/inprocess.ts [ROOT]   (ROOT: another checkout of the project to measure; N=calls;
//                                            USERS=n: calls spread over n users, each with a token;
//                                            STREAM=1: streamed calls, the upstream's seven SSE chunks read one by one;
//                                            PG_DSN=postgres://... or MYSQL_DSN=mysql://...: on a fresh database there;
//                                            ALLOC=1: also the bytes the JavaScript heap allocated per call;
//                                            PROMPT_BYTES=n: a conversation of about n bytes in each request;
//                                            BENCH_NO_LOGS=1: consume logs off;
//                                            AFFINITY_KEY=1: each caller's calls carry a prompt_cache_key of their own,
//                                            so channel affinity looks up and records a pin on every call;
//                                            REDIS_CONN_STRING=redis://...: the shared cache on Redis)
// ALLOC=1 runs the measurement in a child with JavaScriptCore's collection log on and adds up the bytes each
// collection says were allocated since the one before: unlike CPU time, that count barely moves with what else
// the machine is doing (±2 % between runs), so it shows a change in what a call allocates on any day.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { benchMessages } from "./prompt.ts";

const DEFAULT_CALLS = 100000;
const MEASURE_START = "-- measured calls start --";
const MEASURE_END = "-- measured calls end --";

const root = resolve(process.argv[2] ?? join(import.meta.dir, "../.."));
if (process.env.ALLOC === "1") {
  const child = Bun.spawn([process.execPath, import.meta.path, ...process.argv.slice(2)], {
    env: { ...process.env, ALLOC: "child", BUN_JSC_logGC: "1" },
    stdout: "inherit",
    stderr: "pipe",
  });
  const log = await new Response(child.stderr).text();
  if ((await child.exited) !== 0) throw new Error(`the measuring child failed:\n${log.slice(-2000)}`);
  const measured = log.slice(log.indexOf(MEASURE_START), log.indexOf(MEASURE_END));
  let bytes = 0;
  for (const m of measured.matchAll(/bytes allocated this cycle: (\d+)/g)) bytes += Number(m[1]);
  const calls = Number(process.env.N ?? DEFAULT_CALLS);
  // The count is taken at each collection: the bytes after the last one are not in it (at most one eden's worth).
  console.log(
    `allocated by the JavaScript heap: ${(bytes / calls).toFixed(0)} bytes per call (${(bytes / 1e6).toFixed(0)} MB over ${calls} calls, counted at collections)`,
  );
  process.exit(0);
}
const { loadConfig } = await import(root + "/server/config.ts");
const { buildDeps, closeDeps } = await import(root + "/server/bootstrap.ts");
const { createApp } = await import(root + "/server/app.ts");
const { nowSeconds } = await import(root + "/db/index.ts");
const MODEL = "bench-model";
const REPLY = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1700000000,
  model: MODEL,
  choices: [
    { index: 0, message: { role: "assistant", content: "Hello from the bench upstream." }, finish_reason: "stop" },
  ],
  usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 },
});
const STREAM = process.env.STREAM === "1";
const frame = (o: unknown) => new TextEncoder().encode(`data: ${JSON.stringify(o)}\n\n`);
const CHUNKS = [
  ...["Hello", " from", " the", " bench", " upstream."].map((t) =>
    frame({
      id: "c",
      object: "chat.completion.chunk",
      created: 1700000000,
      model: MODEL,
      choices: [{ index: 0, delta: { content: t }, finish_reason: null }],
    }),
  ),
  frame({
    id: "c",
    object: "chat.completion.chunk",
    created: 1700000000,
    model: MODEL,
    choices: [],
    usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
  }),
  new TextEncoder().encode("data: [DONE]\n\n"),
];
/** The upstream's stream, a chunk per read as a socket delivers them. */
function sse(): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream(
    {
      pull(c) {
        if (i < CHUNKS.length) c.enqueue(CHUNKS[i++]);
        else c.close();
      },
    },
    { highWaterMark: 0 },
  );
}
const realFetch = globalThis.fetch;
(globalThis as any).fetch = async (url: any, init: any) => {
  if (String(url).startsWith("http://upstream.local") && STREAM)
    return new Response(sse(), { headers: { "content-type": "text/event-stream" } });
  if (String(url).startsWith("http://upstream.local"))
    return new Response(REPLY, {
      headers: { "content-type": "application/json", "content-length": String(REPLY.length) },
    });
  return realFetch(url, init);
};
const dir = mkdtempSync(join(tmpdir(), "sy-inproc-"));
// A fresh server database when asked for one (the tests' temporary databases: created here, dropped at the end).
const kind = process.env.PG_DSN ? "postgres" : process.env.MYSQL_DSN ? "mysql" : null;
const server = kind ? await (await import(root + "/tests/helpers/db.ts")).tempDatabase(kind) : null;
const config = loadConfig({
  DATA_DIR: dir,
  SESSION_SECRET: "bench",
  PORT: "0",
  NODE_ENV: "production",
  SYNC_FREQUENCY: "60",
  SQL_DSN: server?.url ?? "",
  // Streamed calls would otherwise reach for the upstream through the socket client; here fetch() answers them.
  UPSTREAM_STREAM_CLIENT: "fetch",
  REDIS_CONN_STRING: process.env.REDIS_CONN_STRING ?? "",
});
const deps = await buildDeps(config);
const app = createApp(deps);
await app.handle(
  new Request("http://localhost/api/setup", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "root", password: "benchpass123", confirmPassword: "benchpass123" }),
  }),
);
await deps.options.set("ModelRatio", JSON.stringify({ [MODEL]: 1 }));
// BENCH_NO_LOGS=1: consume logs off (what the log rows cost per call, by difference; as in relay.ts).
if (process.env.BENCH_NO_LOGS === "1") await deps.options.set("LogConsumeEnabled", "false");
const db = deps.db;
const user = await db.selectFrom("users").select("id").where("username", "=", "root").executeTakeFirstOrThrow();
await db.updateTable("users").set({ quota: 1e15 }).where("id", "=", user.id).execute();
// USERS=N: calls rotate over N users with a token each (a slice of the write-behind then updates many balance
// rows, as on a shared gateway); the default is one user and token.
const USERS = Math.max(1, Number(process.env.USERS ?? 1));
const keys: string[] = [];
for (let i = 0; i < USERS; i++) {
  const key = `bench${String(i).padStart(6, "0")}`.padEnd(48, "b");
  let userId = user.id;
  if (i > 0) {
    await db
      .insertInto("users")
      .values({
        username: `bench${i}`,
        password: "x",
        display_name: `bench${i}`,
        role: 1,
        status: 1,
        quota: 1e15,
        group: "default",
        aff_code: `aff${i}`,
      } as any)
      .execute();
    userId = (await db.selectFrom("users").select("id").where("username", "=", `bench${i}`).executeTakeFirstOrThrow())
      .id;
  }
  await db
    .insertInto("tokens")
    .values({
      user_id: userId,
      key,
      name: "bench",
      created_time: nowSeconds(),
      expired_time: -1,
      remain_quota: 1e15,
      unlimited_quota: false,
    } as any)
    .execute();
  keys.push(key);
}
const ch = await db
  .insertInto("channels")
  .values({
    type: 1,
    key: "sk-upstream",
    name: "bench",
    base_url: "http://upstream.local",
    models: MODEL,
    group: "default",
    created_time: nowSeconds(),
    openai_organization: null,
    test_model: null,
    model_mapping: null,
    param_override: null,
  } as any)
  .returning("id")
  .executeTakeFirstOrThrow();
await db
  .insertInto("abilities")
  .values({
    group: "default",
    model: MODEL,
    channel_id: Number(ch.id),
    enabled: true,
    priority: 0,
    weight: 0,
    tag: null,
  } as any)
  .execute();
const messages = benchMessages(Number(process.env.PROMPT_BYTES ?? 0));
// AFFINITY_KEY=1: one conversation per user (its token), as an agent's calls carry it.
const bodies = keys.map((_, i) =>
  JSON.stringify({
    model: MODEL,
    stream: STREAM,
    messages,
    ...(process.env.AFFINITY_KEY === "1" ? { prompt_cache_key: `bench-conversation-${i}` } : {}),
  }),
);
let nextKey = 0;
const req = () => {
  const i = nextKey++ % USERS;
  const body = bodies[i]!;
  return new Request("http://localhost/v1/chat/completions", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: "Bearer sk-" + keys[i],
      "content-length": String(body.length),
    },
    body,
  });
};
async function run(n: number, c: number) {
  let left = n;
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (left-- > 0) {
        const r = await app.handle(req());
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`status ${r.status}`);
      }
    }),
  );
}
await run(20000, 16);
const N = Number(process.env.N ?? DEFAULT_CALLS);
/** This thread's CPU in µs (from /proc: the SQLite worker's share is the rest of the process's). */
function mainThreadCpu(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}
if (process.env.ALLOC === "child") console.error(MEASURE_START);
const m0 = mainThreadCpu();
const t0 = process.cpuUsage();
const w0 = performance.now();
await run(N, 16);
const cpu = process.cpuUsage(t0);
if (process.env.ALLOC === "child") console.error(MEASURE_END);
console.log(
  `${root}: ${kind ?? "sqlite"}, ${USERS} user(s)${STREAM ? ", streams" : ""}, ${((cpu.user + cpu.system) / N).toFixed(1)} µs CPU per call (main thread ${((mainThreadCpu() - m0) / N).toFixed(1)}), ${(N / ((performance.now() - w0) / 1000)).toFixed(0)} calls/s`,
);
await closeDeps(deps);
await server?.drop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
