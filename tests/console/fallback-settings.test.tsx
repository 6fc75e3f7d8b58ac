// The console's editor of model fallbacks and channel choice (operation settings → Routing and fallbacks),
// and the log details of a call served by a fallback model, in the three languages.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { ADMIN, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";
import { OPTION_DEFAULTS, SECRET_OPTIONS } from "../../server/modules/option/defaults.ts";
import { fallbacksProblem, groupFallbacksProblem } from "../../console/pages/setting/routing.ts";
import { changeLanguage, t } from "../../console/i18n/index.ts";
import { logDetails } from "../../console/pages/log/details.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";
import { emptyChannel, fromChannel, toBody, validateChannel } from "../../console/pages/channel-edit/ChannelForm.tsx";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});
afterAll(() => changeLanguage("en"));

const optionList = () =>
  Object.entries(OPTION_DEFAULTS)
    .filter(([k]) => !SECRET_OPTIONS.has(k))
    .map(([key, value]) => ({ key, value }));
const field = (name: string) => document.querySelector(`[name="${name}"]`) as HTMLTextAreaElement;

describe("fallback rule checks", () => {
  test("ModelFallbacks: model → list of names; GroupModelFallbacks: group → such a table", () => {
    expect(fallbacksProblem('{"gpt-4o": ["gpt-4o-mini", "claude-3-5-sonnet"]}')).toBeNull();
    expect(fallbacksProblem("")).toBeNull();
    expect(fallbacksProblem("{oops")).toBe("settings.invalidJson");
    expect(fallbacksProblem('{"gpt-4o": "gpt-4o-mini"}')).toBe("operation.fallbacksShape");
    expect(fallbacksProblem('{"gpt-4o": [""]}')).toBe("operation.fallbacksShape");
    expect(fallbacksProblem('["gpt-4o"]')).toBe("operation.fallbacksShape");
    expect(groupFallbacksProblem('{"vip": {"gpt-4o": ["claude-3-5-sonnet"]}, "free": {"gpt-4o": []}}')).toBeNull();
    expect(groupFallbacksProblem('{"vip": ["gpt-4o"]}')).toBe("operation.groupFallbacksShape");
  });
});

describe("settings editor", () => {
  test("the Routing tab edits the strategy, the cooldown and both rules; a bad rule is shown and not sent", async () => {
    fm = mockFetch({
      "GET /api/option/": ok(optionList()),
      "PUT /api/option/": ok(undefined, "saved"),
      "GET /api/status": ok({ setup: true }),
    });
    await renderApp("/setting", { user: ADMIN });
    fireEvent.click(await screen.findByText("Routing and fallbacks", { selector: ".arco-tabs-header-title-text" }));
    await waitFor(() => expect(field("ModelFallbacks")).toBeTruthy());
    expect(screen.getByText("Model fallbacks per group")).toBeTruthy();
    // The cooldown only matters with latency choice.
    expect((document.querySelector('[name="ChannelCooldownSeconds"]') as HTMLInputElement).disabled).toBe(true);
    const section = screen.getByTestId("section-Routing and fallbacks");
    fireEvent.change(field("ModelFallbacks"), { target: { value: '{"gpt-4o": "gpt-4o-mini"}' } });
    fireEvent.blur(field("ModelFallbacks"));
    expect(await screen.findByText("Must be an object of model name → list of model names")).toBeTruthy();
    fireEvent.click(within(section).getByText("Save Routing and fallbacks"));
    await screen.findByText("Please check your input");
    expect(fm.calls.filter((c) => c.method === "PUT")).toEqual([]);
    const rule = '{"gpt-4o": ["gpt-4o-mini"]}';
    fireEvent.change(field("ModelFallbacks"), { target: { value: rule } });
    fireEvent.change(field("GroupModelFallbacks"), { target: { value: '{"vip": {"gpt-4o": []}}' } });
    fireEvent.click(within(section).getByText("Save Routing and fallbacks"));
    await waitFor(() => expect(fm.calls.filter((c) => c.method === "PUT").length).toBe(2));
    expect(fm.calls.filter((c) => c.method === "PUT").map((c) => c.body)).toEqual([
      { key: "ModelFallbacks", value: rule },
      { key: "GroupModelFallbacks", value: '{"vip": {"gpt-4o": []}}' },
    ]);
  });
});

describe("channel form: max input tokens (the context window the fallback check reads)", () => {
  test("read, checked and sent; empty sends 0 (not known)", () => {
    expect(fromChannel({ max_input_tokens: 128000, models: "m" }).max_input_tokens).toBe("128000");
    expect(fromChannel({ max_input_tokens: 0, models: "m" }).max_input_tokens).toBe("");
    const v = { ...emptyChannel(), name: "n", key: "k", models: ["m"] };
    expect(validateChannel({ ...v, max_input_tokens: "12.5k" }, true, (k) => k)).toBe("ops.ch.maxInputTokensInt");
    expect(validateChannel({ ...v, max_input_tokens: "200000" }, true, (k) => k)).toBeNull();
    expect(toBody({ ...v, max_input_tokens: "200000" }).max_input_tokens).toBe(200000);
    expect(toBody({ ...v, max_input_tokens: "" }, 3).max_input_tokens).toBe(0);
  });
});

describe("log details", () => {
  const row = (type: number, other: Record<string, unknown>) => ({
    type,
    other: JSON.stringify(other),
    content: "",
    quota: 60,
    is_stream: false,
  });
  const served = {
    model_ratio: 2,
    completion_ratio: 1,
    group_ratio: 1,
    model_price: -1,
    fallback: {
      requested: "gpt-4o",
      served: "gpt-4o-mini",
      reason: "upstream_error",
      tried: [{ model: "gpt-4o", reason: "upstream_error" }, { model: "gpt-4o-mini" }],
    },
  };
  test("a call served by a fallback: requested → served and why, in en, zh and ru", async () => {
    await changeLanguage("en");
    const d = logDetails(row(LOG_TYPE.consume, served), t);
    expect(d.summary).toBe("Model ratio 2, completion ratio 1, group ratio 1; fallback from gpt-4o");
    expect(d.entries.find((e) => e.key === "fallback")).toEqual({
      key: "fallback",
      label: "Fallback",
      value: "gpt-4o → gpt-4o-mini (all its channels failed)",
    });
    await changeLanguage("zh");
    expect(logDetails(row(LOG_TYPE.consume, served), t).entries.find((e) => e.key === "fallback")!.value).toBe(
      "gpt-4o → gpt-4o-mini（其全部渠道失败）",
    );
    await changeLanguage("ru");
    const ctx = { ...served, fallback: { ...served.fallback, reason: "context_length_exceeded" } };
    expect(logDetails(row(LOG_TYPE.consume, ctx), t).entries.find((e) => e.key === "fallback")!.value).toBe(
      "gpt-4o → gpt-4o-mini (запрос длиннее её контекстного окна)",
    );
  });

  test("an error log of a call whose fallbacks all failed lists the models tried", async () => {
    await changeLanguage("en");
    const failed = {
      status_code: 503,
      fallback: {
        requested: "a",
        served: "",
        reason: "upstream_error",
        tried: [
          { model: "a", reason: "upstream_error" },
          { model: "b", reason: "upstream_error" },
        ],
      },
    };
    expect(logDetails(row(LOG_TYPE.error, failed), t).entries.find((e) => e.key === "fallback")!.value).toBe(
      "Tried a → b; none answered",
    );
  });
});
