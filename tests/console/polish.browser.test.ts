// The console as an operator, a user and a guest meet it in Chromium, against the real server
// with a mock OpenAI upstream: every route renders in en, zh, ru and dark mode without script errors or
// raw i18n keys; every table reads at 1440, 1280 and 390 px in the three languages (no sideways scroll,
// no column under another, no text out of its cell); test all channels shows live progress and failures;
// playground replies render Markdown; the wallet with online top-up off; log details in the reader's
// language; the date-range presets; setup signs the new admin in; the sidebar at every width; the
// console's weight and a cold /log. Screens go to tests/artifacts/polish-*.png.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import {
  ARTIFACTS,
  builtConsole,
  launchChromium,
  settledWhenQuiet,
  signedInPage,
  visit,
  watchErrors,
} from "../helpers/browser.ts";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { writeLog } from "../../server/modules/log/write.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";

const LANGS = ["en", "zh", "ru"] as const;
const ROOT_USER = { username: "root", password: ROOT_PASSWORD };
const ALICE = { username: "alice", password: "alicepass1" };
const REPLY = "Here is **bold** text.\n\n| model | price |\n|---|---|\n| a | 1 |\n\n```python\nprint('hi')\n```\n";

let ctx: TestContext;
let root: Session;
let server: ReturnType<typeof Bun.serve>;
let upstream: ReturnType<typeof Bun.serve>;
let base = "";
let consoleDir = "";
let browser: Browser;
const errors: string[] = [];

