// Layout rules that only a real browser can check (Chromium against the running app, built console):
// table rows keep their actions on one line and never split a word (dates, names) across lines, and
// sidebar labels are shown whole in every language instead of ending in "...".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { buildConsole } from "../../scripts/build-console.ts";
import { testContext, ROOT_PASSWORD, type TestContext } from "../helpers/app.ts";

const ARTIFACTS = join(resolve(import.meta.dir, "../.."), "tests", "artifacts");
const LANGUAGES = ["en", "zh", "ru"] as const;

let work: string;
let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let base = "";
let browser: Browser;
let context: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  work = mkdtempSync(join(tmpdir(), "sy-console-layout-"));
  const consoleDir = join(work, "console");
  await buildConsole({ outDir: consoleDir });
  ctx = await testContext({ config: { consoleDir } as any });
  const root = await ctx.login("root", ROOT_PASSWORD);
  const as = { as: root };
  const seeded = await Promise.all([
    ctx.request("POST", "/api/channel/", { ...as, body: { mode: "single", channel: { type: 14, name: "claude-upstream-one", key: "sk-x", models: "claude-3-haiku", group: "default" } } }),
    ctx.request("POST", "/api/token/", { ...as, body: { name: "a token with a long name", remain_quota: 0, unlimited_quota: true, expired_time: -1 } }),
    ctx.request("POST", "/api/redemption/", { ...as, body: { name: "promo", count: 2, quota: 1000000 } }),
    ctx.request("POST", "/api/user/", { ...as, body: { username: "alice", password: "alicepass1", display_name: "Alice" } }),
  ]);
  for (const r of seeded) expect(r.body.success).toBe(true);
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => ctx.app.handle(req) });
  base = `http://127.0.0.1:${server.port}`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 820 }, locale: "en-US" });
  page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto(base + "/login");
  await page.fill('input[name="username"]', "root");
  await page.fill('input[name="password"]', ROOT_PASSWORD);
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/token$/);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.stop(true);
  await ctx?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

async function useLanguage(lang: string) {
  await page.evaluate((l) => localStorage.setItem("i18nextLng", l), lang);
}

/** Per table row: how many distinct lines its action buttons occupy (1 = all side by side). */
function actionLines(p: Page): Promise<number[]> {
  return p.evaluate(() => Array.from(document.querySelectorAll(".arco-table tbody tr")).map((tr) => {
    const cells = tr.querySelectorAll("td");
    const buttons = Array.from(cells[cells.length - 1]?.querySelectorAll("button") ?? []);
    return new Set(buttons.map((b) => Math.round(b.getBoundingClientRect().top))).size;
  }));
}

/** Words (split at spaces and hyphens) in table cells that the browser drew across two lines. */
function brokenWords(p: Page): Promise<string[]> {
  return p.evaluate(() => {
    const out: string[] = [];
    const walker = document.createTreeWalker(document.querySelector(".arco-table tbody") ?? document.body, NodeFilter.SHOW_TEXT);
    let node: Node | null;
    while ((node = walker.nextNode())) {
      const text = node.textContent ?? "";
      for (const m of text.matchAll(/[^\s-]+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index!);
        range.setEnd(node, m.index! + m[0].length);
        const lines = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
        if (lines.size > 1) out.push(m[0]);
      }
    }
    return out;
  });
}

describe("tables", () => {
  for (const path of ["/channel", "/token", "/redemption", "/user"]) {
    for (const lang of ["en", "ru"]) {
      test(`${path} [${lang}]: row actions on one line, no word split across lines`, async () => {
        await useLanguage(lang);
        await page.goto(base + path);
        await page.locator(".arco-table tbody tr button").first().waitFor();
        await page.screenshot({ path: join(ARTIFACTS, `layout-${path.slice(1)}-${lang}.png`) });
        const lines = await actionLines(page);
        expect(lines.length).toBeGreaterThan(0);
        expect(lines.every((n) => n === 1)).toBe(true);
        expect(await brokenWords(page)).toEqual([]);
      }, 30_000);
    }
  }
});

describe("sidebar", () => {
  for (const lang of LANGUAGES) {
    test(`[${lang}] every label is shown whole`, async () => {
      await useLanguage(lang);
      await page.goto(base + "/token");
      await page.locator(".sy-sider .sy-side-label").first().waitFor();
      const clipped = await page.evaluate(() => Array.from(document.querySelectorAll(".sy-sider .sy-side-label")).flatMap((el) => {
        // The label must fit the box that clips it (Arco's item inner, which ends in an ellipsis).
        const label = el.getBoundingClientRect();
        const box = (el.closest(".arco-menu-item-inner") ?? el.closest(".arco-menu-item, .arco-menu-inline-header"))!.getBoundingClientRect();
        return label.right > box.right + 0.5 || label.bottom > box.bottom + 0.5 || el.scrollWidth > el.clientWidth ? [el.textContent] : [];
      }));
      expect(clipped).toEqual([]);
    }, 30_000);
  }
});

describe("phone width (390 px)", () => {
  for (const path of ["/personal", "/topup", "/channel/add", "/token", "/setting?tab=other"]) {
    test(`${path}: no input or button runs off the right edge`, async () => {
      await useLanguage("en");
      const phone = await browser.newContext({ viewport: { width: 390, height: 800 }, locale: "en-US", storageState: await context.storageState() });
      try {
        const p = await phone.newPage();
        p.on("pageerror", (e) => pageErrors.push(String(e)));
        await p.goto(base + path);
        await p.locator(".sy-content input, .sy-content textarea").first().waitFor();
        await p.waitForTimeout(300);
        await p.screenshot({ path: join(ARTIFACTS, `layout-phone-${path.slice(1).replace(/[/?=]/g, "-")}.png`) });
        const offscreen = await p.evaluate(() => {
          const width = document.documentElement.clientWidth;
          // A control inside a box that scrolls sideways (tables, tab bars) is reachable; anything else must fit.
          const reachable = (el: Element) => {
            for (let a = el.parentElement; a; a = a.parentElement) {
              const o = getComputedStyle(a).overflowX;
              if ((o === "auto" || o === "scroll") && a.getBoundingClientRect().right <= width + 1) return true;
              if (a.classList.contains("arco-tabs-header-nav") || a.classList.contains("arco-tabs-content")) return true;
            }
            return false;
          };
          return Array.from(document.querySelectorAll(".sy-content input, .sy-content textarea, .sy-content button"))
            .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.right > width + 1 && !reachable(el); })
            .map((el) => (el as HTMLInputElement).placeholder || el.textContent || el.tagName);
        });
        expect(offscreen).toEqual([]);
      } finally {
        await phone.close();
      }
    }, 30_000);
  }
});

test("no page errors", () => {
  expect(pageErrors).toEqual([]);
});
