// The release binary end to end: compile it (once per test run), start it with no arguments in an empty
// folder next to a mock OpenAI upstream, and in real Chromium go setup wizard → login → add a channel →
// create a token; then call /v1/chat/completions with the official openai package (streaming), find the
// call in the usage log with the right quota, stop the process with SIGTERM, start it again and find
// everything still there.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import OpenAI from "openai";
import { buildBinary } from "../../scripts/build.ts";
import { MANIFEST_PATH } from "../../scripts/build-console.ts";
import { openDatabase } from "../../db/index.ts";
import { storageKinds, tempDatabase } from "../helpers/db.ts";

const CHUNKS = ["The", " binary", " streams", " this", " answer."];
const ANSWER = CHUNKS.join("");
const USAGE = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 };
const MODEL = "gpt-4o-mini";

/**
 * One compile per `bun test` process (all test files share it), in a temporary folder. The manifest the
 * compile needs is written to server/assets.gen.ts and put back as it was right after.
 */
const BUILD_DIR = join(tmpdir(), `switchyard-e2e-build-${process.pid}`);

async function cachedBinary(): Promise<string> {
  const dir = BUILD_DIR;
  const bin = join(dir, "switchyard");
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  const previous = existsSync(MANIFEST_PATH) ? readFileSync(MANIFEST_PATH, "utf8") : null;
  try {
    await buildBinary({ outfile: bin + ".tmp", consoleOut: join(dir, "console"), log: () => {} });
  } finally {
    if (previous === null) {
      if (existsSync(MANIFEST_PATH)) unlinkSync(MANIFEST_PATH);
    } else writeFileSync(MANIFEST_PATH, previous);
  }
  // Renamed only when complete, so a concurrent file never picks up a half-written binary.
  copyFileSync(bin + ".tmp", bin);
  chmodSync(bin, 0o755);
  return bin;
}

function startUpstream(calls: any[]) {
  return Bun.serve({
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/v1/models")
        return Response.json({ object: "list", data: [{ id: MODEL, object: "model", owned_by: "mock" }] });
      if (url.pathname !== "/v1/chat/completions") return new Response("not found", { status: 404 });
      const body = await req.json();
      calls.push(body);
      if (!body.stream) {
        return Response.json({
          id: "chatcmpl-e2e",
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: ANSWER }, finish_reason: "stop" }],
          usage: USAGE,
        });
      }
      const enc = new TextEncoder();
      const frame = (o: unknown) => enc.encode(`data: ${JSON.stringify(o)}\n\n`);
      return new Response(
        new ReadableStream({
          async start(ctrl) {
            for (const c of CHUNKS) {
              ctrl.enqueue(
                frame({
                  id: "chatcmpl-e2e",
                  object: "chat.completion.chunk",
                  created: 1,
                  model: body.model,
                  choices: [{ index: 0, delta: { content: c }, finish_reason: null }],
                }),
              );
              await Bun.sleep(40);
            }
            ctrl.enqueue(
              frame({
                id: "chatcmpl-e2e",
                object: "chat.completion.chunk",
                created: 1,
                model: body.model,
                choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
              }),
            );
            ctrl.enqueue(
              frame({
                id: "chatcmpl-e2e",
                object: "chat.completion.chunk",
                created: 1,
                model: body.model,
                choices: [],
                usage: USAGE,
              }),
            );
            ctrl.enqueue(enc.encode("data: [DONE]\n\n"));
            ctrl.close();
          },
        }),
        { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } },
      );
    },
  });
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, fetch: () => new Response("") });
  const p = s.port!;
  s.stop(true);
  return p;
}

let work: string;
let runDir: string;
let port: number;
let base: string;
let proc: ReturnType<typeof Bun.spawn> | null = null;
let output = "";
let upstream: ReturnType<typeof Bun.serve>;
const upstreamCalls: any[] = [];
let browser: Browser;
let page: Page;
let tokenKey = "";
let expectedQuota = 0;

