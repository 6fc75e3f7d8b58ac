import { afterEach, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, within } from "@testing-library/react";
import { ADMIN, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";
import { OPTION_DEFAULTS, SECRET_OPTIONS } from "../../server/modules/option/defaults.ts";
import {
  applyBatch,
  draftFromRow,
  mapsFromRows,
  rowFromDraft,
  rowsFromOptions,
  unsetModels,
  validateDraft,
  type RowDraft,
} from "../../console/pages/setting/pricing.ts";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

const options = {
  ModelPrice: '{"mj_imagine": 0.1}',
  ModelRatio: '{"gpt-4o": 1.25, "mj_imagine": 3}',
  CompletionRatio: '{"gpt-4o": 4}',
};

describe("pricing rows", () => {
  test("rows merge the three maps; a fixed price makes the row per-request and drops its ratios on save", () => {
    const rows = rowsFromOptions(options);
    expect(rows).toEqual([
      { name: "gpt-4o", ratio: 1.25, completionRatio: 4 },
      { name: "mj_imagine", price: 0.1, ratio: 3 },
    ]);
    expect(mapsFromRows(rows)).toEqual({
      ModelPrice: { mj_imagine: 0.1 },
      ModelRatio: { "gpt-4o": 1.25 },
      CompletionRatio: { "gpt-4o": 4 },
    });
  });

  test("ratio = input price / 2; completion ratio = output price / input price", () => {
    const d: RowDraft = {
      ...draftFromRow(null),
      name: "m",
      mode: "tokenPrice",
      tokenPrice: "5",
      completionTokenPrice: "15",
    };
    expect(rowFromDraft(d)).toEqual({ name: "m", ratio: 2.5, completionRatio: 3 });
    expect(draftFromRow({ name: "m", ratio: 2.5, completionRatio: 3 })).toMatchObject({
      tokenPrice: "5",
      completionTokenPrice: "15",
      mode: "ratio",
    });
  });

  test("rules: numbers only, price cannot be 0, duplicate names refused on add", () => {
    const base = draftFromRow(null);
    expect(validateDraft({ ...base, name: "gpt-4o", ratio: "1" }, ["gpt-4o"], true).name).toBe("pricing.nameExists");
    expect(validateDraft({ ...base, name: "x", ratio: "abc" }, [], true).ratio).toBe("common.enterNumber");
    expect(validateDraft({ ...base, name: "x", ratio: "1", completionRatio: "z" }, [], true).completionRatio).toBe(
      "common.enterNumber",
    );
    expect(validateDraft({ ...base, name: "x", mode: "request", price: "0" }, [], true).price).toBe(
      "pricing.priceZero",
    );
    expect(validateDraft({ ...base, name: "x", mode: "request", price: "0.02" }, [], true)).toEqual({});
  });

  test("batch set: needs a selection, a value, both values in both-ratio mode, and numbers", () => {
    const rows = rowsFromOptions(options);
    expect(applyBatch(rows, [], "ratio", "1")).toEqual({ error: "pricing.batchNoSelection" });
    expect(applyBatch(rows, ["gpt-4o"], "ratio", "")).toEqual({ error: "pricing.batchValueRequired" });
    expect(applyBatch(rows, ["gpt-4o"], "both", "1", "")).toEqual({ error: "pricing.batchBothRequired" });
    expect(applyBatch(rows, ["gpt-4o"], "ratio", "x")).toEqual({ error: "pricing.batchInvalidNumber" });
    const r = applyBatch(rows, ["gpt-4o", "mj_imagine"], "both", "2", "3");
    expect("rows" in r && r.rows).toEqual([
      { name: "gpt-4o", ratio: 2, completionRatio: 3 },
      { name: "mj_imagine", ratio: 2, completionRatio: 3 },
    ]);
  });

  test("models without a ratio are the enabled ones with neither price nor ratio", () => {
    expect(unsetModels(["gpt-4o", "new-model", "mj_imagine", "new-model", "other"], rowsFromOptions(options))).toEqual([
      "new-model",
      "other",
    ]);
  });
});

const optionList = (over: Record<string, string> = {}) =>
  Object.entries({ ...OPTION_DEFAULTS, ...over })
    .filter(([k]) => !SECRET_OPTIONS.has(k))
    .map(([key, value]) => ({ key, value }));
const puts = () => fm.calls.filter((c) => c.method === "PUT").map((c) => c.body);
const modal = () => [...document.querySelectorAll(".arco-modal")].pop() as HTMLElement;

async function openTab(name: string) {
  fireEvent.click(await screen.findByText(name, { selector: ".arco-tabs-header-title-text" }));
}

describe("visual pricing editor", () => {
  test("adding a model: duplicate name and a zero price are refused where typed; saving sends only the changed maps", async () => {
    fm = mockFetch({
      "GET /api/option/": ok(optionList(options)),
      "PUT /api/option/": ok(),
      "GET /api/status": ok({ setup: true }),
    });
    await renderApp("/setting", { user: ADMIN });
    await openTab("Visual ratio editor");
    await screen.findByText("gpt-4o");
    fireEvent.click(screen.getByText("Add model"));
    const m = await waitFor(() => modal());
    fireEvent.change(m.querySelector('input[name="model-name"]')!, { target: { value: "gpt-4o" } });
    fireEvent.change(m.querySelector('input[name="ratio"]')!, { target: { value: "1" } });
    fireEvent.click(within(m).getByText("OK"));
    expect(await within(m).findByText("The model name already exists")).toBeTruthy();
    fireEvent.change(m.querySelector('input[name="model-name"]')!, { target: { value: "flux-pro" } });
    fireEvent.click(within(m).getByText("Per request (fixed price)"));
    await waitFor(() => expect((m.querySelector('input[name="ratio"]') as HTMLInputElement).disabled).toBe(true));
    fireEvent.change(m.querySelector('input[name="price"]')!, { target: { value: "0" } });
    fireEvent.click(within(m).getByText("OK"));
    expect(await within(m).findByText("The price cannot be 0")).toBeTruthy();
    fireEvent.change(m.querySelector('input[name="price"]')!, { target: { value: "0.04" } });
    fireEvent.click(within(m).getByText("OK"));
    await screen.findByText("flux-pro");
    fireEvent.click(screen.getByText("Save pricing"));
    await waitFor(() => expect(puts()).toHaveLength(1));
    expect(puts()[0].key).toBe("ModelPrice");
    expect(JSON.parse(puts()[0].value)).toEqual({ mj_imagine: 0.1, "flux-pro": 0.04 });
  });

  test("batch set without a selection says so", async () => {
    fm = mockFetch({ "GET /api/option/": ok(optionList(options)), "GET /api/status": ok({ setup: true }) });
    await renderApp("/setting", { user: ADMIN });
    await openTab("Visual ratio editor");
    await screen.findByText("gpt-4o");
    fireEvent.click(screen.getByText("Batch set"));
    expect(await screen.findByText("Select models to batch set first")).toBeTruthy();
  });

  test("models without a ratio lists enabled models lacking a price; setting one saves it and it leaves the list", async () => {
    fm = mockFetch({
      "GET /api/option/": ok(optionList(options)),
      "PUT /api/option/": ok(),
      "GET /api/status": ok({ setup: true }),
      "GET /api/channel/models_enabled": ok(["gpt-4o", "brand-new"]),
    });
    await renderApp("/setting", { user: ADMIN });
    await openTab("Models without a ratio");
    const cell = await screen.findByText("brand-new");
    expect(screen.queryByText("gpt-4o", { selector: "td *" })).toBeNull();
    fireEvent.click(within(cell.closest("tr") as HTMLElement).getByText("Set price"));
    const m = await waitFor(() => modal());
    fireEvent.change(m.querySelector('input[name="ratio"]')!, { target: { value: "0.5" } });
    fireEvent.click(within(m).getByText("OK"));
    await waitFor(() => expect(puts().map((p: any) => p.key)).toEqual(["ModelRatio"]));
    expect(JSON.parse(puts()[0].value)).toEqual({ "gpt-4o": 1.25, "brand-new": 0.5 });
    await waitFor(() => expect(screen.queryByText("brand-new", { selector: "td *" })).toBeNull());
  });
});
