// new-api's display settings in the console: amounts in the site's display currency (quota_display_type with
// USDExchangeRate or a custom currency), and the dashboard's panels (API addresses, announcements, FAQ, Uptime Kuma).
import { afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { USER, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";
import { renderQuota } from "../../console/lib/format.ts";
import { storeStatus } from "../../console/lib/storage.ts";

let fm: FetchMock | undefined;
afterEach(() => {
  resetDom();
  fm?.restore();
  localStorage.clear();
});

describe("amounts in the display currency", () => {
  test("USD by default; CNY at USDExchangeRate; a custom symbol and rate; tokens when display_in_currency is off", () => {
    storeStatus({ quota_per_unit: 500000, display_in_currency: true });
    expect(renderQuota(1_000_000)).toBe("$2.00");
    storeStatus({
      quota_per_unit: 500000,
      display_in_currency: true,
      quota_display_type: "CNY",
      usd_exchange_rate: 7.2,
    });
    expect(renderQuota(1_000_000)).toBe("¥14.40");
    storeStatus({
      quota_per_unit: 500000,
      display_in_currency: true,
      quota_display_type: "CUSTOM",
      custom_currency_symbol: "€",
      custom_currency_exchange_rate: 0.9,
    });
    expect(renderQuota(1_000_000)).toBe("€1.80");
    expect(renderQuota(1)).toBe("€0.0000018");
    storeStatus({ quota_per_unit: 500000, display_in_currency: false, quota_display_type: "TOKENS" });
    expect(renderQuota(1_000_000)).toBe("1M");
  });
});

describe("dashboard panels", () => {
  const PANELS = {
    api_info_enabled: true,
    announcements_enabled: true,
    faq_enabled: true,
    uptime_kuma_enabled: true,
    api_info: [
      { url: "https://api.example.com", route: "Main line", description: "for everyone", color: "blue" },
      { url: "javascript:alert(1)", route: "bad", description: "x", color: "red" },
    ],
    announcements: [
      {
        content: "<b>Maintenance</b> tonight",
        publishDate: "2025-05-01T08:00:00Z",
        type: "warning",
        extra: "about an hour",
      },
    ],
    faq: [{ question: "How do I pay?", answer: "With a redemption code." }],
  };

  test("each enabled panel shows its entries as text; only http(s) addresses; Uptime Kuma monitors with their state", async () => {
    fm = mockFetch({
      "GET /api/data/self": ok([]),
      "GET /api/uptime/status": ok([
        {
          categoryName: "Core",
          monitors: [
            { name: "OpenAI", uptime: 0.9987, status: 1, group: "APIs" },
            { name: "Claude", uptime: 0.5, status: 0 },
          ],
        },
      ]),
    });
    await renderApp("/detail", { user: USER, status: PANELS });
    const api = await screen.findByTestId("panel-api-info");
    expect(within(api).getAllByTestId("api-info-row").length).toBe(1);
    expect(api.textContent).toContain("https://api.example.com");
    expect(api.textContent).not.toContain("javascript:");
    const notice = screen.getByTestId("announcement");
    expect(notice.textContent).toContain("<b>Maintenance</b> tonight");
    expect(notice.querySelector("b")).toBeNull();
    expect(notice.textContent).toContain("about an hour");
    const faq = screen.getByTestId("panel-faq");
    fireEvent.click(within(faq).getByText("How do I pay?"));
    await waitFor(() => expect(faq.textContent).toContain("With a redemption code."));
    const monitors = await screen.findAllByTestId("uptime-monitor");
    expect(monitors.map((m) => m.textContent)).toEqual(["OpenAIUp · 99.87% in 24 h", "ClaudeDown · 50.00% in 24 h"]);
  });

  test("switched-off or empty panels are not shown, and Uptime Kuma is not asked while its panel is off", async () => {
    fm = mockFetch({ "GET /api/data/self": ok([]) });
    await renderApp("/detail", {
      user: USER,
      status: { ...PANELS, api_info_enabled: false, faq: [], uptime_kuma_enabled: false },
      lang: "zh",
    });
    expect(await screen.findByTestId("panel-announcements")).toBeTruthy();
    expect(screen.getByText("系统公告")).toBeTruthy();
    expect(screen.queryByTestId("panel-api-info")).toBeNull();
    expect(screen.queryByTestId("panel-faq")).toBeNull();
    expect(fm.calls.some((c) => c.path === "/api/uptime/status")).toBe(false);
  });
});