/** `./switchyard --port N` in runDir: nothing else, so it must create ./data and its own session secret. */
async function startBinary() {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  for (const k of [
    "SQL_DSN",
    "REDIS_CONN_STRING",
    "SESSION_SECRET",
    "DATA_DIR",
    "SQLITE_PATH",
    "CONSOLE_DIR",
    "PORT",
    "NODE_ENV",
  ])
    delete env[k];
  output = "";
  proc = Bun.spawn(["./switchyard", "--port", String(port)], { cwd: runDir, env, stdout: "pipe", stderr: "pipe" });
  const dec = new TextDecoder();
  const p = proc;
  void (async () => {
    for await (const c of p.stdout as ReadableStream<Uint8Array>) output += dec.decode(c);
  })();
  void (async () => {
    for await (const c of p.stderr as ReadableStream<Uint8Array>) output += dec.decode(c);
  })();
  for (let i = 0; i < 200; i++) {
    if (p.exitCode !== null) break;
    if (
      await fetch(`${base}/api/status`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await Bun.sleep(50);
  }
  throw new Error(`the binary did not start:\n${output}`);
}

async function stopBinary(): Promise<number | null> {
  if (!proc) return null;
  proc.kill("SIGTERM");
  const code = await proc.exited;
  proc = null;
  return code;
}

/** A management call from inside the page, with the console's session cookie and user header. */
async function apiInPage(method: string, path: string, body?: unknown): Promise<any> {
  return page.evaluate(
    async ({ method, path, body }) => {
      const user = JSON.parse(localStorage.getItem("user") ?? "null");
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (user) headers["New-Api-User"] = String(user.id);
      const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      return r.json();
    },
    { method, path, body },
  );
}

const row = (text: string) => page.locator("tr", { hasText: text }).first();

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sy-binary-e2e-"));
  runDir = join(work, "run");
  mkdirSync(runDir);
  copyFileSync(await cachedBinary(), join(runDir, "switchyard"));
  chmodSync(join(runDir, "switchyard"), 0o755);
  upstream = startUpstream(upstreamCalls);
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  await startBinary();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "en-US" });
  await context.addInitScript(() => {
    if (!localStorage.getItem("i18nextLng")) localStorage.setItem("i18nextLng", "en");
  });
  page = await context.newPage();
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  if (proc) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
  upstream?.stop(true);
  if (work) rmSync(work, { recursive: true, force: true });
  // 120 MB per run: not worth keeping once this file is done.
  rmSync(BUILD_DIR, { recursive: true, force: true });
});