/** An OpenAI-style upstream: /ok answers (streams slowly), /slow answers after 2 s, /bad refuses the key. */
function startUpstream() {
  const enc = new TextEncoder();
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 60,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path.startsWith("/bad"))
        return Response.json(
          { error: { message: "invalid api key provided", type: "invalid_request_error" } },
          { status: 401 },
        );
      if (path.endsWith("/dashboard/billing/subscription")) return Response.json({ hard_limit_usd: 50 });
      if (path.endsWith("/dashboard/billing/usage")) return Response.json({ total_usage: 1234 });
      if (!path.endsWith("/chat/completions")) return new Response("not found", { status: 404 });
      if (path.startsWith("/slow")) await Bun.sleep(2000);
      const body = (await req.json()) as { model: string; stream?: boolean };
      const usage = { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 };
      if (!body.stream) {
        return Response.json({
          id: "c",
          object: "chat.completion",
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
          usage,
        });
      }
      const frame = (o: unknown) => enc.encode(`data: ${JSON.stringify(o)}\n\n`);
      return new Response(
        new ReadableStream({
          async start(c) {
            for (const piece of REPLY.match(/[\s\S]{1,6}/g)!) {
              c.enqueue(
                frame({
                  id: "c",
                  object: "chat.completion.chunk",
                  model: body.model,
                  choices: [{ index: 0, delta: { content: piece } }],
                }),
              );
              await Bun.sleep(40);
            }
            c.enqueue(
              frame({
                id: "c",
                object: "chat.completion.chunk",
                model: body.model,
                choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
                usage,
              }),
            );
            c.enqueue(enc.encode("data: [DONE]\n\n"));
            c.close();
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  });
}

beforeAll(async () => {
  consoleDir = (await builtConsole()).dir;
  upstream = startUpstream();
  const U = `http://127.0.0.1:${upstream.port}`;
  ctx = await testContext({ config: { consoleDir } as any });
  root = await ctx.login("root", ROOT_PASSWORD);
  const as = { as: root };
  for (const [key, value] of [
    ["DataExportEnabled", "true"],
    ["DrawingEnabled", "true"],
    ["LogConsumeEnabled", "true"],
    ["Chats", JSON.stringify([{ "ChatGPT Next Web": "https://chat.example/#/?key={key}" }])],
  ]) {
    expect((await ctx.request("PUT", "/api/option/", { ...as, body: { key, value } })).body.success).toBe(true);
  }
  // Channels as wide as real ones: long names, tags in three scripts, several groups; two slow, two refused.
  const channels = [
    {
      name: "OpenAI primary production upstream (us-east)",
      base_url: `${U}/ok`,
      tag: "production-main",
      group: "default,vip",
    },
    { name: "openai-backup", base_url: `${U}/ok`, tag: "生产环境主线路", group: "default" },
    { name: "slow-one", base_url: `${U}/slow`, tag: "Резервные каналы", group: "slow" },
    { name: "slow-two", base_url: `${U}/slow`, group: "slow" },
    { name: "broken-key", base_url: `${U}/bad`, group: "bad" },
    { name: "Anthropic Claude via proxy", base_url: `${U}/bad`, group: "bad,vip,svip" },
  ];
  for (const c of channels) {
    const r = await ctx.request("POST", "/api/channel/", {
      ...as,
      body: { mode: "single", channel: { type: 1, key: "sk-upstream", models: "gpt-4o-mini,gpt-4o", ...c } },
    });
    expect(r.body.success).toBe(true);
  }
  expect(
    (await ctx.request("POST", "/api/user/", { ...as, body: { ...ALICE, display_name: "Alice Liddell" } })).body
      .success,
  ).toBe(true);
  for (const name of ["token for the office laptop", "ci"]) {
    expect(
      (
        await ctx.request("POST", "/api/token/", {
          ...as,
          body: { name, remain_quota: 500000, unlimited_quota: name === "ci", expired_time: -1 },
        })
      ).body.success,
    ).toBe(true);
  }
  expect(
    (
      await ctx.request("POST", "/api/redemption/", {
        ...as,
        body: { name: "spring promotion", count: 3, quota: 1_000_000 },
      })
    ).body.success,
  ).toBe(true);
  const alice = await ctx.login(ALICE.username, ALICE.password);
  const [code] = (
    await ctx.request("POST", "/api/redemption/", { ...as, body: { name: "alice", count: 1, quota: 5_000_000 } })
  ).body.data;
  expect((await ctx.request("POST", "/api/user/topup", { as: alice, body: { key: code } })).body.success).toBe(true);
  const now = Math.floor(Date.now() / 1000);
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
        token_name: i ? "ci" : "token for the office laptop",
        quota: [123_456, 40, 98_765_432][i],
        prompt_tokens: [123_456, 12, 45_678][i],
        completion_tokens: [65_432, 5, 2345][i],
        use_time: [12, 1, 150][i],
        is_stream: i !== 2,
        channel_id: 1,
        other: JSON.stringify({
          frt: 1234,
          model_ratio: 1.25,
          completion_ratio: 4,
          group_ratio: 1.5,
          model_price: -1,
          cache_tokens: i === 0 ? 12_000 : 0,
          cache_ratio: 0.1,
          admin_info: { use_channel: ["2", "1"] },
        }),
        content: "model ratio 1.25, completion ratio 4, group ratio 1.5",
      });
    }
  }
  await writeLog(ctx.deps.db, {
    user_id: alice.id,
    username: "alice",
    created_at: now - 30,
    type: LOG_TYPE.error,
    model_name: "gpt-4o-mini",
    token_name: "ci",
    channel_id: 1,
    use_time: 3,
    content: "upstream returned 429: rate limit reached for requests",
    other: JSON.stringify({ status_code: 429 }),
  });
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => ctx.app.handle(req) });
  base = `http://127.0.0.1:${server.port}`;
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  server?.stop(true);
  upstream?.stop(true);
  await ctx?.close();
});

const shot = (p: Page, name: string, fullPage = false) =>
  p.screenshot({ path: join(ARTIFACTS, `polish-${name}.png`), fullPage });

async function contextAt(
  width: number,
  who: typeof ROOT_USER | null,
  lang: string,
  theme: "light" | "dark" = "light",
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: width < 600 ? 844 : 900 }, locale: "en-US" });
  const page = await signedInPage(context, base, who, { lang, theme, errors });
  return { context, page };
}

/** Raw i18n keys on screen mean a missing translation. */
const rawKeys = (p: Page) =>
  p.evaluate(() => [
    ...(document.body.innerText.match(
      /\b(?:ops|nav|side|common|users|personal|settings|setting|setup|login|register|auth|error|pricing|home|about|twofa|passkey|keyView)\.[A-Za-z][\w.]*/g,
    ) ?? []),
  ]);

