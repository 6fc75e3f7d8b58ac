import { afterEach, describe, expect, test } from "bun:test";
import { renderNumber, renderQuota, ratioColor, isNewYearsDay, timestampToString } from "../../console/lib/format.ts";
import { contentKind, renderMarkdown, safeUrl } from "../../console/lib/markdown.ts";
import { KEYS, getPageSize, setPageSize, storeStatus, readBool, readJson } from "../../console/lib/storage.ts";

afterEach(() => localStorage.clear());

describe("number formatting", () => {
  test("k from 10,000, then M and B", () => {
    expect(renderNumber(9999)).toBe("9999");
    expect(renderNumber(10_000)).toBe("10k");
    expect(renderNumber(12_345)).toBe("12.3k");
    expect(renderNumber(2_500_000)).toBe("2.5M");
    expect(renderNumber(3_000_000_000)).toBe("3B");
  });

  test("quota shows as dollars when display_in_currency is on, else as units", () => {
    storeStatus({ quota_per_unit: 500000, display_in_currency: true });
    expect(renderQuota(500_000)).toBe("$1.00");
    expect(renderQuota(1_250_000)).toBe("$2.50");
    expect(renderQuota(1)).toBe("$0.0000020");
    storeStatus({ quota_per_unit: 500000, display_in_currency: false });
    expect(renderQuota(1_250_000)).toBe("1.3M");
    expect(renderQuota(500)).toBe("500");
  });

  test("ratio colours: over 5 red, over 3 orange, over 1 blue, else green", () => {
    expect(ratioColor(6)).toBe("red");
    expect(ratioColor(5)).toBe("orange");
    expect(ratioColor(3.5)).toBe("orange");
    expect(ratioColor(3)).toBe("blue");
    expect(ratioColor(1)).toBe("green");
  });

  test("new year's day is January 1st only", () => {
    expect(isNewYearsDay(new Date(2027, 0, 1, 15))).toBe(true);
    expect(isNewYearsDay(new Date(2027, 0, 2))).toBe(false);
    expect(isNewYearsDay(new Date(2026, 11, 31))).toBe(false);
  });

  test("timestamps render as local date-time, 0 as a dash", () => {
    expect(timestampToString(0)).toBe("-");
    expect(timestampToString(1_700_000_000)).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });
});

describe("markdown", () => {
  test("escapes HTML so admin text cannot inject markup", () => {
    const html = renderMarkdown(
      "# Hi\n<script>alert(1)</script> **bold** [x](javascript:alert(1)) [ok](https://a.test)",
    );
    expect(html).toContain("<h1>Hi</h1>");
    expect(html).not.toContain("<script>");
    expect(html).toContain("&lt;script&gt;");
    expect(html).toContain("<strong>bold</strong>");
    expect(html).not.toContain('href="javascript');
    expect(html).toContain('<a href="https://a.test" target="_blank" rel="noopener noreferrer">ok</a>');
  });

  test("lists, code blocks and paragraphs", () => {
    const html = renderMarkdown("- a\n- b\n\n1. one\n\n```\n<b>x</b>\n```\ntext `code`");
    expect(html).toContain("<ul>\n<li>a</li>\n<li>b</li>\n</ul>");
    expect(html).toContain("<ol>\n<li>one</li>\n</ol>");
    expect(html).toContain('<pre><code class="hljs">&lt;b&gt;x&lt;/b&gt;\n</code></pre>');
    expect(html).toContain("<p>text <code>code</code></p>");
  });

  test("GFM tables, highlighted code with a copy button, line breaks as in chat replies", () => {
    const html = renderMarkdown("| a | b |\n|---|---|\n| 1 | 2 |\n\n```js\nconst x = 1;\n```\nline one\nline two", {
      copyLabel: "Copy",
    });
    expect(html).toContain('<div class="sy-md-table"><table>');
    expect(html).toContain("<td>1</td>");
    expect(html).toContain('<code class="hljs language-js"><span class="hljs-keyword">const</span>');
    expect(html).toContain('<button type="button" class="sy-code-copy" data-copy-code>Copy</button>');
    expect(html).toContain("<p>line one<br>\nline two</p>");
    // Without a label (admin texts), no button.
    expect(renderMarkdown("```\nx\n```")).not.toContain("<button");
  });

  test("link targets: http(s), mailto and relative only, whatever the spelling of the scheme", () => {
    for (const ok of ["https://a.test", "http://a.test/x?y=1", "mailto:a@b.test", "/pricing", "#top", "./x", "page"])
      expect(safeUrl(ok)).toBe(true);
    for (const bad of [
      "javascript:alert(1)",
      " JavaScript:alert(1)",
      "java\tscript:x",
      "data:text/html,x",
      "vbscript:x",
      "file:///etc/passwd",
    ])
      expect(safeUrl(bad)).toBe(false);
  });

  test("content kinds: a lone URL is embedded, HTML is HTML, the rest is Markdown", () => {
    expect(contentKind("  ")).toBe("empty");
    expect(contentKind("https://docs.example.com/home")).toBe("url");
    expect(contentKind("<h1>Hi</h1>")).toBe("html");
    expect(contentKind("# Hi\nsee https://x.test")).toBe("markdown");
  });
});

describe("local storage keys", () => {
  test("the status object and its derived flags are stored under the spec's keys", () => {
    storeStatus({
      default_collapse_sidebar: true,
      chats: [{ a: "b" }],
      enable_data_export: true,
      enable_drawing: false,
      enable_task: true,
      footer_html: "<b>f</b>",
      mj_notify_enabled: true,
    });
    expect(readJson(KEYS.status, {} as any).default_collapse_sidebar).toBe(true);
    expect(readBool(KEYS.defaultCollapseSidebar)).toBe(true);
    expect(readJson<unknown[]>(KEYS.chats, [])).toEqual([{ a: "b" }]);
    expect(localStorage.getItem("enable_data_export")).toBe("true");
    expect(localStorage.getItem("enable_drawing")).toBe("false");
    expect(localStorage.getItem("enable_task")).toBe("true");
    expect(localStorage.getItem("footer_html")).toBe("<b>f</b>");
    expect(localStorage.getItem("mj_notify_enabled")).toBe("true");
  });

  test("page sizes are remembered under page-size", () => {
    expect(getPageSize()).toBe(10);
    setPageSize(50);
    expect(localStorage.getItem("page-size")).toBe("50");
    expect(getPageSize()).toBe(50);
    setPageSize(20, "model-pricing");
    expect(getPageSize("model-pricing")).toBe(20);
    expect(getPageSize()).toBe(50);
  });
});

describe("App.tsx header", () => {
  test("every console file the route table's header comment points to exists", async () => {
    const root = new URL("../../", import.meta.url).pathname;
    const src = await Bun.file(root + "console/App.tsx").text();
    const header = src.slice(0, src.indexOf("*/"));
    const named = [...header.matchAll(/`(console\/[\w./-]+\.tsx?)`/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(4);
    const missing = [];
    for (const p of named) if (!(await Bun.file(root + p).exists())) missing.push(p);
    expect(missing).toEqual([]);
  });
});
