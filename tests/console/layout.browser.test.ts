// Layout rules that only a real browser can check (Chromium against the running app, built console):
// table rows keep their actions on one line and never split a word (dates, names) across lines, and
// sidebar labels are shown whole in every language instead of ending in "...".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ARTIFACTS, builtConsole, launchChromium } from "../helpers/browser.ts";
import { testContext, ROOT_PASSWORD, type TestContext } from "../helpers/app.ts";
import { writeLog } from "../../server/modules/log/write.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";
import opsEn from "../../console/i18n/ops.en.ts";
import opsZh from "../../console/i18n/ops.zh.ts";
import opsRu from "../../console/i18n/ops.ru.ts";

const LANGUAGES = ["en", "zh", "ru"] as const;

let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let base = "";
let browser: Browser;
let context: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  const consoleDir = (await builtConsole()).dir;
  ctx = await testContext({ config: { consoleDir } as any });
  const root = await ctx.login("root", ROOT_PASSWORD);
  const as = { as: root };
  const seeded = await Promise.all([
    ctx.request("POST", "/api/channel/", {
      ...as,
      body: {
        mode: "single",
        channel: { type: 14, name: "claude-upstream-one", key: "sk-x", models: "claude-3-haiku", group: "default" },
      },
    }),
    ctx.request("POST", "/api/token/", {
      ...as,
      body: { name: "a token with a long name", remain_quota: 0, unlimited_quota: true, expired_time: -1 },
    }),
    ctx.request("POST", "/api/redemption/", { ...as, body: { name: "promo", count: 2, quota: 1000000 } }),
    ctx.request("POST", "/api/user/", {
      ...as,
      body: { username: "alice", password: "alicepass1", display_name: "Alice" },
    }),
  ]);
  for (const r of seeded) expect(r.body.success).toBe(true);
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => ctx.app.handle(req) });
  base = `http://127.0.0.1:${server.port}`;
  browser = await launchChromium();
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
});

async function useLanguage(lang: string) {
  await page.evaluate((l) => localStorage.setItem("i18nextLng", l), lang);
}

/** Per table row: how many distinct lines its action buttons occupy (1 = all side by side). */
function actionLines(p: Page): Promise<number[]> {
  return p.evaluate(() =>
    Array.from(document.querySelectorAll(".arco-table tbody tr")).map((tr) => {
      const cells = tr.querySelectorAll("td");
      const buttons = Array.from(cells[cells.length - 1]?.querySelectorAll("button") ?? []);
      // Lines, not pixels: a split button sits half a pixel off its neighbours.
      const tops = buttons.map((b) => b.getBoundingClientRect().top).sort((a, b) => a - b);
      return tops.filter((top, i) => i === 0 || top - tops[i - 1] > 4).length;
    }),
  );
}

/** Words (split at spaces and hyphens) in table cells that the browser drew across two lines. */
function brokenWords(p: Page): Promise<string[]> {
  return p.evaluate(() => {
    const out: string[] = [];
    const walker = document.createTreeWalker(
      document.querySelector(".arco-table tbody") ?? document.body,
      NodeFilter.SHOW_TEXT,
    );
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
      const clipped = await page.evaluate(() =>
        Array.from(document.querySelectorAll(".sy-sider .sy-side-label")).flatMap((el) => {
          // The label must fit the box that clips it (Arco's item inner, which ends in an ellipsis).
          const label = el.getBoundingClientRect();
          const box = (el.closest(".arco-menu-item-inner")
            ?? el.closest(".arco-menu-item, .arco-menu-inline-header"))!.getBoundingClientRect();
          return label.right > box.right + 0.5 || label.bottom > box.bottom + 0.5 || el.scrollWidth > el.clientWidth
            ? [el.textContent]
            : [];
        }),
      );
      expect(clipped).toEqual([]);
    }, 30_000);
  }
});

describe("phone width (390 px)", () => {
  for (const path of ["/personal", "/topup", "/channel/add", "/token", "/setting?tab=other"]) {
    test(`${path}: no input or button runs off the right edge`, async () => {
      await useLanguage("en");
      const phone = await browser.newContext({
        viewport: { width: 390, height: 800 },
        locale: "en-US",
        storageState: await context.storageState(),
      });
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
              if (a.classList.contains("arco-tabs-header-nav") || a.classList.contains("arco-tabs-content"))
                return true;
            }
            return false;
          };
          return Array.from(document.querySelectorAll(".sy-content input, .sy-content textarea, .sy-content button"))
            .filter((el) => {
              const r = el.getBoundingClientRect();
              return r.width > 0 && r.right > width + 1 && !reachable(el);
            })
            .map((el) => (el as HTMLInputElement).placeholder || el.textContent || el.tagName);
        });
        expect(offscreen).toEqual([]);
      } finally {
        await phone.close();
      }
    }, 30_000);
  }
});

