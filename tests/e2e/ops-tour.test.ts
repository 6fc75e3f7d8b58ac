// A Chromium tour of the operations screens against the real server (built console served with
// --console-dir, SQLite in a temporary data dir) and a mock OpenAI upstream: add a channel, test it,
// create a token, stream a playground answer, find the call in the usage log and on the dashboard, and
// redeem a code in the wallet. Every screen is captured light and dark into tests/artifacts/.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { buildConsole } from "../../scripts/build-console.ts";

const ROOT = resolve(import.meta.dir, "../..");
const ARTIFACTS = join(ROOT, "tests", "artifacts");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const CHUNKS = ["Hello", " from", " the", " mock", " upstream."];
const ANSWER = CHUNKS.join("");

let work: string;
let consoleDir: string;
let dataDir: string;
let upstream: ReturnType<typeof Bun.serve>;
let server: ReturnType<typeof Bun.spawn> | null = null;
let port = 0;
let base = "";
let browser: Browser;
let page: Page;
const upstreamCalls: Array<{ path: string; body: any }> = [];

/** An OpenAI-shaped upstream: chat completions (streamed chunk by chunk, 250 ms apart) and a model list. */
function startUpstream() {
  return Bun.serve({
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/v1/models") {
        return Response.json({
          object: "list",
          data: [
            { id: "gpt-4o-mini", object: "model", owned_by: "mock" },
            { id: "mock-extra", object: "model", owned_by: "mock" },
          ],
        });
      }
      if (url.pathname !== "/v1/chat/completions") return new Response("not found", { status: 404 });
      const body = await req.json();
      upstreamCalls.push({ path: url.pathname, body });
      const usage = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 };
      if (!body.stream) {
        return Response.json({
          id: "chatcmpl-mock",
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
          usage,
        });
      }
      const enc = new TextEncoder();
      const frame = (o: unknown) => enc.encode(`data: ${JSON.stringify(o)}\n\n`);
      const stream = new ReadableStream({
        async start(ctrl) {
          for (const c of CHUNKS) {
            ctrl.enqueue(
              frame({
                id: "chatcmpl-mock",
                object: "chat.completion.chunk",
                model: body.model,
                choices: [{ index: 0, delta: { content: c }, finish_reason: null }],
              }),
            );
            await Bun.sleep(250);
          }
          ctrl.enqueue(
            frame({
              id: "chatcmpl-mock",
              object: "chat.completion.chunk",
              model: body.model,
              choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
              usage,
            }),
          );
          ctrl.enqueue(enc.encode("data: [DONE]\n\n"));
          ctrl.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
    },
  });
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, fetch: () => new Response("") });
  const p = s.port!;
  s.stop(true);
  return p;
}

