// Text that users control — usernames, display names, emails, groups, token names, channel and redemption
// names, log content, model names — is shown as text everywhere in the console, never parsed as HTML:
// every screen that lists it is rendered with markup in those fields, and no element comes of it.
// (Admin-written site texts — notice, about, home page, footer — are HTML by design, as in one-api; their
// Markdown mode escapes raw HTML and keeps only safe link schemes, tested at the end.)
import { afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, within } from "@testing-library/react";
import { ADMIN, USER, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";
import { renderMarkdown } from "../../console/lib/markdown.ts";

const IMG = `<img src=x onerror="globalThis.__xss=1">`;
const SVG = `"><svg onload="globalThis.__xss=1"></svg>`;
const SCRIPT = `<script>globalThis.__xss=1</script>`;

let fm: FetchMock;
afterEach(() => {
  resetDom();
  fm?.restore();
  delete (globalThis as any).__xss;
});

/** Nothing the payloads would have created exists, and no handler ran. */
function noInjectedElements() {
  expect(document.querySelector('img[src="x"]')).toBeNull();
  expect(document.querySelector("svg[onload], [onerror], [onload]")).toBeNull();
  expect([...document.querySelectorAll("script")].some((s) => s.textContent?.includes("__xss"))).toBe(false);
  expect((globalThis as any).__xss).toBeUndefined();
}

/** The payload is on the page as the literal text the user typed. */
async function shownAsText(text: string) {
  const found = await screen.findAllByText(
    (_, el) => !!el && el.children.length === 0 && (el.textContent ?? "").includes(text),
    {},
    { timeout: 15_000 },
  );
  expect(found.length).toBeGreaterThan(0);
}

describe("user-controlled text is rendered as text", () => {
  test("(the check itself) markup that is parsed as HTML is caught", () => {
    const box = document.createElement("div");
    box.innerHTML = `${IMG}${SVG}`;
    document.body.appendChild(box);
    expect(() => noInjectedElements()).toThrow();
    box.remove();
  });

  test("the user list: username, display name and group", async () => {
    fm = mockFetch({
      "GET /api/user/": ok({
        items: [
          {
            id: 2,
            username: IMG,
            display_name: SVG,
            role: 1,
            status: 1,
            group: SCRIPT,
            email: `${IMG}@x.test`,
            quota: 0,
            used_quota: 0,
            request_count: 0,
          },
        ],
        total: 1,
        page: 1,
      }),
      "GET /api/group/": ok(["default"]),
    });
    await renderApp("/user", { user: ADMIN });
    await shownAsText(IMG);
    await shownAsText(SCRIPT);
    noInjectedElements();
    // The display name is the username's tooltip.
    fireEvent.mouseEnter((await screen.findAllByText(IMG))[0]!);
    await shownAsText(SVG);
    noInjectedElements();
  });

  test("usage logs: username, token name, model, channel name, group and content, and the user-info dialog", async () => {
    const row = {
      id: 1,
      created_at: 1_700_000_000,
      type: 2,
      channel: 3,
      channel_name: SVG,
      username: IMG,
      user_id: 2,
      token_name: IMG,
      group: "default",
      model_name: `m${SVG}`,
      use_time: 2,
      is_stream: false,
      prompt_tokens: 1,
      completion_tokens: 1,
      quota: 1,
      content: `${SCRIPT}${IMG}`,
      other: "{}",
    };
    fm = mockFetch({
      "GET /api/log/": ok({ items: [row], total: 1 }),
      "GET /api/log/stat": ok({ quota: 1, rpm: 1, tpm: 2 }),
      "GET /api/user/2": ok({ id: 2, username: IMG, display_name: SVG, quota: 1, used_quota: 1, request_count: 1 }),
    });
    await renderApp("/log", { user: ADMIN });
    await shownAsText(`m${SVG}`);
    const tr = (await screen.findAllByText(`m${SVG}`))[0]!.closest("tr")!;
    noInjectedElements();
    fireEvent.click(within(tr).getAllByText(IMG)[0]!);
    expect(await screen.findByText("User information")).toBeTruthy();
    noInjectedElements();
  });

  test("tokens: the token name", async () => {
    fm = mockFetch({
      "GET /api/token/": ok({
        items: [
          {
            id: 1,
            name: IMG,
            key: "sk-aaaa",
            status: 1,
            remain_quota: 1,
            used_quota: 0,
            unlimited_quota: false,
            expired_time: -1,
            model_limits_enabled: false,
            model_limits: "",
            allow_ips: "",
            group: "",
            created_time: 1_700_000_000,
          },
        ],
        total: 1,
        page: 1,
        page_size: 10,
      }),
      "GET /api/user/models": ok([]),
      "GET /api/user/self/groups": ok({}),
    });
    await renderApp("/token", { user: USER });
    await shownAsText(IMG);
    noInjectedElements();
  });

  test("channels: name, tag and an automatic disable reason", async () => {
    fm = mockFetch({
      "GET /api/channel/": ok({
        items: [
          {
            id: 1,
            name: IMG,
            type: 1,
            status: 3,
            group: "default",
            models: "gpt-4o",
            tag: SVG,
            priority: 0,
            weight: 0,
            response_time: 0,
            balance: 0,
            used_quota: 0,
            other_info: JSON.stringify({ status_reason: SCRIPT, status_time: 1_700_000_000 }),
          },
        ],
        total: 1,
        page: 1,
        page_size: 10,
      }),
      "GET /api/group/": ok(["default"]),
      "GET /api/channel/models_enabled": ok([]),
    });
    await renderApp("/channel", { user: ADMIN });
    await shownAsText(IMG);
    noInjectedElements();
  });

  test("redemption codes: the name", async () => {
    fm = mockFetch({
      "GET /api/redemption/": ok({
        items: [{ id: 1, name: IMG, key: "k1", status: 1, quota: 1000, created_time: 1_700_000_000, used_user_id: 0 }],
        total: 1,
      }),
    });
    await renderApp("/redemption", { user: ADMIN });
    await shownAsText(IMG);
    noInjectedElements();
  });

  test("the signed-in user's own name in the top bar and on the personal page", async () => {
    fm = mockFetch({
      "GET /api/user/self": ok({ ...USER, username: IMG, display_name: SVG, email: "", aff_code: "x", setting: "" }),
      "GET /api/user/models": ok([]),
      "GET /api/user/aff": ok("x"),
    });
    await renderApp("/personal", { user: { ...USER, username: IMG, display_name: SVG } });
    await shownAsText(SVG);
    noInjectedElements();
  });
});

describe("the Markdown renderer for admin texts", () => {
  test("raw HTML is escaped, not rendered", () => {
    const html = renderMarkdown(`Hello ${IMG}\n\n${SCRIPT}\n\n- ${SVG}`);
    const box = document.createElement("div");
    box.innerHTML = html;
    expect(box.querySelector("img, script, svg")).toBeNull();
    expect(box.textContent).toContain(IMG);
    expect(box.textContent).toContain(SCRIPT);
  });

  test("links and images keep only http(s), mailto and relative targets; attributes cannot be broken out of", () => {
    const refused = [
      "javascript:alert(1)",
      "JaVaScRiPt:alert(1)",
      " javascript:alert(1)",
      "data:text/html,<script>1</script>",
      "vbscript:msgbox(1)",
      "&#106;avascript:alert(1)",
      "java\tscript:alert(1)",
    ];
    for (const url of refused) {
      const box = document.createElement("div");
      box.innerHTML = renderMarkdown(`[click](${url}) ![pic](${url})`);
      for (const el of box.querySelectorAll("a, img")) {
        const target = el.getAttribute("href") ?? el.getAttribute("src") ?? "";
        expect(target).toMatch(/^(https?:|mailto:|[/#.])/i);
      }
      expect(box.querySelector("a[href], img[src]")).toBeNull();
    }
    const box = document.createElement("div");
    box.innerHTML = renderMarkdown(
      `[ok](https://a.test/"onmouseover="alert(1)) ![x" onerror="alert(1)](https://a.test/p.png) [mail](mailto:a@b.test) [rel](/pricing)`,
    );
    expect(box.querySelector("[onmouseover], [onerror]")).toBeNull();
    // The quotes stay inside the target (percent-encoded, as CommonMark renderers do); no attribute is added.
    expect([...box.querySelectorAll("a")].map((a) => a.getAttribute("href"))).toEqual([
      "https://a.test/%22onmouseover=%22alert(1)",
      "mailto:a@b.test",
      "/pricing",
    ]);
    expect(box.querySelector("img")!.getAttribute("alt")).toBe('x" onerror="alert(1)');
    for (const a of box.querySelectorAll("a")) expect(a.getAttribute("rel")).toBe("noopener noreferrer");
  });
});