describe("every route renders, in every language and in dark mode", () => {
  const ADMIN_ROUTES = [
    "/",
    "/pricing",
    "/about",
    "/token",
    "/log",
    "/detail",
    "/midjourney",
    "/task",
    "/playground",
    "/topup",
    "/personal",
    "/channel",
    "/channel/add",
    "/redemption",
    "/user",
    "/setting",
    "/setting?tab=ratelimit",
    "/setting?tab=models",
    "/setting?tab=system",
    "/setting?tab=other",
    "/chat/0",
  ];
  // Dark mode is the same screens in other colours: a sample of them is enough.
  const DARK_ROUTES = ["/", "/token", "/log", "/playground", "/topup", "/channel", "/setting"];
  const cases = [
    ...LANGS.map((lang) => ({ lang, theme: "light" as const, routes: ADMIN_ROUTES })),
    { lang: "en", theme: "dark" as const, routes: DARK_ROUTES },
  ];
  for (const c of cases) {
    test(`[${c.lang}, ${c.theme}] as the admin: each route shows its screen, no raw keys, no script errors`, async () => {
      const { context, page } = await contextAt(1440, ROOT_USER, c.lang, c.theme);
      const settled = settledWhenQuiet(page, base);
      try {
        for (const route of c.routes) {
          const before = errors.length;
          await visit(page, base, route);
          await page.locator(".sy-content > *").first().waitFor({ timeout: 10_000 });
          // The screen's code and its first answers (lists, options).
          await settled();
          expect(await page.locator(".sy-content").innerText(), route).not.toContain("The page does not exist");
          expect(await rawKeys(page), route).toEqual([]);
          expect(errors.slice(before), route).toEqual([]);
        }
        if (c.theme === "dark") {
          await page.goto(base + "/channel");
          await page.locator(".sy-rtable tbody tr td").nth(3).waitFor();
          expect(await page.evaluate(() => document.body.getAttribute("arco-theme"))).toBe("dark");
          await shot(page, "dark-channel");
        }
      } finally {
        await context.close();
      }
    }, 120_000);
  }

  test("as a user and as a guest: their routes render; admin routes are not theirs", async () => {
    for (const [who, routes] of [
      [ALICE, ["/token", "/log", "/topup", "/personal", "/playground", "/pricing"]],
      [null, ["/", "/pricing", "/about", "/login", "/register"]],
    ] as const) {
      const { context, page } = await contextAt(1280, who, "ru");
      const settled = settledWhenQuiet(page, base);
      try {
        for (const route of routes) {
          await visit(page, base, route);
          await page.locator(".sy-content > *").first().waitFor();
          await settled();
          expect(await rawKeys(page), route).toEqual([]);
        }
        if (who) {
          await page.goto(base + "/channel");
          await page.getByText("Страница не существует", { exact: false }).first().waitFor();
        }
      } finally {
        await context.close();
      }
    }
  }, 60_000);
});

/** Everything that makes a table unreadable, as sentences (empty = fine). */
function layoutProblems(p: Page): Promise<string[]> {
  return p.evaluate(() => {
    const out: string[] = [];
    const vw = document.documentElement.clientWidth;
    const over = document.documentElement.scrollWidth - vw;
    if (over > 1) out.push(`the page scrolls sideways by ${over}px`);
    for (const box of document.querySelectorAll<HTMLElement>(".sy-rtable")) {
      const table = box.querySelector("table");
      if (!table) continue;
      const b = box.getBoundingClientRect();
      const tw = table.getBoundingClientRect().width;
      if (tw > b.width + 1) out.push(`the table is ${Math.round(tw - b.width)}px wider than its card`);
      if (b.right > vw + 1) out.push("the table ends past the window");
      const ths = [...table.querySelectorAll<HTMLElement>("thead th")].filter(
        (th) => th.getBoundingClientRect().width > 0,
      );
      for (let i = 0; i < ths.length; i++) {
        const a = ths[i].getBoundingClientRect();
        if (a.right > b.right + 1) out.push(`column "${ths[i].innerText}" is past the card's edge`);
        for (let j = i + 1; j < ths.length; j++) {
          const c = ths[j].getBoundingClientRect();
          if (a.right > c.left + 1 && c.right > a.left + 1)
            out.push(`column "${ths[i].innerText}" lies under "${ths[j].innerText}"`);
        }
        if (ths[i].scrollWidth > ths[i].clientWidth + 1) out.push(`header "${ths[i].innerText}" overflows its cell`);
      }
      for (const td of table.querySelectorAll<HTMLElement>("tbody td")) {
        if (td.scrollWidth > td.clientWidth + 1)
          out.push(`"${td.innerText.slice(0, 40)}" overflows its cell by ${td.scrollWidth - td.clientWidth}px`);
      }
    }
    return out;
  });
}

