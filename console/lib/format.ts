// Number, quota and time formatting shared by every screen (spec 000 §1, §9).
import { QUOTA_PER_UNIT } from "../../server/catalogue/index.ts";
import { getStoredStatus } from "./storage.ts";
import { i18n } from "../i18n/index.ts";

/** The console language's locale for Intl: zh-CN, en-US or ru-RU. */
export function locale(lang = i18n.language): string {
  return lang.startsWith("ru") ? "ru-RU" : lang.startsWith("en") ? "en-US" : "zh-CN";
}

// Building an Intl.NumberFormat costs far more than using one (a table of logs needs hundreds of numbers).
const formats = new Map<string, Intl.NumberFormat>();
function numberFormat(loc: string, max: number, min: number, grouping = true): Intl.NumberFormat {
  const key = `${loc}|${max}|${min}|${grouping}`;
  let f = formats.get(key);
  if (!f)
    formats.set(
      key,
      (f = new Intl.NumberFormat(loc, {
        maximumFractionDigits: max,
        minimumFractionDigits: min,
        useGrouping: grouping,
      })),
    );
  return f;
}

/** A number in the console language (decimal comma in Russian), with at most `digits` decimals. */
export function formatNumber(n: number, digits = 2, minDigits = 0): string {
  return numberFormat(locale(), digits, Math.min(minDigits, digits)).format(Number.isFinite(n) ? n : 0);
}

/** A duration in seconds, e.g. "0.42 s", "0.42 秒", "0,42 с". */
export function formatSeconds(seconds: number, digits = 2): string {
  return i18n.t("common.seconds", { n: formatNumber(seconds, digits, digits) });
}

/** Large numbers get k (from 10,000), M and B suffixes; smaller ones are shown as they are. */
export function renderNumber(n: number): string {
  if (!Number.isFinite(n)) return "0";
  const abs = Math.abs(n);
  // One decimal at most, with the console language's decimal sign ("1.5k", "1,5k").
  const trim = (v: number) => formatNumber(v, 1);
  if (abs >= 1e9) return trim(n / 1e9) + "B";
  if (abs >= 1e6) return trim(n / 1e6) + "M";
  if (abs >= 1e4) return trim(n / 1e3) + "k";
  return numberFormat(locale(), 2, 0, false).format(n);
}

export function quotaPerUnit(): number {
  const q = Number(getStoredStatus().quota_per_unit);
  return Number.isFinite(q) && q > 0 ? q : QUOTA_PER_UNIT;
}

export function displayInCurrency(): boolean {
  const v = getStoredStatus().display_in_currency;
  return v === undefined ? true : !!v;
}

/** The currency amounts are shown in (new-api's quota_display_type): its symbol and how many of it a dollar is. */
export function displayCurrency(): { symbol: string; rate: number } {
  const s = getStoredStatus();
  const rate = (v: unknown) => (Number.isFinite(Number(v)) && Number(v) > 0 ? Number(v) : 1);
  if (s.quota_display_type === "CNY") return { symbol: "¥", rate: rate(s.usd_exchange_rate) };
  if (s.quota_display_type === "CUSTOM")
    return { symbol: s.custom_currency_symbol || "¤", rate: rate(s.custom_currency_exchange_rate) };
  return { symbol: "$", rate: 1 };
}

/** Quota in the site's display currency (dollars, yuan at USDExchangeRate, or a custom one) when
 * display_in_currency is on, else raw units with k/M/B. */
export function renderQuota(quota: number, digits = 2, inCurrency = displayInCurrency()): string {
  if (!inCurrency) return renderNumber(quota);
  const { symbol, rate } = displayCurrency();
  const amount = (quota / quotaPerUnit()) * rate;
  const fixed = amount.toFixed(digits);
  // Tiny non-zero amounts would otherwise read as $0.00. The decimal sign is the language's, as in every
  // other number on the page (a Russian "$0,000028" next to a ratio of "0,125").
  const decimal = decimalSign();
  if (quota !== 0 && Number(fixed) === 0) return symbol + amount.toPrecision(2).replace(".", decimal);
  return symbol + fixed.replace(".", decimal);
}

function decimalSign(): string {
  return (
    numberFormat(locale(), 1, 1, false)
      .formatToParts(0.5)
      .find((p) => p.type === "decimal")?.value ?? "."
  );
}

/** The inverse for inputs shown in dollars: dollars → integer quota. */
export const dollarsToQuota = (dollars: number) => Math.round(dollars * quotaPerUnit());

export function timestampToString(seconds: number): string {
  if (!seconds) return "-";
  const d = new Date(seconds * 1000);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Ratio tag colour: over 5 red, over 3 orange, over 1 blue, else green. */
export function ratioColor(ratio: number): "red" | "orange" | "blue" | "green" {
  if (ratio > 5) return "red";
  if (ratio > 3) return "orange";
  if (ratio > 1) return "blue";
  return "green";
}

export const isNewYearsDay = (d: Date = new Date()) => d.getMonth() === 0 && d.getDate() === 1;