describe("usage logs: Cost and Details in view without scrolling sideways", () => {
  const COST = { en: opsEn["ops.log.cost"], zh: opsZh["ops.log.cost"], ru: opsRu["ops.log.cost"] };
  const DETAILS = { en: opsEn["ops.log.details"], zh: opsZh["ops.log.details"], ru: opsRu["ops.log.details"] };
  let seeded = false;

  /** Rows as wide as real ones: long token and model names, six-decimal costs, retries, a top-up, an error. */
  async function seedLogs() {
    if (seeded) return;
    seeded = true;
    const root = await ctx.login("root", ROOT_PASSWORD);
    const alice = await ctx.login("alice", "alicepass1");
    const [key] = (
      await ctx.request("POST", "/api/redemption/", { as: root, body: { name: "logs", count: 1, quota: 5_000_000 } })
    ).body.data;
    expect((await ctx.request("POST", "/api/user/topup", { as: alice, body: { key } })).body.success).toBe(true);
    const now = Math.floor(Date.now() / 1000);
    const other = JSON.stringify({
      frt: 1234,
      model_ratio: 1.5,
      completion_ratio: 5,
      group_ratio: 1,
      admin_info: { use_channel: ["2", "1"] },
    });
    const models = ["claude-3-5-sonnet-20241022", "gpt-4o-mini", "gemini-1.5-pro-latest"];
    for (const [i, model] of models.entries()) {
      for (const u of [
        { id: root.id, name: "root" },
        { id: alice.id, name: "alice" },
      ]) {
        await writeLog(ctx.deps.db, {
          user_id: u.id,
          username: u.name,
          created_at: now - 60 * (i + 1),
          type: LOG_TYPE.consume,
          model_name: model,
          group: "default",
          token_name: i ? "playground" : "a token with a long name",
          quota: [123_456, 40, 98_765_432][i],
          prompt_tokens: [123_456, 12, 45_678][i],
          completion_tokens: [65_432, 5, 2345][i],
          use_time: [12, 1, 150][i],
          is_stream: i !== 2,
          channel_id: 1,
          other,
          content: "model ratio 1.5, completion ratio 5, group ratio 1",
        });
      }
    }
    await writeLog(ctx.deps.db, {
      user_id: alice.id,
      username: "alice",
      created_at: now - 30,
      type: LOG_TYPE.error,
      model_name: "gpt-4o-mini",
      token_name: "playground",
      channel_id: 1,
      use_time: 3,
      content: "upstream returned 429: rate limit reached for requests",
    });
    await writeLog(ctx.deps.db, {
      user_id: alice.id,
      username: "alice",
      created_at: now - 20,
      type: LOG_TYPE.manage,
      content: "admin changed the quota from $10.00 to $20.00",
    });
  }

  const cases = [
    ...LANGUAGES.map((lang) => ({ who: "admin", user: "root", password: ROOT_PASSWORD, width: 1440, lang })),
    ...LANGUAGES.map((lang) => ({ who: "user", user: "alice", password: "alicepass1", width: 1280, lang })),
  ];
  for (const c of cases) {
    test(`${c.who} at ${c.width} px [${c.lang}]: the Cost and Details headers end inside the viewport, no sideways scroll`, async () => {
      await seedLogs();
      const wide = await browser.newContext({ viewport: { width: c.width, height: 900 }, locale: "en-US" });
      try {
        const p = await wide.newPage();
        p.on("pageerror", (e) => pageErrors.push(String(e)));
        await p.goto(base + "/login");
        await p.evaluate((l) => localStorage.setItem("i18nextLng", l), c.lang);
        await p.fill('input[name="username"]', c.user);
        await p.fill('input[name="password"]', c.password);
        await p.keyboard.press("Enter");
        await p.waitForURL(/\/token$/);
        await p.goto(base + "/log");
        await p.locator(".arco-table tbody tr").nth(5).waitFor();
        await p.waitForTimeout(300);
        await p.screenshot({ path: join(ARTIFACTS, `layout-log-${c.who}-${c.width}-${c.lang}.png`), fullPage: true });
        const m = await p.evaluate(
          ({ cost, details }) => {
            const header = (text: string) =>
              Array.from(document.querySelectorAll(".arco-table thead th")).find(
                (th) => th.textContent?.trim() === text,
              );
            const inner = document.querySelector(".arco-table-content-inner")!;
            return {
              viewport: document.documentElement.clientWidth,
              box: inner.getBoundingClientRect().right,
              overflow: inner.scrollWidth - inner.clientWidth,
              cost: header(cost)?.getBoundingClientRect().right ?? Infinity,
              details: header(details)?.getBoundingClientRect().right ?? Infinity,
              credit: document.querySelector('[data-testid="credit"]')?.getBoundingClientRect().right ?? Infinity,
            };
          },
          { cost: COST[c.lang], details: DETAILS[c.lang] },
        );
        expect(m.box).toBeLessThanOrEqual(m.viewport);
        expect(m.cost).toBeLessThanOrEqual(m.box);
        expect(m.details).toBeLessThanOrEqual(m.box);
        expect(m.overflow).toBeLessThanOrEqual(0);
        // The top-up row shows the amount it added where the cost of a call would be.
        expect(m.credit).toBeLessThanOrEqual(m.box);
      } finally {
        await wide.close();
      }
    }, 60_000);
  }
});

test("no page errors", () => {
  expect(pageErrors).toEqual([]);
});