describe("tables read at 1440, 1280 and 390 px in en, zh and ru", () => {
  const PAGES = ["/channel", "/token", "/redemption", "/user", "/log", "/midjourney", "/task", "/pricing"];
  for (const width of [1440, 1280, 390]) {
    for (const lang of LANGS) {
      test(`${width} px [${lang}]: no sideways scroll, no column under another, no text out of its cell`, async () => {
        const { context, page } = await contextAt(width, ROOT_USER, lang);
        const settled = settledWhenQuiet(page, base);
        try {
          for (const path of PAGES) {
            await visit(page, base, path);
            await settled();
            await page.locator(".sy-rtable table").first().waitFor();
            if (!["/midjourney", "/task"].includes(path)) await page.locator(".sy-rtable tbody tr td").nth(2).waitFor();
            await settled();
            if (["/channel", "/log", "/token", "/user"].includes(path))
              await shot(page, `${path.slice(1)}-${width}-${lang}`);
            expect(await layoutProblems(page), `${path} at ${width} px [${lang}]`).toEqual([]);
          }
          // On a phone the columns that matter stay, the rest is one tap away, and actions are a menu.
          if (width === 390) {
            await page.goto(base + "/channel");
            const row = page.locator(".sy-rtable tbody tr").first();
            await row.locator("td").nth(2).waitFor();
            expect(await row.locator(".sy-clip").first().isVisible()).toBe(true);
            expect(await row.getByTestId("channel-status").isVisible()).toBe(true);
            expect(await row.getByTestId("row-more").isVisible()).toBe(true);
            await row.locator(".arco-table-expand-icon-cell button").click();
            await page.getByTestId("row-details").first().waitFor();
            await row.getByTestId("row-more").click();
            await page.locator(".arco-dropdown-menu-item").first().waitFor();
            await shot(page, `channel-phone-menu-${lang}`);
          }
        } finally {
          await context.close();
        }
      }, 120_000);
    }
  }
});

describe("test all channels: live progress and visible failures", () => {
  test("the banner counts done / total while the run goes on, rows change as results arrive, failures are red with their reason", async () => {
    const { context, page } = await contextAt(1440, ROOT_USER, "en");
    try {
      await page.goto(base + "/channel");
      await page.locator(".sy-rtable tbody tr td").nth(3).waitFor();
      await page.getByTestId("test-all").click();
      const summary = page.getByTestId("run-test-summary");
      await summary.waitFor();
      // While the slow channels are still out, the banner says how far it is.
      await page.waitForFunction(() =>
        /Testing channels: \d+ \/ 6 done/.test(
          document.querySelector("[data-testid=run-test-summary]")?.textContent ?? "",
        ),
      );
      expect(await page.getByTestId("run-test").getAttribute("data-running")).toBe("true");
      await page.waitForFunction(() =>
        document.querySelector("[data-testid=run-test-failures]")?.textContent?.includes("invalid api key provided"),
      );
      await shot(page, "test-all-running");
      await page.locator("[data-testid=run-test][data-running=false]").waitFor({ timeout: 20_000 });
      expect(await summary.textContent()).toBe("Tested 6 channel(s): 4 passed, 2 failed");
      const row = (name: string) =>
        page.locator(".sy-rtable tbody tr", { has: page.locator(`.sy-clip[title="${name}"]`) });
      const failed = row("broken-key").getByTestId("response-time");
      expect(await failed.textContent()).toBe("Failed");
      expect(await failed.getAttribute("class")).toContain("red");
      expect(await row("openai-backup").getByTestId("response-time").textContent()).toMatch(/^\d+\.\d\d s$/);
      // 2 s is past 1 s: lime, per spec 001 §9.
      expect(await row("slow-one").getByTestId("response-time").getAttribute("class")).toContain("lime");
      await failed.hover();
      expect(await page.getByTestId("test-reason").textContent()).toContain("invalid api key provided");
      await shot(page, "test-all-done");
      // After a reload the failure is still there.
      await page.reload();
      await row("broken-key").getByTestId("response-time").waitFor();
      expect(await row("broken-key").getByTestId("response-time").textContent()).toBe("Failed");
      // Update all balances reports per channel too.
      await page.getByTestId("update-all-balances").click();
      await page.locator("[data-testid=run-balance][data-running=false]").waitFor({ timeout: 20_000 });
      expect(await page.getByTestId("run-balance-summary").textContent()).toContain("4 updated, 2 failed");
      expect(await row("openai-backup").getByTestId("balance").textContent()).toBe("$37.66");
    } finally {
      await context.close();
    }
  }, 60_000);
});

