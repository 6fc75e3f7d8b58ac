// The model pricing table (001 §3–§5) as rows, and back to the three option maps. Pure functions.

export interface PriceRow {
  name: string;
  /** Fixed price per request in dollars; when set, billing is per request and ratios do not apply. */
  price?: number;
  ratio?: number;
  completionRatio?: number;
}

export interface PricingMaps {
  ModelPrice: Record<string, number>;
  ModelRatio: Record<string, number>;
  CompletionRatio: Record<string, number>;
}

const parseMap = (text: string | undefined): Record<string, number> => {
  try {
    const v = JSON.parse(text || "{}");
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
};

export function rowsFromOptions(options: Record<string, string>): PriceRow[] {
  const price = parseMap(options.ModelPrice);
  const ratio = parseMap(options.ModelRatio);
  const completion = parseMap(options.CompletionRatio);
  const names = new Set([...Object.keys(price), ...Object.keys(ratio), ...Object.keys(completion)]);
  return [...names].sort().map((name) => ({
    name,
    ...(price[name] !== undefined ? { price: Number(price[name]) } : {}),
    ...(ratio[name] !== undefined ? { ratio: Number(ratio[name]) } : {}),
    ...(completion[name] !== undefined ? { completionRatio: Number(completion[name]) } : {}),
  }));
}

/** Per-request and per-token are exclusive: a row with a price contributes no ratios. */
export function mapsFromRows(rows: PriceRow[]): PricingMaps {
  const maps: PricingMaps = { ModelPrice: {}, ModelRatio: {}, CompletionRatio: {} };
  for (const r of rows) {
    if (r.price !== undefined) maps.ModelPrice[r.name] = r.price;
    else {
      if (r.ratio !== undefined) maps.ModelRatio[r.name] = r.ratio;
      if (r.completionRatio !== undefined) maps.CompletionRatio[r.name] = r.completionRatio;
    }
  }
  return maps;
}

/** The option strings to save, formatted like the JSON editor shows them. */
export function optionValuesFromRows(rows: PriceRow[]): Record<string, string> {
  const m = mapsFromRows(rows);
  return {
    ModelPrice: JSON.stringify(m.ModelPrice, null, 2),
    ModelRatio: JSON.stringify(m.ModelRatio, null, 2),
    CompletionRatio: JSON.stringify(m.CompletionRatio, null, 2),
  };
}

/** Compares option values by meaning, so reformatted JSON alone is not a change. */
export function sameJson(a: string | undefined, b: string | undefined): boolean {
  try {
    return JSON.stringify(JSON.parse(a || "{}")) === JSON.stringify(JSON.parse(b || "{}"));
  } catch {
    return a === b;
  }
}

export type PricingMode = "ratio" | "tokenPrice" | "request";

export interface RowDraft {
  name: string;
  mode: PricingMode;
  price: string;
  ratio: string;
  completionRatio: string;
  /** Dollars per 1M input / output tokens (the token-price editing mode). */
  tokenPrice: string;
  completionTokenPrice: string;
}

export function draftFromRow(r: PriceRow | null): RowDraft {
  if (!r)
    return {
      name: "",
      mode: "ratio",
      price: "",
      ratio: "",
      completionRatio: "",
      tokenPrice: "",
      completionTokenPrice: "",
    };
  const tokenPrice = r.ratio !== undefined ? String(r.ratio * 2) : "";
  const completionTokenPrice = r.ratio !== undefined ? String(r.ratio * 2 * (r.completionRatio ?? 1)) : "";
  return {
    name: r.name,
    mode: r.price !== undefined ? "request" : "ratio",
    price: r.price !== undefined ? String(r.price) : "",
    ratio: r.ratio !== undefined ? String(r.ratio) : "",
    completionRatio: r.completionRatio !== undefined ? String(r.completionRatio) : "",
    tokenPrice,
    completionTokenPrice,
  };
}

const isNum = (s: string) => s.trim() !== "" && Number.isFinite(Number(s));

export type DraftErrors = Partial<Record<keyof RowDraft, string>>;

/** Validates a draft; `existing` are the other rows' names (for the duplicate check on add). */
export function validateDraft(d: RowDraft, existing: string[], isNew: boolean): DraftErrors {
  const e: DraftErrors = {};
  if (!d.name.trim()) e.name = "pricing.nameRequired";
  else if (isNew && existing.includes(d.name.trim())) e.name = "pricing.nameExists";
  const numberOrEmpty = (k: keyof RowDraft) => {
    if (d[k].trim() !== "" && !isNum(d[k])) e[k] = "common.enterNumber";
  };
  if (d.mode === "request") {
    if (!isNum(d.price)) e.price = "common.enterNumber";
    else if (Number(d.price) === 0) e.price = "pricing.priceZero";
  } else if (d.mode === "ratio") {
    if (!isNum(d.ratio)) e.ratio = "common.enterNumber";
    numberOrEmpty("completionRatio");
  } else {
    if (!isNum(d.tokenPrice)) e.tokenPrice = "common.enterNumber";
    numberOrEmpty("completionTokenPrice");
  }
  return e;
}

/** Converts a valid draft to a row: ratio = token price / 2; completion ratio = output / input price. */
export function rowFromDraft(d: RowDraft): PriceRow {
  const name = d.name.trim();
  if (d.mode === "request") return { name, price: Number(d.price) };
  if (d.mode === "ratio") {
    return {
      name,
      ratio: Number(d.ratio),
      ...(d.completionRatio.trim() !== "" ? { completionRatio: Number(d.completionRatio) } : {}),
    };
  }
  const input = Number(d.tokenPrice);
  const row: PriceRow = { name, ratio: input / 2 };
  if (d.completionTokenPrice.trim() !== "" && input !== 0) row.completionRatio = Number(d.completionTokenPrice) / input;
  return row;
}

export type BatchField = "price" | "ratio" | "completionRatio" | "both";

/** Batch set over the selected rows; returns the new rows or an error key. */
export function applyBatch(
  rows: PriceRow[],
  selected: string[],
  field: BatchField,
  value: string,
  value2 = "",
): { rows: PriceRow[] } | { error: string } {
  if (selected.length === 0) return { error: "pricing.batchNoSelection" };
  if (field === "both") {
    if (value.trim() === "" || value2.trim() === "") return { error: "pricing.batchBothRequired" };
    if (!isNum(value) || !isNum(value2)) return { error: "pricing.batchInvalidNumber" };
  } else {
    if (value.trim() === "") return { error: "pricing.batchValueRequired" };
    if (!isNum(value)) return { error: "pricing.batchInvalidNumber" };
    if (field === "price" && Number(value) === 0) return { error: "pricing.priceZero" };
  }
  const pick = new Set(selected);
  return {
    rows: rows.map((r) => {
      if (!pick.has(r.name)) return r;
      if (field === "price") return { name: r.name, price: Number(value) };
      const { price: _drop, ...perToken } = r;
      if (field === "ratio") return { ...perToken, ratio: Number(value) };
      if (field === "completionRatio") return { ...perToken, completionRatio: Number(value) };
      return { ...perToken, ratio: Number(value), completionRatio: Number(value2) };
    }),
  };
}

/** Enabled models that have neither a fixed price nor a ratio (the models-without-ratio list). */
export function unsetModels(enabled: string[], rows: PriceRow[]): string[] {
  const priced = new Set(rows.filter((r) => r.price !== undefined || r.ratio !== undefined).map((r) => r.name));
  return [...new Set(enabled)].filter((m) => !priced.has(m)).sort();
}
