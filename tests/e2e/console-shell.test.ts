// The console in real Chromium against the real server: first visit → setup wizard → login →
// a settings change that persists → language and theme switch → a normal user cannot see admin pages.
// The console is built with scripts/build-console.ts and served by the app's own console plugin
// (--console-dir); every screen is captured into tests/artifacts/.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { buildConsole } from "../../scripts/build-console.ts";
import { testContext, type TestContext } from "../helpers/app.ts";

const ROOT = resolve(import.meta.dir, "../..");
const ARTIFACTS = join(ROOT, "tests", "artifacts");
const ADMIN = { username: "admin", password: "adminpass123" };

let work: string;
let consoleDir: string;
let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let base = "";
let browser: Browser;
let context: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

async function shot(name: string, p: Page = page) {
  await p.waitForTimeout(250);
  await p.screenshot({ path: join(ARTIFACTS, `console-${name}.png`), fullPage: false });
}

async function newPage(c: BrowserContext): Promise<Page> {
  const p = await c.newPage();
  p.on("pageerror", (e) => pageErrors.push(String(e)));
  return p;
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  work = mkdtempSync(join(tmpdir(), "sy-console-e2e-"));
  consoleDir = join(work, "console");
  await buildConsole({ outDir: consoleDir });
  ctx = await testContext({ setup: false, config: { consoleDir } as any });
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => ctx.app.handle(req) });
  base = `http://127.0.0.1:${server.port}`;
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
  context = await browser.newContext({ viewport: { width: 1280, height: 820 }, locale: "en-US" });
  page = await newPage(context);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.stop(true);
  await ctx?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("console in Chromium", () => {
  test("first visit goes to the setup wizard, which creates the admin, signs them in and reloads into the console", async () => {
    await page.goto(base + "/pricing");
    await page.waitForURL(/\/setup$/);
    await page.getByText("First-run setup").waitFor();
    await shot("setup");
    await page.getByRole("button", { name: "Initialise the system" }).click();
    await page.getByText("The username cannot be empty").waitFor();
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await page.fill('input[name="confirmPassword"]', ADMIN.password);
    await page.getByRole("button", { name: "Initialise the system" }).click();
    await page.getByText("System initialised").first().waitFor();
    await page.waitForURL(base + "/channel", { timeout: 10_000 });
    await page.waitForLoadState("networkidle");
    expect(await page.evaluate(() => JSON.parse(localStorage.getItem("user") ?? "null")?.username)).toBe(
      ADMIN.username,
    );
    // Signed out again, so the login page below starts from a guest.
    await page.evaluate(() => fetch("/api/user/logout").then(() => localStorage.removeItem("user")));
    await page.goto(base + "/");
    const row = await ctx.deps.db
      .selectFrom("users")
      .select(["username", "role"])
      .where("username", "=", ADMIN.username)
      .executeTakeFirst();
    expect(row?.role).toBe(100);
    await shot("home");
  }, 60_000);

  test("the login page does not load the settings editors or the chart library", async () => {
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 820 }, locale: "en-US" });
    const p = await newPage(fresh);
    const scripts: string[] = [];
    p.on("request", (r) => r.resourceType() === "script" && scripts.push(new URL(r.url()).pathname));
    await p.goto(base + "/login");
    await p.getByPlaceholder("Username or email").waitFor();
    await p.waitForLoadState("networkidle");
    const settingsChunks = readdirSync(join(consoleDir, "assets"))
      .filter((f) => f.endsWith(".js"))
      .filter((f) => readFileSync(join(consoleDir, "assets", f), "utf8").includes("ModelRequestRateLimitGroup"));
    expect(settingsChunks.length).toBeGreaterThan(0);
    for (const chunk of settingsChunks) expect(scripts).not.toContain(`/assets/${chunk}`);
    // The dashboard's chart library (recharts) lives in the /detail chunk only.
    const chartChunks = readdirSync(join(consoleDir, "assets"))
      .filter((f) => f.endsWith(".js"))
      .filter((f) => readFileSync(join(consoleDir, "assets", f), "utf8").includes("recharts-bar-rectangle"));
    expect(chartChunks.length).toBeGreaterThan(0);
    for (const chunk of chartChunks) expect(scripts).not.toContain(`/assets/${chunk}`);
    await fresh.close();
  }, 30_000);

  test("login validates, then lands on /token", async () => {
    await page.goto(base + "/login");
    await page.getByPlaceholder("Username or email").waitFor();
    await page.locator("form").getByRole("button", { name: "Log in" }).click();
    expect(await page.getByText("Please enter username and password").count()).toBe(2);
    await shot("login");
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await page.locator("form").getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(/\/token$/);
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem("user") ?? "null"));
    expect(stored.username).toBe(ADMIN.username);
  }, 30_000);

  test("a settings change is saved and survives a reload", async () => {
    await page.goto(base + "/setting");
    const retry = page.locator('input[name="RetryTimes"]');
    await retry.waitFor();
    await shot("setting-operation");
    await retry.fill("3");
    await page.getByRole("button", { name: "Save General" }).click();
    await page.getByText("Saved", { exact: true }).first().waitFor();
    expect(ctx.deps.options.get("RetryTimes")).toBe("3");
    await page.reload();
    await page.locator('input[name="RetryTimes"]').waitFor();
    expect(await page.locator('input[name="RetryTimes"]').inputValue()).toBe("3");
    await page.getByRole("button", { name: "Save General" }).click();
    await page.getByText("You don't seem to have changed anything").waitFor();

    await page.goto(base + "/setting?tab=other");
    await page.locator('input[name="SystemName"]').fill("Yard E2E");
    await page.getByRole("button", { name: "Save System name" }).click();
    await page.getByText("System name updated").waitFor();
    expect(ctx.deps.options.get("SystemName")).toBe("Yard E2E");
    await page.reload();
    await page.locator(".sy-brand-name", { hasText: "Yard E2E" }).waitFor();
    await shot("setting-other");
    await page.goto(base + "/setting");
    await page.locator(".arco-tabs-header-title-text", { hasText: "Visual ratio editor" }).click();
    await page.locator(".arco-table tbody tr").first().waitFor();
    await shot("setting-visual-pricing");
    for (const tab of ["ratelimit", "models", "system"]) {
      await page.goto(`${base}/setting?tab=${tab}`);
      await page.locator(".sy-option-section").first().waitFor();
      await shot(`setting-${tab}`);
    }
  }, 60_000);

  test("language and theme switch, and both are remembered", async () => {
    await page.goto(base + "/personal");
    await page.getByText("Personal settings", { exact: true }).first().waitFor();
    await page.getByTestId("language-menu").click();
    await page.getByText("Русский").click();
    await page.getByText("Личные настройки").first().waitFor();
    expect(await page.evaluate(() => localStorage.getItem("i18nextLng"))).toBe("ru");
    expect(await page.evaluate(() => document.documentElement.lang)).toBe("ru");
    await page.getByTestId("theme-toggle").click();
    expect(await page.evaluate(() => document.body.getAttribute("arco-theme"))).toBe("dark");
    expect(await page.evaluate(() => localStorage.getItem("theme-mode"))).toBe("dark");
    await page.reload();
    await page.getByText("Личные настройки").first().waitFor();
    expect(await page.evaluate(() => document.body.getAttribute("arco-theme"))).toBe("dark");
    await shot("personal-ru-dark");
    await page.goto(base + "/user");
    await page.locator(".arco-table tbody tr").first().waitFor();
    await shot("users-ru-dark");
    await page.getByTestId("language-menu").click();
    await page.getByText("中文").click();
    await page.getByText("用户管理").first().waitFor();
    await shot("users-zh-dark");
    await page.getByTestId("language-menu").click();
    await page.getByText("English").click();
    await page.getByTestId("theme-toggle").click();
    expect(await page.evaluate(() => document.body.getAttribute("arco-theme"))).toBeNull();
    await page.getByText("Users", { exact: true }).first().waitFor();
    await shot("users");
  }, 60_000);

  test("a normal user cannot see admin pages", async () => {
    const r = await ctx.request("POST", "/api/user/login", { body: ADMIN });
    const admin = { cookie: (r.headers.get("set-cookie") ?? "").split(";")[0], id: r.body.data.id };
    const created = await ctx.request("POST", "/api/user/", {
      body: { username: "alice", password: "alicepass1", display_name: "Alice" },
      headers: { cookie: admin.cookie, "New-Api-User": String(admin.id) },
    });
    expect(created.body.success).toBe(true);
    const userContext = await browser.newContext({ viewport: { width: 1280, height: 820 }, locale: "en-US" });
    const p = await newPage(userContext);
    await p.goto(base + "/login");
    await p.fill('input[name="username"]', "alice");
    await p.fill('input[name="password"]', "alicepass1");
    await p.locator("form").getByRole("button", { name: "Log in" }).click();
    await p.waitForURL(/\/token$/);
    await p.goto(base + "/personal");
    await p.getByText("Available models").waitFor();
    const sider = p.locator(".sy-sider");
    expect(await sider.getByText("API tokens").count()).toBe(1);
    expect(await sider.getByText("Channels").count()).toBe(0);
    expect(await sider.getByText("System settings").count()).toBe(0);
    await shot("personal-user", p);
    for (const path of ["/setting", "/user", "/channel", "/redemption"]) {
      await p.goto(base + path);
      await p.getByText("The page does not exist, please check the address").waitFor();
    }
    await shot("admin-denied", p);
    // Even with the page forced open, the API refuses the options to a normal user.
    const status = await p.evaluate(async () => {
      const u = JSON.parse(localStorage.getItem("user")!);
      return (await fetch("/api/option/", { headers: { "New-Api-User": String(u.id) } })).status;
    });
    expect(status).toBe(403);
    await userContext.close();
  }, 60_000);

  test("on a phone-sized screen the register button is hidden and the page fits", async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 800 }, locale: "ru-RU" });
    const p = await newPage(phone);
    await p.goto(base + "/login");
    await p.getByPlaceholder("Имя пользователя или e-mail").waitFor();
    expect(await p.locator(".sy-topbar-right").getByText("Регистрация").count()).toBe(0);
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shot("login-mobile-ru", p);
    await phone.close();
  }, 30_000);

  test("no uncaught errors in the page", () => {
    expect(pageErrors).toEqual([]);
  });
});