async function startServer() {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    SESSION_SECRET: "ops-tour-secret",
    NODE_ENV: "production",
  };
  delete env.SQL_DSN;
  delete env.REDIS_CONN_STRING;
  server = Bun.spawn(
    [BUN, "server/main.ts", "--port", String(port), "--data-dir", dataDir, "--console-dir", consoleDir],
    {
      cwd: ROOT,
      env,
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  for (let i = 0; i < 150; i++) {
    try {
      const r = await fetch(`${base}/api/status`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await Bun.sleep(100);
  }
  throw new Error(`server did not start: ${await new Response(server.stderr as ReadableStream).text()}`);
}

async function stopServer() {
  if (!server) return;
  server.kill("SIGTERM");
  await server.exited;
  server = null;
}

/** Management call from inside the page, so it carries the session cookie like the console does. */
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

async function login() {
  await page.goto(`${base}/pricing`);
  await page.evaluate(async () => {
    const r = await fetch("/api/user/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "root", password: "rootpass123" }),
    });
    const j = await r.json();
    if (!j.success) throw new Error(j.message);
    localStorage.setItem("user", JSON.stringify(j.data));
    localStorage.setItem("i18nextLng", "en");
    localStorage.setItem("theme-mode", "light");
  });
}

const row = (text: string) => page.locator("tr", { hasText: text }).first();

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sy-ops-tour-"));
  consoleDir = join(work, "console");
  dataDir = join(work, "data");
  mkdirSync(ARTIFACTS, { recursive: true });
  await buildConsole({ outDir: consoleDir });
  upstream = startUpstream();
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  await startServer();
  const setup = await fetch(`${base}/api/setup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "root", password: "rootpass123", confirmPassword: "rootpass123" }),
  }).then((r) => r.json());
  if (!setup.success) throw new Error(`setup failed: ${setup.message}`);
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
  page = await browser.newPage({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
  await login();
  for (const [key, value] of [
    ["DataExportEnabled", "true"],
    ["DataExportInterval", "1"],
  ]) {
    const r = await apiInPage("PUT", "/api/option/", { key, value });
    if (!r.success) throw new Error(`option ${key}: ${r.message}`);
  }
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await stopServer().catch(() => {});
  upstream?.stop(true);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("operations tour in Chromium", () => {
  test("add a channel pointing at the mock upstream and test it", async () => {
    await page.goto(`${base}/channel`);
    await page.getByTestId("add-channel").click();
    await page.getByTestId("channel-name").fill("mock-openai");
    await page.getByTestId("channel-base-url").fill(`http://127.0.0.1:${upstream.port}`);
    await page.getByTestId("channel-key").fill("sk-upstream-secret");
    await page.getByTestId("channel-submit").click();
    const r = row("mock-openai");
    await r.waitFor({ timeout: 10_000 });
    expect(await r.getByTestId("response-time").textContent()).toBe("Not tested");
    await r.getByRole("button", { name: "Test" }).first().click();
    await page.waitForFunction(
      () => {
        const tr = [...document.querySelectorAll("tr")].find((x) => x.textContent?.includes("mock-openai"));
        return !!tr && /\d+\.\d\d s/.test(tr.querySelector("[data-testid=response-time]")?.textContent ?? "");
      },
      undefined,
      { timeout: 10_000 },
    );
    expect(upstreamCalls.length).toBeGreaterThanOrEqual(1);
  }, 40_000);

  test("create a token", async () => {
    await page.goto(`${base}/token`);
    await page.getByText("Tokens cannot precisely limit usage", { exact: false }).waitFor();
    await page.getByRole("button", { name: "Add token" }).click();
    await page.getByPlaceholder("A name for this token").fill("tour-token");
    await page.getByRole("button", { name: "Submit" }).click();
    await row("tour-token").waitFor({ timeout: 10_000 });
    const list = await apiInPage("GET", "/api/token/?p=1&size=10");
    expect(list.data.items.some((t: any) => t.name === "tour-token" && t.key.startsWith("sk-"))).toBe(true);
  }, 30_000);

  test("a playground message streams in: loading → incomplete → complete", async () => {
    await page.goto(`${base}/playground`);
    await page.getByTestId("pg-input").fill("Say hello");
    const seen: string[] = [];
    await page.exposeFunction("recordStatus", (s: string, text: string) => seen.push(`${s}:${text}`));
    await page.evaluate(() => {
      const box = document.querySelector("[data-testid=pg-messages]")!;
      new MutationObserver(() => {
        const m = box.querySelector("[data-testid=msg-assistant]");
        if (m) (window as any).recordStatus(m.getAttribute("data-status"), m.textContent ?? "");
      }).observe(box, { subtree: true, childList: true, attributes: true, characterData: true });
    });
    await page.getByTestId("pg-send").click();
    const answer = page.locator("[data-testid=msg-assistant][data-status=complete]");
    await answer.waitFor({ timeout: 15_000 });
    expect(await answer.textContent()).toContain(ANSWER);
    // Parts of the answer were on screen before it was complete.
    const partial = seen.filter((s) => s.startsWith("incomplete:"));
    expect(partial.length).toBeGreaterThanOrEqual(2);
    expect(partial.some((s) => s.includes("Hello") && !s.includes("upstream."))).toBe(true);
    const sent = upstreamCalls.at(-1)!.body;
    expect(sent.stream).toBe(true);
    expect(sent.messages.at(-1)).toEqual({ role: "user", content: "Say hello" });
    expect(sent.messages[0].role).toBe("system");
  }, 30_000);

  test("the call appears in the usage log with its model and tokens", async () => {
    await page.goto(`${base}/log`);
    const r = page.locator("tr", { hasText: "gpt-4o-mini" }).filter({ hasText: "Consumption" }).first();
    // The relay writes consume logs behind the response, so search again until the row is there.
    for (let i = 0; i < 20 && !(await r.isVisible()); i++) {
      await page.getByRole("button", { name: "Search" }).click();
      await page.waitForTimeout(500);
    }
    await r.waitFor({ timeout: 2_000 });
    expect(await r.textContent()).toContain("12");
    await page.getByTestId("log-stat").waitFor();
  }, 20_000);

  test("the dashboard charts the call after the usage is flushed (graceful restart)", async () => {
    // quota_data is written behind the relay; a graceful shutdown flushes it.
    await stopServer();
    await startServer();
    await login();
    await page.goto(`${base}/detail`);
    // recharts draws each stacked segment as a .recharts-bar-rectangle and names the series in its legend.
    const bars = page.locator("[data-testid=chart-quota] .recharts-bar-rectangle");
    await bars.first().waitFor({ timeout: 10_000 });
    // Bars grow in (a short animation); wait until the first one has been drawn with a size.
    await page.waitForFunction(
      () => {
        const r = document
          .querySelector("[data-testid=chart-quota] .recharts-bar-rectangle path")
          ?.getBoundingClientRect();
        return !!r && r.height > 0 && r.width > 0;
      },
      undefined,
      { timeout: 5_000 },
    );
    expect(await page.locator("[data-testid=chart-calls] .recharts-legend-item-text").allTextContents()).toContain(
      "gpt-4o-mini",
    );
    // The chart fills its card instead of staying at a fixed size.
    const surface = await page
      .locator("[data-testid=chart-calls] svg.recharts-surface[role=application]")
      .boundingBox();
    expect(surface!.width).toBeGreaterThan(600);
  }, 40_000);

  test("create a redemption code (downloaded as <name>.txt) and redeem it in the wallet", async () => {
    await page.goto(`${base}/redemption`);
    await page.getByRole("button", { name: "Add codes" }).click();
    await page.getByPlaceholder("Empty = the quota amount").fill("tour-code");
    const download = page.waitForEvent("download");
    await page.getByRole("button", { name: "Submit" }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe("tour-code.txt");
    const code = readFileSync(await file.path(), "utf8").trim();
    expect(code).toMatch(/^[A-Za-z0-9]{16,}$/);

    const before = (await apiInPage("GET", "/api/user/self")).data.quota;
    await page.goto(`${base}/topup`);
    await page.getByPlaceholder("Redemption code").fill(code);
    await page.getByRole("button", { name: "Redeem", exact: true }).click();
    await page.getByText("Redeemed:", { exact: false }).waitFor({ timeout: 10_000 });
    const after = (await apiInPage("GET", "/api/user/self")).data.quota;
    expect(after - before).toBe(100_000);
    const codes = await apiInPage("GET", "/api/redemption/?p=1&page_size=10");
    expect(codes.data.items.find((c: any) => c.name === "tour-code").status).toBe(3);
  }, 30_000);

  test("chat pages embed and redirect to the configured chat link with an enabled token and the server address", async () => {
    const template = `${base}/about?key={key}&server={address}`;
    const r = await apiInPage("PUT", "/api/option/", {
      key: "Chats",
      value: JSON.stringify([{ "Local chat": template }]),
    });
    expect(r.success).toBe(true);
    await page.goto(`${base}/pricing`); // reloads the status object, which carries the chat links
    await page.waitForFunction(() => (localStorage.getItem("chats") ?? "").includes("Local chat"));
    const token = (await apiInPage("GET", "/api/token/?p=1&size=10")).data.items.find(
      (t: any) => t.name === "tour-token",
    );
    const expected = template.replace("{key}", token.key).replace("{address}", encodeURIComponent(base));

    await page.goto(`${base}/chat/0`);
    const frame = page.getByTestId("chat-frame");
    await frame.waitFor({ timeout: 10_000 });
    expect(await frame.getAttribute("src")).toBe(expected);

    await page.goto(`${base}/chat2link`);
    await page.waitForURL((u) => u.pathname === "/about", { timeout: 10_000 });
    expect(page.url()).toBe(expected);
  }, 30_000);

  test("every operations screen renders, light and dark", async () => {
    const screens: Array<[string, string]> = [
      ["channel", "/channel"],
      ["channel-add", "/channel/add"],
      ["channel-edit", "/channel/edit/1"],
      ["token", "/token"],
      ["redemption", "/redemption"],
      ["topup", "/topup"],
      ["log", "/log"],
      ["detail", "/detail"],
      ["midjourney", "/midjourney"],
      ["task", "/task"],
      ["pricing", "/pricing"],
      ["playground", "/playground"],
      ["chat", "/chat/0"],
    ];
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    for (const theme of ["light", "dark"]) {
      await page.evaluate((t) => localStorage.setItem("theme-mode", t), theme);
      for (const [name, path] of screens) {
        await page.goto(`${base}${path}`);
        await page
          .locator(".sy-page, [data-testid=pg-panel], .arco-result, [data-testid=chat-frame]")
          .first()
          .waitFor({ timeout: 10_000 })
          .catch((e) => {
            throw new Error(`${path} (${theme}) did not render: ${e.message}`);
          });
        // The dashboard's bars grow in; let the animation finish before the picture.
        await page.waitForTimeout(name === "detail" ? 900 : 300);
        expect(await page.evaluate(() => document.body.getAttribute("arco-theme"))).toBe(
          theme === "dark" ? "dark" : null,
        );
        await page.screenshot({ path: join(ARTIFACTS, `ops-${name}-${theme}.png`), fullPage: true });
      }
    }
    expect(errors).toEqual([]);
  }, 120_000);
});