describe("playground", () => {
  for (const width of [1440, 390]) {
    test(`${width} px: the input sits at the bottom, the reply streams with Stop offered, then renders as Markdown with a copy button`, async () => {
      const { context, page } = await contextAt(width, ROOT_USER, "en");
      try {
        await page.goto(base + "/playground");
        const input = page.locator("[data-testid=pg-input]");
        await input.waitFor();
        const vh = page.viewportSize()!.height;
        const composer = await page.locator(".sy-pg-composer").boundingBox();
        expect(vh - (composer!.y + composer!.height)).toBeLessThan(24);
        await input.fill("Show me some markdown");
        await page.keyboard.press("Enter");
        await page.getByTestId("pg-stop").waitFor();
        await page.locator("[data-testid=msg-assistant][data-status=complete]").waitFor({ timeout: 20_000 });
        const md = page.getByTestId("msg-markdown").last();
        expect(await md.locator("strong").textContent()).toBe("bold");
        expect(await md.locator("table td").count()).toBe(2);
        expect(await md.locator("code.language-python .hljs-built_in").textContent()).toBe("print");
        expect(await md.locator("[data-copy-code]").isVisible()).toBe(true);
        expect(await page.getByTestId("pg-send").isVisible()).toBe(true);
        expect(await layoutProblems(page)).toEqual([]);
        await shot(page, `playground-${width}`);
      } finally {
        await context.close();
      }
    }, 60_000);
  }
});

describe("wallet with online top-up off", () => {
  test("the reason is shown; presets, amount, method and Pay are disabled; redeeming still works", async () => {
    const { context, page } = await contextAt(1440, ALICE, "zh");
    try {
      await page.goto(base + "/topup");
      await page.getByTestId("online-off").waitFor();
      expect(await page.getByTestId("online-off").textContent()).toContain("管理员未开启在线充值");
      const card = page.getByTestId("online-topup");
      expect(await card.getByTestId("pay").isDisabled()).toBe(true);
      for (const b of await card.locator(".sy-tags button").all()) expect(await b.isDisabled()).toBe(true);
      expect(await card.locator(".arco-input-number input").isDisabled()).toBe(true);
      expect(await page.getByRole("button", { name: "兑换", exact: true }).isDisabled()).toBe(false);
      await shot(page, "wallet-off-zh");
    } finally {
      await context.close();
    }
  }, 30_000);
});

describe("usage log: details in the reader's language, date presets", () => {
  test("[ru] and [zh]: details from the log's facts, durations per locale; the English server text stays only for the upstream's error", async () => {
    for (const [lang, words, seconds] of [
      ["ru", "Коэффициент модели 1,25, завершения 4, группы 1,5", "12 с"],
      ["zh", "模型倍率 1.25，补全倍率 4，分组倍率 1.5", "12 秒"],
    ] as const) {
      const { context, page } = await contextAt(1440, ROOT_USER, lang);
      try {
        await page.goto(base + "/log");
        await page.locator("[data-testid=details]").first().waitFor();
        const details = await page.locator("[data-testid=details]").allTextContents();
        expect(details.some((d) => d.startsWith(words))).toBe(true);
        expect(details.every((d) => !d.startsWith("model ratio"))).toBe(true);
        expect(await page.locator("[data-testid=use-time]").allTextContents()).toContain(seconds);
        await shot(page, `log-details-${lang}`);
      } finally {
        await context.close();
      }
    }
  }, 60_000);

  test("the time filter is a range picker with presets; 'Last 7 days' sends its range", async () => {
    const { context, page } = await contextAt(1440, ROOT_USER, "en");
    try {
      await page.goto(base + "/log");
      await page.locator("[data-testid=details]").first().waitFor();
      // Labels above every field, all the filters and buttons in two rows at most.
      const labels = await page.locator(".sy-field-label").allTextContents();
      expect(labels).toEqual(
        expect.arrayContaining(["Time", "Type", "Token", "Model", "Group", "Channel ID", "Username"]),
      );
      const rows = await page
        .locator(".sy-filter-fields > .sy-field")
        .evaluateAll((els) => new Set(els.map((e) => Math.round(e.getBoundingClientRect().top))).size);
      expect(rows).toBeLessThanOrEqual(2);
      await page.locator(".arco-picker-range input").first().click();
      await page.getByText("Last 7 days").click();
      const sent = page.waitForRequest((r) => r.url().includes("/api/log/?"));
      await page.getByTestId("filter-search").click();
      const url = new URL((await sent).url());
      const start = new Date();
      start.setDate(start.getDate() - 7);
      start.setHours(0, 0, 0, 0);
      expect(Number(url.searchParams.get("start_timestamp"))).toBe(start.getTime() / 1000);
      await shot(page, "log-filters");
    } finally {
      await context.close();
    }
  }, 30_000);
});