describe("the compiled binary in Chromium", () => {
  test("first start: ./data is created, the URL printed, and the first visit lands on the setup wizard", async () => {
    expect(existsSync(join(runDir, "data", "switchyard.db"))).toBe(true);
    expect(existsSync(join(runDir, "data", ".session_secret"))).toBe(true);
    expect(output).toContain(`listening on http://localhost:${port}`);
    expect(output).toContain(`open http://localhost:${port}/setup`);

    await page.goto(`${base}/`);
    await page.waitForURL(/\/setup$/, { timeout: 15_000 });
    await page.locator("input[name=username]").fill("root");
    await page.locator("input[name=password]").fill("rootpass123");
    await page.locator("input[name=confirmPassword]").fill("rootpass123");
    await page.getByRole("button", { name: "Initialise the system" }).click();
    await page.getByText("System initialised").first().waitFor({ timeout: 10_000 });
    const status = await fetch(`${base}/api/status`).then((r) => r.json());
    expect(status.data.setup).toBe(true);
  }, 40_000);

  test("log in through the login page", async () => {
    await page.goto(`${base}/login`);
    await page.locator("input[name=username]").fill("root");
    await page.locator("input[name=password]").fill("rootpass123");
    await page.getByRole("main").getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(/\/token/, { timeout: 10_000 });
    const self = await apiInPage("GET", "/api/user/self");
    expect(self.data.username).toBe("root");
  }, 30_000);

  test("add a channel that points at the mock upstream", async () => {
    await page.goto(`${base}/channel`);
    await page.getByTestId("add-channel").click();
    await page.getByTestId("channel-name").fill("e2e-upstream");
    await page.getByTestId("channel-base-url").fill(`http://127.0.0.1:${upstream.port}`);
    await page.getByTestId("channel-key").fill("sk-mock-upstream-key");
    await page.getByTestId("channel-submit").click();
    await row("e2e-upstream").waitFor({ timeout: 10_000 });
    const list = await apiInPage("GET", "/api/channel/?p=1&page_size=10");
    const channel = list.data.items.find((c: any) => c.name === "e2e-upstream");
    expect(channel.base_url).toBe(`http://127.0.0.1:${upstream.port}`);
    expect(channel.models.split(",")).toContain(MODEL);
  }, 30_000);

  test("create a token", async () => {
    await page.goto(`${base}/token`);
    await page.getByRole("button", { name: "Add token" }).click();
    await page.getByPlaceholder("A name for this token").fill("e2e-token");
    await page.getByRole("button", { name: "Submit" }).click();
    await row("e2e-token").waitFor({ timeout: 10_000 });
    // The full key is read through the API: the list shows it masked and copying needs a clipboard.
    const list = await apiInPage("GET", "/api/token/?p=1&size=10");
    tokenKey = list.data.items.find((t: any) => t.name === "e2e-token").key;
    expect(tokenKey).toMatch(/^sk-[A-Za-z0-9]{48}$/);
  }, 30_000);

  test("the official openai package streams a chat completion through the binary", async () => {
    // bun test preloads happy-dom (for the console tests), which the SDK takes for a browser; this is the test process.
    const client = new OpenAI({
      apiKey: tokenKey,
      baseURL: `${base}/v1`,
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
    });
    const stream = await client.chat.completions.create({
      model: MODEL,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Say something" }],
    });
    let text = "";
    let usage: any = null;
    let deltas = 0;
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta?.content;
      if (piece) {
        text += piece;
        deltas++;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(ANSWER);
    expect(deltas).toBe(CHUNKS.length);
    expect(usage).toMatchObject({ prompt_tokens: USAGE.prompt_tokens, completion_tokens: USAGE.completion_tokens });
    expect(upstreamCalls.at(-1).stream).toBe(true);
    expect(upstreamCalls.at(-1).messages).toEqual([{ role: "user", content: "Say something" }]);
  }, 30_000);

  test("the call is in the usage log with the quota the ratios give", async () => {
    // Expected quota from the live pricing options: group ratio × model ratio × (prompt + completion × completion ratio).
    const options = await apiInPage("GET", "/api/option/");
    const opt = (key: string) => JSON.parse(options.data.find((o: any) => o.key === key).value);
    const modelRatio = opt("ModelRatio")[MODEL];
    const completionRatio = opt("CompletionRatio")[MODEL] ?? 1;
    const groupRatio = opt("GroupRatio").default ?? 1;
    expect(modelRatio).toBeGreaterThan(0);
    expectedQuota = Math.round(
      groupRatio * modelRatio * (USAGE.prompt_tokens + USAGE.completion_tokens * completionRatio),
    );
    expect(expectedQuota).toBeGreaterThan(0);

    let log: any;
    for (let i = 0; i < 50 && !log; i++) {
      const logs = await apiInPage("GET", "/api/log/?p=1&page_size=10&type=2");
      log = logs.data?.items?.find((l: any) => l.model_name === MODEL);
      if (!log) await Bun.sleep(200);
    }
    expect(log).toMatchObject({
      model_name: MODEL,
      token_name: "e2e-token",
      prompt_tokens: 1000,
      completion_tokens: 500,
      quota: expectedQuota,
    });

    await page.goto(`${base}/log`);
    const r = page.locator("tr", { hasText: MODEL }).filter({ hasText: "Consumption" }).first();
    await r.waitFor({ timeout: 10_000 });
    const cells = await r.textContent();
    expect(cells).toContain("e2e-token");
    expect(cells).toContain(`$${(expectedQuota / 500_000).toFixed(6)}`);
    const self = await apiInPage("GET", "/api/user/self");
    expect(self.data.used_quota).toBe(expectedQuota);
    expect(self.data.quota).toBe(100_000_000 - expectedQuota);
  }, 30_000);

  test("SIGTERM stops it with exit code 0; after a restart the account, channel, token and log are all there", async () => {
    expect(await stopBinary()).toBe(0);
    expect(output).toContain("stopped cleanly");
    await startBinary();
    expect(output).not.toContain("First start");

    // The session survives: the secret generated on first start was kept in ./data.
    await page.goto(`${base}/log`);
    const r = page.locator("tr", { hasText: MODEL }).filter({ hasText: "Consumption" }).first();
    await r.waitFor({ timeout: 10_000 });
    expect(await r.textContent()).toContain(`$${(expectedQuota / 500_000).toFixed(6)}`);
    await page.goto(`${base}/channel`);
    await row("e2e-upstream").waitFor({ timeout: 10_000 });
    await page.goto(`${base}/token`);
    await row("e2e-token").waitFor({ timeout: 10_000 });
    const self = await apiInPage("GET", "/api/user/self");
    expect(self.data.used_quota).toBe(expectedQuota);

    // And the restored token and channel still carry traffic.
    const client = new OpenAI({
      apiKey: tokenKey,
      baseURL: `${base}/v1`,
      maxRetries: 0,
      dangerouslyAllowBrowser: true,
    });
    const reply = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "again" }],
    });
    expect(reply.choices[0].message.content).toBe(ANSWER);
  }, 60_000);

  test("deep links, assets and API 404s from the embedded console", async () => {
    const deep = await fetch(`${base}/channel/edit/1`);
    expect(deep.status).toBe(200);
    expect(deep.headers.get("cache-control")).toBe("no-cache");
    const html = await deep.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(base + script, {
      headers: { "accept-encoding": "gzip" },
      decompress: false,
    } as RequestInit);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-encoding")).toBe("gzip");
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    // The embedded brotli copy, smaller still, when the browser offers it.
    const br = await fetch(base + script, {
      headers: { "accept-encoding": "gzip, br" },
      decompress: false,
    } as RequestInit);
    expect(br.headers.get("content-encoding")).toBe("br");
    expect((await br.arrayBuffer()).byteLength).toBeLessThan((await asset.arrayBuffer()).byteLength);
    const missing = await fetch(`${base}/assets/missing-0000.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ success: false, message: "not found" });
    const api = await fetch(`${base}/api/no/such/route`);
    expect(api.status).toBe(404);
    expect((await api.json()).success).toBe(false);
  }, 20_000);
});

describe("the compiled binary's command line", () => {
  test("--version and --help print and exit without starting a server or creating ./data", async () => {
    const dir = join(work, "flags");
    mkdirSync(dir);
    copyFileSync(join(runDir, "switchyard"), join(dir, "switchyard"));
    chmodSync(join(dir, "switchyard"), 0o755);
    const version = Bun.spawnSync(["./switchyard", "--version"], { cwd: dir });
    expect(version.exitCode).toBe(0);
    expect(version.stdout.toString().trim()).toBe(
      (await Bun.file(join(import.meta.dir, "../../package.json")).json()).version,
    );
    const help = Bun.spawnSync(["./switchyard", "--help"], { cwd: dir });
    expect(help.exitCode).toBe(0);
    expect(help.stdout.toString()).toContain("--data-dir DIR");
    expect(existsSync(join(dir, "data"))).toBe(false);
  });

  test("--healthcheck exits 0 while the server answers and 1 when nothing listens", async () => {
    const env = { PATH: process.env.PATH ?? "", PORT: String(port) };
    const healthy = Bun.spawnSync([join(runDir, "switchyard"), "--healthcheck"], { cwd: work, env });
    expect(healthy.exitCode).toBe(0);
    const down = Bun.spawnSync([join(runDir, "switchyard"), "--healthcheck", "--port", String(await freePort())], {
      cwd: work,
      env,
    });
    expect(down.exitCode).toBe(1);
    expect(existsSync(join(work, "data"))).toBe(false);
  });

  test("--console-dir serves a console folder from disk instead of the embedded one", async () => {
    const folder = join(work, "custom-console");
    mkdirSync(join(folder, "assets"), { recursive: true });
    writeFileSync(
      join(folder, "index.html"),
      '<!doctype html><html><body><div id="custom">custom console</div><script src="/assets/app-1.js"></script></body></html>',
    );
    writeFileSync(join(folder, "assets", "app-1.js"), "document.title = 'custom';");
    const p = await freePort();
    const child = Bun.spawn(
      [
        join(runDir, "switchyard"),
        "--port",
        String(p),
        "--data-dir",
        join(work, "custom-data"),
        "--console-dir",
        folder,
      ],
      {
        cwd: work,
        env: { PATH: process.env.PATH ?? "" },
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    try {
      const b = `http://127.0.0.1:${p}`;
      let up = false;
      for (let i = 0; i < 200 && !up; i++) {
        up = await fetch(`${b}/api/status`).then(
          (r) => r.ok,
          () => false,
        );
        if (!up) await Bun.sleep(50);
      }
      expect(up).toBe(true);
      const deep = await fetch(`${b}/token/edit/5`);
      expect(deep.status).toBe(200);
      expect(await deep.text()).toContain("custom console");
      const js = await fetch(`${b}/assets/app-1.js`);
      expect(js.status).toBe(200);
      expect(js.headers.get("etag")).toBeTruthy();
      expect(await js.text()).toBe("document.title = 'custom';");
      expect((await fetch(`${b}/assets/app-2.js`)).status).toBe(404);
    } finally {
      child.kill("SIGTERM");
      expect(await child.exited).toBe(0);
    }
  }, 20_000);

  test("--data-dir puts the database where it is told", async () => {
    const dir = join(work, "elsewhere");
    const p = await freePort();
    const env: Record<string, string> = { PATH: process.env.PATH ?? "" };
    const child = Bun.spawn([join(runDir, "switchyard"), "--port", String(p), "--data-dir", dir], {
      cwd: work,
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      let up = false;
      for (let i = 0; i < 200 && !up; i++) {
        up = await fetch(`http://127.0.0.1:${p}/api/status`).then(
          (r) => r.ok,
          () => false,
        );
        if (!up) await Bun.sleep(50);
      }
      expect(up).toBe(true);
      expect(existsSync(join(dir, "switchyard.db"))).toBe(true);
    } finally {
      child.kill("SIGTERM");
      expect(await child.exited).toBe(0);
    }
  }, 20_000);
});

