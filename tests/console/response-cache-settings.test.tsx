// The response cache's card in the system settings: its options are shown with their defaults, the TTL and
// the per-model list are saved through the section button, and a per-model list that is not model → whole
// seconds is refused where it is typed. A cache hit's log says so in its details.
import { afterEach, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, within } from "@testing-library/react";
import { ADMIN, mockFetch, ok, optionList, renderApp, resetDom, type FetchMock } from "./helpers.tsx";
import { modelTtlProblem } from "../../console/pages/setting/tabs/response-cache.tsx";
import { changeLanguage, t } from "../../console/i18n/index.ts";
import { logDetails } from "../../console/pages/log/details.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

const puts = () => fm.calls.filter((c) => c.method === "PUT" && c.path === "/api/option/").map((c) => c.body);
const field = (name: string) => document.querySelector(`[name="${name}"]`) as HTMLInputElement;

describe("response cache settings", () => {
  test("the per-model TTL list must map models to whole seconds", () => {
    expect(modelTtlProblem("")).toBeNull();
    expect(modelTtlProblem('{"gpt-4o": 3600, "gpt-4o-mini": 0}')).toBeNull();
    expect(modelTtlProblem("{bad")).toBe("settings.invalidJson");
    expect(modelTtlProblem('{"gpt-4o": -1}')).toBe("system.responseCacheModelTtlInvalid");
    expect(modelTtlProblem('{"gpt-4o": 1.5}')).toBe("system.responseCacheModelTtlInvalid");
    expect(modelTtlProblem("[1]")).toBe("system.responseCacheModelTtlInvalid");
  });

  test("the card saves the switch, the TTL and the per-model list", async () => {
    fm = mockFetch({
      "GET /api/option/": ok(optionList()),
      "PUT /api/option/": ok(undefined, "saved"),
      "GET /api/status": ok({ setup: true }),
    });
    await renderApp("/setting?tab=system", { user: ADMIN });
    const card = await waitFor(() => screen.getByTestId("section-Response cache"));
    expect(field("ResponseCacheTTLSeconds").value).toBe("3600");
    fireEvent.click(within(card).getByTestId("opt-ResponseCacheEnabled"));
    fireEvent.change(field("ResponseCacheTTLSeconds"), { target: { value: "600" } });
    fireEvent.change(field("ResponseCacheModelTTL"), { target: { value: '{"gpt-4o": -5}' } });
    fireEvent.blur(field("ResponseCacheModelTTL"));
    expect(
      await within(card).findByText("Must be a JSON object of model name → whole number of seconds (0 or more)"),
    ).toBeTruthy();
    fireEvent.change(field("ResponseCacheModelTTL"), { target: { value: '{"gpt-4o": 7200}' } });
    fireEvent.blur(field("ResponseCacheModelTTL"));
    fireEvent.click(within(card).getByText("Save Response cache"));
    await waitFor(() => expect(puts()).toHaveLength(3));
    expect(puts()).toEqual(
      expect.arrayContaining([
        { key: "ResponseCacheEnabled", value: "true" },
        { key: "ResponseCacheTTLSeconds", value: "600" },
        { key: "ResponseCacheModelTTL", value: '{"gpt-4o": 7200}' },
      ]),
    );
  });
});

test("Clear the cache asks first, then saves a new ResponseCacheGeneration", async () => {
  fm = mockFetch({
    "GET /api/option/": ok(optionList()),
    "PUT /api/option/": ok(undefined, "saved"),
    "GET /api/status": ok({ setup: true }),
  });
  await renderApp("/setting?tab=system", { user: ADMIN });
  const card = await waitFor(() => screen.getByTestId("section-Response cache"));
  fireEvent.click(within(card).getByText("Clear the cache"));
  const dialog = (await screen.findByText(/Every stored answer stops being served/)).closest(
    ".arco-modal",
  ) as HTMLElement;
  expect(puts()).toHaveLength(0);
  fireEvent.click(within(dialog).getByText("OK"));
  await waitFor(() => expect(puts()).toHaveLength(1));
  expect(puts()[0].key).toBe("ResponseCacheGeneration");
  expect(Number(puts()[0].value)).toBeGreaterThan(0);
});

describe("a cache hit in the usage log", () => {
  test("the details say it was answered from the cache, when it was stored and at what fraction", async () => {
    await changeLanguage("en");
    const other = {
      model_ratio: 1,
      completion_ratio: 1,
      group_ratio: 1,
      cache_hit: true,
      response_cache: { billing_ratio: 0.5, age_seconds: 42, channel_id: 3 },
    };
    const d = logDetails(
      { type: LOG_TYPE.consume, other: JSON.stringify(other), content: "", quota: 19, is_stream: false },
      t,
    );
    expect(d.summary).toContain("; cache hit");
    const entry = d.entries.find((e) => e.key === "responseCache")!;
    expect(entry.label).toBe("Response cache");
    expect(entry.value).toBe("Answered from the cache (stored 42 s earlier), billed at 0.5 × the original cost");
  });
});