describe("sidebar and shell", () => {
  test("at 1440 and 1280 px every item is one line and whole, chat links sit close, in en, zh and ru", async () => {
    for (const width of [1440, 1280]) {
      for (const lang of LANGS) {
        const { context, page } = await contextAt(width, ROOT_USER, lang);
        try {
          await page.goto(base + "/token");
          await page.locator(".sy-sider .sy-side-label").first().waitFor();
          const m = await page.evaluate(() => {
            const labels = [...document.querySelectorAll<HTMLElement>(".sy-sider .sy-side-label")];
            const cut = labels
              .filter((el) => {
                const box = (el.closest(".arco-menu-item-inner")
                  ?? el.closest(".arco-menu-inline-header"))!.getBoundingClientRect();
                const r = el.getBoundingClientRect();
                return r.right > box.right + 0.5 || r.height > 24;
              })
              .map((el) => el.textContent);
            const chat = [
              ...document.querySelectorAll<HTMLElement>(".sy-sider .arco-menu-inline-content .arco-menu-item"),
            ].map((el) => el.getBoundingClientRect().top);
            return { cut, gaps: chat.slice(1).map((top, i) => top - chat[i]) };
          });
          expect(m.cut, `${width} ${lang}`).toEqual([]);
          for (const gap of m.gaps) expect(gap).toBeLessThanOrEqual(36);
        } finally {
          await context.close();
        }
      }
    }
  }, 60_000);

  test("on a phone the sidebar is a drawer: hidden, opened from the top bar, closed by following a link", async () => {
    const { context, page } = await contextAt(390, ROOT_USER, "ru");
    try {
      await page.goto(base + "/token");
      await page.getByTestId("menu-toggle").waitFor();
      const content = await page.locator(".sy-content").boundingBox();
      expect(content!.x).toBeLessThan(2);
      expect(await page.locator(".sy-sider").isVisible()).toBe(false);
      await page.getByTestId("menu-toggle").click();
      await page.locator(".sy-sider[data-open=true]").waitFor();
      await page.waitForTimeout(250);
      await shot(page, "phone-drawer-ru");
      await page.locator(".sy-sider").getByText("Каналы").click();
      await page.waitForURL(/\/channel$/);
      await page.locator(".sy-sider").waitFor({ state: "hidden" });
    } finally {
      await context.close();
    }
  }, 30_000);
});

describe("first-run setup", () => {
  test("no login or register during setup; afterwards the new admin is signed in on the channel list", async () => {
    const fresh = await testContext({ setup: false, config: { consoleDir } as any });
    const srv = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => fresh.app.handle(req) });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "en-US" });
    try {
      const page = watchErrors(await context.newPage(), errors);
      const url = `http://127.0.0.1:${srv.port}`;
      await page.goto(url + "/");
      await page.waitForURL(/\/setup$/);
      await page.getByText("First-run setup").waitFor();
      expect(await page.locator(".sy-topbar").getByRole("button", { name: "Log in" }).count()).toBe(0);
      expect(await page.locator(".sy-topbar").getByRole("button", { name: "Register" }).count()).toBe(0);
      await page.fill('input[name="username"]', "operator");
      await page.fill('input[name="password"]', "operator-pass1");
      await page.fill('input[name="confirmPassword"]', "operator-pass1");
      await page.getByRole("button", { name: "Initialise the system" }).click();
      await page.waitForURL(/\/channel$/, { timeout: 15_000 });
      await page.getByTestId("avatar-menu").waitFor();
      expect(await page.evaluate(() => JSON.parse(localStorage.getItem("user")!).username)).toBe("operator");
      await page.getByTestId("add-channel").waitFor();
      await shot(page, "after-setup");
    } finally {
      await context.close();
      srv.stop(true);
      await fresh.close();
    }
  }, 60_000);
});

