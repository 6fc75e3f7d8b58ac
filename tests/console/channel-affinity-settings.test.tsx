// The channel affinity card (operation settings → Routing and fallbacks): new-api's option keys with their
// defaults, saved through the section button; rules that the server would refuse are shown where they are
// typed and not sent; the pins held now come from GET /api/option/channel_affinity_cache and are cleared
// through its DELETE after a confirmation. In the three languages.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { ADMIN, mockFetch, ok, optionList, renderApp, resetDom, type FetchMock } from "./helpers.tsx";
import { OPTION_DEFAULTS } from "../../server/modules/option/defaults.ts";
import { AFFINITY_OPTIONS } from "../../server/catalogue/channel-affinity.ts";
import { affinityRulesKey } from "../../console/pages/setting/tabs/channel-affinity.tsx";
import { changeLanguage, t } from "../../console/i18n/index.ts";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});
afterAll(() => changeLanguage("en"));
const field = (name: string) => document.querySelector(`[name="${name}"]`) as HTMLInputElement;
const STATS = {
  enabled: true,
  total: 3,
  unknown: 0,
  by_rule_name: { "prompt cache key": 2, "claude cli trace": 1, "gemini context cache": 0 },
  cache_capacity: 100000,
  cache_algo: "lru",
};

async function openCard() {
  await renderApp("/setting", { user: ADMIN });
  fireEvent.click(await screen.findByText("Routing and fallbacks", { selector: ".arco-tabs-header-title-text" }));
  return waitFor(() => screen.getByTestId("section-Channel affinity"));
}

describe("channel affinity settings", () => {
  test("rules are checked as the server checks them", () => {
    expect(affinityRulesKey(OPTION_DEFAULTS[AFFINITY_OPTIONS.rules]!)).toBeNull();
    expect(affinityRulesKey("")).toBeNull();
    expect(affinityRulesKey("{")).toBe("operation.affinityRulesInvalid");
    expect(
      affinityRulesKey('[{"name": "x", "model_regex": ["("], "key_sources": [{"type": "gjson", "path": "a"}]}]'),
    ).toBe("operation.affinityRulesInvalid");
    expect(
      affinityRulesKey(
        '[{"name": "x", "model_regex": [".*"], "key_sources": [{"type": "request_header", "key": "X-Session"}]}]',
      ),
    ).toBeNull();
  });

  test("the card shows the defaults and the pins, saves the TTL, refuses bad rules, and clears the pins after asking", async () => {
    fm = mockFetch({
      "GET /api/option/": ok(optionList()),
      "PUT /api/option/": ok(undefined, "saved"),
      "GET /api/status": ok({ setup: true }),
      "GET /api/option/channel_affinity_cache": ok(STATS),
      "DELETE /api/option/channel_affinity_cache": ok({ deleted: 3 }),
    });
    const card = await openCard();
    expect(field(AFFINITY_OPTIONS.defaultTtlSeconds).value).toBe("3600");
    expect(field(AFFINITY_OPTIONS.maxEntries).value).toBe("100000");
    expect(
      await within(card).findByText(
        "Pins now: 3 (prompt cache key: 2, claude cli trace: 1, gemini context cache: 0); stored in memory, up to 100000",
      ),
    ).toBeTruthy();
    fireEvent.change(field(AFFINITY_OPTIONS.rules), { target: { value: '[{"name": "x"}]' } });
    fireEvent.blur(field(AFFINITY_OPTIONS.rules));
    expect(
      await within(card).findByText("Not valid rules: each needs a name, valid patterns and at least one key source"),
    ).toBeTruthy();
    fireEvent.click(within(card).getByText("Save Channel affinity"));
    await screen.findByText("Please check your input");
    expect(fm.calls.filter((c) => c.method === "PUT")).toEqual([]);
    fireEvent.change(field(AFFINITY_OPTIONS.rules), { target: { value: OPTION_DEFAULTS[AFFINITY_OPTIONS.rules]! } });
    fireEvent.change(field(AFFINITY_OPTIONS.defaultTtlSeconds), { target: { value: "600" } });
    fireEvent.click(within(card).getByText("Save Channel affinity"));
    await waitFor(() =>
      expect(fm.calls.filter((c) => c.method === "PUT").map((c) => c.body)).toEqual([
        { key: AFFINITY_OPTIONS.defaultTtlSeconds, value: "600" },
      ]),
    );
    fireEvent.click(within(card).getByText("Clear all pins"));
    const confirm = (await screen.findByText(/Clear every conversation's pin/)).closest(
      ".arco-popconfirm",
    ) as HTMLElement;
    expect(fm.calls.some((c) => c.method === "DELETE")).toBe(false);
    fireEvent.click(within(confirm).getByText("OK"));
    await waitFor(() =>
      expect(fm.calls.filter((c) => c.method === "DELETE").map((c) => `${c.path}?${c.query}`)).toEqual([
        "/api/option/channel_affinity_cache?all=true",
      ]),
    );
    expect(await screen.findByText("3 pins cleared")).toBeTruthy();
  });

  test("its words in Chinese and Russian", async () => {
    await changeLanguage("zh");
    expect(t("operation.affinity")).toBe("渠道亲和");
    expect(t("operation.affinityPins", { total: 1, rules: "a: 1", store: "Redis" })).toBe(
      "当前绑定：1（a: 1）；存储于 Redis",
    );
    await changeLanguage("ru");
    expect(t("operation.affinityClear")).toBe("Сбросить все привязки");
  });
});