// PostgreSQL and MySQL: the binary's write-behind commits on its own worker thread (an entry point embedded in
// the binary); a worker that could not be found would only show as a line on stderr and writes on the main
// connection, so the test looks for that line too.
describe("the compiled binary on a server database", () => {
  for (const kind of storageKinds().filter((k) => k !== "sqlite"))
    test(`${kind}: a call through the binary is logged and billed by its worker thread`, async () => {
      const tmp = await tempDatabase(kind);
      const p = await freePort();
      const b = `http://127.0.0.1:${p}`;
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? "",
        SQL_DSN: tmp.url,
        BATCH_UPDATE_INTERVAL: "200",
      };
      const child = Bun.spawn(
        [join(runDir, "switchyard"), "--port", String(p), "--data-dir", join(work, `db-${kind}`)],
        { cwd: work, env, stdout: "pipe", stderr: "pipe" },
      );
      let out = "";
      const dec = new TextDecoder();
      void (async () => {
        for await (const c of child.stderr as ReadableStream<Uint8Array>) out += dec.decode(c);
      })();
      void (async () => {
        for await (const c of child.stdout as ReadableStream<Uint8Array>) out += dec.decode(c);
      })();
      try {
        let up = false;
        for (let i = 0; i < 300 && !up; i++) {
          up = await fetch(`${b}/api/status`).then(
            (r) => r.ok,
            () => false,
          );
          if (!up) await Bun.sleep(50);
        }
        expect(up).toBe(true);
        const json = { "content-type": "application/json" };
        expect(
          (
            (await (
              await fetch(`${b}/api/setup`, {
                method: "POST",
                headers: json,
                body: JSON.stringify({ username: "root", password: "rootpass123", confirmPassword: "rootpass123" }),
              })
            ).json()) as any
          ).success,
        ).toBe(true);
        const login = await fetch(`${b}/api/user/login`, {
          method: "POST",
          headers: json,
          body: JSON.stringify({ username: "root", password: "rootpass123" }),
        });
        const who = ((await login.json()) as any).data.id;
        const as = {
          ...json,
          cookie: (login.headers.get("set-cookie") ?? "").split(";")[0],
          "New-Api-User": String(who),
        };
        const api = async (method: string, path: string, body?: unknown) =>
          (
            await fetch(b + path, { method, headers: as, body: body === undefined ? undefined : JSON.stringify(body) })
          ).json() as Promise<any>;
        expect(
          (
            await api("POST", "/api/channel/", {
              type: 1,
              name: "up",
              key: "sk-mock",
              models: MODEL,
              base_url: `http://127.0.0.1:${upstream.port}`,
            })
          ).success,
        ).toBe(true);
        expect((await api("POST", "/api/token/", { name: "db-token", unlimited_quota: true })).success).toBe(true);
        const key = (await api("GET", "/api/token/?p=1&size=10")).data.items.find(
          (t: any) => t.name === "db-token",
        ).key;
        const client = new OpenAI({ apiKey: key, baseURL: `${b}/v1`, maxRetries: 0, dangerouslyAllowBrowser: true });
        for (let i = 0; i < 3; i++) {
          const answer = await client.chat.completions.create({
            model: MODEL,
            messages: [{ role: "user", content: `call ${i}` }],
          });
          expect(answer.choices[0].message.content).toBe(ANSWER);
        }
        child.kill("SIGTERM");
        expect(await child.exited).toBe(0);
        const db = await openDatabase({ kind, url: tmp.url, sqlitePath: "" });
        try {
          const logs = await db.selectFrom("logs").select(["quota", "token_name"]).where("type", "=", 2).execute();
          expect(logs.length).toBe(3);
          expect(logs.every((l) => l.token_name === "db-token" && Number(l.quota) > 0)).toBe(true);
          const user = await db
            .selectFrom("users")
            .select(["used_quota", "request_count"])
            .where("username", "=", "root")
            .executeTakeFirstOrThrow();
          expect(Number(user.request_count)).toBe(3);
          expect(Number(user.used_quota)).toBe(logs.reduce((n, l) => n + Number(l.quota), 0));
        } finally {
          await db.destroy();
        }
        expect(out).not.toContain("worker failed");
        expect(out).not.toContain("could not start");
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL");
        await child.exited;
        await tmp.drop();
      }
    }, 60_000);
});