describe("weight", () => {
  test("the entry chunk is under 150 KiB gzipped, all first-load JS under 190 KiB; the stylesheet holds only what is used; assets go out brotli-compressed", async () => {
    const { files } = await builtConsole();
    const html = await Bun.file(files.find((f) => f.url === "/index.html")!.path).text();
    const entryUrl = /<script type="module"[^>]*src="([^"]+)"/.exec(html)![1];
    const firstLoad = [entryUrl, ...[...html.matchAll(/rel="modulepreload"[^>]*href="([^"]+)"/g)].map((m) => m[1])];
    const gz = (url: string) => {
      const f = files.find((x) => x.url === url)!;
      return f.gz?.size ?? f.size;
    };
    const kib = (n: number) => n / 1024;
    console.log(
      `entry ${kib(files.find((f) => f.url === entryUrl)!.size).toFixed(1)} KiB (${kib(gz(entryUrl)).toFixed(1)} gz); first-load JS ${kib(firstLoad.reduce((a, u) => a + gz(u), 0)).toFixed(1)} KiB gz in ${firstLoad.length} files`,
    );
    expect(kib(gz(entryUrl))).toBeLessThanOrEqual(150);
    expect(kib(firstLoad.reduce((a, u) => a + gz(u), 0))).toBeLessThanOrEqual(190);
    const css = files.filter((f) => f.url.endsWith(".css"));
    expect(css).toHaveLength(1);
    expect(kib(css[0].size)).toBeLessThan(450);
    const res = await fetch(base + entryUrl, { headers: { "accept-encoding": "br, gzip" } });
    expect(res.headers.get("content-encoding")).toBe("br");
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
  });

  // How fast is the machine's to decide (the same build shows its rows in 0.5 s or 1.2 s on this 2-core box,
  // depending on what else runs): the test states what makes a cold /log fast and prints the times.
  test("a cold /log asks for its first rows once, before React first renders, and shows them", async () => {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { context, page } = await contextAt(1440, ROOT_USER, "en");
      try {
        await page.addInitScript(() => {
          new MutationObserver((_, obs) => {
            const w = window as any;
            if (!w.__rendered && document.getElementById("root")?.firstChild) w.__rendered = performance.now();
            if (document.querySelector(".sy-rtable tbody tr td:nth-child(4)")) {
              w.__rows = performance.now();
              obs.disconnect();
            }
          }).observe(document, { subtree: true, childList: true });
        });
        const logPages: string[] = [];
        page.on("request", (r) => {
          if (new URL(r.url()).pathname === "/api/log/") logPages.push(r.url());
        });
        await page.goto(base + "/log");
        await page.waitForFunction(() => (window as any).__rows);
        const { rendered, rows, asked } = await page.evaluate(() => ({
          rendered: (window as any).__rendered as number,
          rows: (window as any).__rows as number,
          asked:
            performance.getEntriesByType("resource").find((e) => new URL(e.name).pathname === "/api/log/")?.startTime
            ?? -1,
        }));
        // Asked for while the console loaded (console/preload.ts), not by the page once it had rendered.
        expect(asked).toBeGreaterThan(0);
        expect(asked).toBeLessThan(rendered);
        // Compared as a list, so a failure shows both URLs.
        expect(logPages).toEqual(logPages.slice(0, 1));
        expect(new URL(logPages[0]).searchParams.get("p")).toBe("1");
        expect(await page.locator(".sy-rtable tbody tr").count()).toBeGreaterThan(1);
        times.push(rows);
      } finally {
        await context.close();
      }
    }
    console.log(`cold /log first rows: ${times.map((t) => Math.round(t)).join(", ")} ms`);
  }, 60_000);
});

test("no script errors anywhere", () => {
  expect(errors).toEqual([]);
});
