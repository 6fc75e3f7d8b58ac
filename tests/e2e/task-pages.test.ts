// The drawing log and the creative task log in Chromium, against the real server (its own poller running)
// and mock midjourney-proxy and Suno upstreams whose tasks finish by themselves: a drawing and a song are
// submitted through the relay, the poller brings them to SUCCESS, and both pages show the finished task
// with its image and a full progress bar. Screenshots: tests/artifacts/task-midjourney.png, task-suno.png.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { buildConsole } from "../../scripts/build-console.ts";
import { ROOT, startServer, stopServer, type Running } from "../helpers/server-process.ts";
import { startMjMock, type MjMock } from "../mocks/midjourney-upstream.ts";
import { startSunoMock, type SunoMock } from "../mocks/suno-upstream.ts";
import { MJ_MODELS, SUNO_MODELS } from "../../server/catalogue/tasks.ts";

const ARTIFACTS = join(ROOT, "tests", "artifacts");
let work = "";
let server: Running;
let mj: MjMock;
let suno: SunoMock;
let browser: Browser;
let page: Page;
let drawingId = "";
let songId = "";

async function until<T>(what: string, read: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "sy-task-pages-"));
  const consoleDir = join(work, "console");
  mkdirSync(ARTIFACTS, { recursive: true });
  await buildConsole({ outDir: consoleDir });
  mj = startMjMock({ secret: "mj-secret", stepMs: 250 });
  suno = startSunoMock({ key: "suno-key", stepMs: 200 });
  server = await startServer(join(work, "data"), {
    CONSOLE_DIR: consoleDir,
    TASK_POLL_INTERVAL: "0.2",
    SESSION_SECRET: "task-pages",
  });
  const json = { "content-type": "application/json" };
  const base = server.base;
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
    cookie: (login.headers.get("set-cookie") ?? "").split(";")[0]!,
    "New-Api-User": String(user.id),
  };
  for (const ch of [
    { type: 2, name: "mj-mock", key: "mj-secret", base_url: mj.url, models: MJ_MODELS.join(",") },
    { type: 36, name: "suno-mock", key: "suno-key", base_url: suno.url, models: SUNO_MODELS.join(",") },
  ]) {
    const r = await fetch(`${base}/api/channel/`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ ...ch, group: "default" }),
    }).then((x) => x.json());
    if (!r.success) throw new Error(r.message);
  }
  const token = await fetch(`${base}/api/token/`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ name: "tasks", unlimited_quota: true, expired_time: -1 }),
  }).then((r) => r.json());
  if (!token.success) throw new Error(token.message);
  const key = token.data[0].key;
  const relay = (path: string, body: unknown) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { ...json, authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    }).then((r) => r.json());
  drawingId = (await relay("/mj/submit/imagine", { prompt: "a lighthouse at dusk" })).result;
  songId = (await relay("/suno/submit/music", { prompt: "a song about lighthouses" })).data;
  if (!drawingId || !songId) throw new Error("a submit was not taken");
  // The server's own poller (every 0.2 s) finishes both.
  const get = (path: string) => fetch(`${base}${path}`, { headers: auth }).then((r) => r.json());
  await until(
    "the drawing to succeed",
    async () => (await get(`/api/mj/?mj_id=${drawingId}`)).data?.[0]?.status === "SUCCESS",
  );
  await until(
    "the song to succeed",
    async () => (await get(`/api/task/?task_id=${songId}`)).data?.[0]?.status === "SUCCESS",
  );

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
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${base}/pricing`);
  await page.evaluate(async () => {
    const r = await fetch("/api/user/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "root", password: "rootpass123" }),
    });
    const j = await r.json();
    localStorage.setItem("user", JSON.stringify(j.data));
    localStorage.setItem("i18nextLng", "en");
    localStorage.setItem("theme-mode", "light");
  });
}, 120_000);

afterAll(async () => {
  await browser?.close().catch(() => {});
  await stopServer(server);
  await mj?.stop();
  await suno?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The row of a task id, its progress bar's percentage and whether its image has loaded. */
async function rowState(id: string, imageTestId: string) {
  return page.evaluate(
    ({ id, imageTestId }) => {
      const tr = [...document.querySelectorAll("tr")].find((x) => x.textContent?.includes(id));
      if (!tr) return null;
      const el = tr.querySelector(`[data-testid=${imageTestId}]`);
      const img = (el?.tagName === "IMG" ? el : el?.querySelector("img")) as HTMLImageElement | null;
      return {
        progress: tr.querySelector(".arco-progress")?.textContent?.trim() ?? "",
        status: tr.textContent ?? "",
        imageLoaded: !!img && img.complete && img.naturalWidth > 0,
        imageSrc: img?.getAttribute("src") ?? "",
      };
    },
    { id, imageTestId },
  );
}

describe("task log pages in Chromium", () => {
  test("the drawing log shows the finished drawing with its image and a full progress bar", async () => {
    await page.goto(`${server.base}/midjourney`);
    const s = await until("the drawing row with its image", async () => {
      const r = await rowState(drawingId, "mj-image");
      return r?.imageLoaded ? r : null;
    });
    expect(s.progress).toBe("100%");
    expect(s.status).toContain("Success");
    expect(s.imageSrc).toBe(`${mj.url}/img/${drawingId}.png`);
    await page.screenshot({ path: join(ARTIFACTS, "task-midjourney.png"), fullPage: true });
  }, 40_000);

  test("the task log shows the finished song with its cover image and a full progress bar", async () => {
    await page.goto(`${server.base}/task`);
    const s = await until("the song row with its cover", async () => {
      const r = await rowState(songId, "task-image");
      return r?.imageLoaded ? r : null;
    });
    expect(s.progress).toBe("100%");
    expect(s.status).toContain("Success");
    expect(s.status).toContain("Suno");
    expect(s.imageSrc).toBe(`${suno.url}/img/${songId}-1.png`);
    await page.screenshot({ path: join(ARTIFACTS, "task-suno.png"), fullPage: true });
  }, 40_000);
});
