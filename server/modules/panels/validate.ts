// new-api's console_setting.* options: the dashboard's API addresses, announcements, FAQ and Uptime Kuma
// groups, each a JSON array stored as text (same keys and shapes, so a new-api database keeps its panels),
// plus one switch per panel. Values are checked on save with new-api's limits; the console renders every
// text as text (never HTML), and the shown links are http(s) only.
import { badRequest } from "../../http/errors.ts";

export const PANEL_OPTION_DEFAULTS: Record<string, string> = {
  "console_setting.api_info": "",
  "console_setting.announcements": "",
  "console_setting.faq": "",
  "console_setting.uptime_kuma_groups": "",
  "console_setting.api_info_enabled": "true",
  "console_setting.announcements_enabled": "true",
  "console_setting.faq_enabled": "true",
  "console_setting.uptime_kuma_enabled": "true",
};

/** API address colours new-api's console offers (Semi UI's palette names). */
export const API_INFO_COLORS = new Set([
  "blue",
  "green",
  "cyan",
  "purple",
  "pink",
  "red",
  "orange",
  "amber",
  "yellow",
  "lime",
  "light-green",
  "teal",
  "light-blue",
  "indigo",
  "violet",
  "grey",
  "slate",
]);
export const ANNOUNCEMENT_TYPES = new Set(["default", "ongoing", "success", "warning", "error"]);

const URL_RE = /^https?:\/\/[^\s/?#]+(?::\d{1,5})?(?:[/?#]\S*)?$/i;
const SLUG_RE = /^[A-Za-z0-9_-]+$/;
const SCRIPTY = ["<script", "<iframe", "javascript:", "onload=", "onerror=", "onclick="];

type Item = Record<string, unknown>;

function list(value: string, what: string, max: number): Item[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw badRequest(`${what}: not valid JSON (expected an array of objects)`);
  }
  if (!Array.isArray(parsed) || parsed.some((x) => !x || typeof x !== "object" || Array.isArray(x))) {
    throw badRequest(`${what}: expected a JSON array of objects`);
  }
  if (parsed.length > max) throw badRequest(`${what}: at most ${max} entries`);
  return parsed as Item[];
}

function text(item: Item, field: string, n: number, what: string, opts: { required?: boolean; max: number }): string {
  const v = item[field];
  if (v === undefined || v === null || v === "") {
    if (opts.required) throw badRequest(`${what} #${n}: ${field} is required`);
    return "";
  }
  if (typeof v !== "string") throw badRequest(`${what} #${n}: ${field} must be text`);
  if ([...v].length > opts.max) throw badRequest(`${what} #${n}: ${field} is longer than ${opts.max} characters`);
  return v;
}

function plain(v: string, field: string, n: number, what: string) {
  const lower = v.toLowerCase();
  if (SCRIPTY.some((d) => lower.includes(d)))
    throw badRequest(`${what} #${n}: ${field} contains markup that is not allowed`);
}

function url(v: string, n: number, what: string) {
  if (!URL_RE.test(v)) throw badRequest(`${what} #${n}: url must be an http:// or https:// address`);
}

const VALIDATORS: Record<string, (value: string) => void> = {
  "console_setting.api_info": (value) => {
    const what = "API address";
    list(value, what, 50).forEach((item, i) => {
      const n = i + 1;
      url(text(item, "url", n, what, { required: true, max: 500 }), n, what);
      plain(text(item, "route", n, what, { required: true, max: 100 }), "route", n, what);
      plain(text(item, "description", n, what, { required: true, max: 200 }), "description", n, what);
      if (!API_INFO_COLORS.has(text(item, "color", n, what, { required: true, max: 20 })))
        throw badRequest(`${what} #${n}: unknown color`);
    });
  },
  "console_setting.announcements": (value) => {
    const what = "announcement";
    list(value, what, 100).forEach((item, i) => {
      const n = i + 1;
      text(item, "content", n, what, { required: true, max: 500 });
      const date = text(item, "publishDate", n, what, { required: true, max: 64 });
      if (!/^\d{4}-\d{2}-\d{2}T/.test(date) || Number.isNaN(Date.parse(date)))
        throw badRequest(`${what} #${n}: publishDate must be an RFC 3339 time`);
      if (item.type !== undefined && !ANNOUNCEMENT_TYPES.has(String(item.type)))
        throw badRequest(`${what} #${n}: unknown type`);
      text(item, "extra", n, what, { max: 200 });
    });
  },
  "console_setting.faq": (value) => {
    const what = "FAQ entry";
    list(value, what, 100).forEach((item, i) => {
      text(item, "question", i + 1, what, { required: true, max: 200 });
      text(item, "answer", i + 1, what, { required: true, max: 1000 });
    });
  },
  "console_setting.uptime_kuma_groups": (value) => {
    const what = "Uptime Kuma group";
    const names = new Set<string>();
    list(value, what, 20).forEach((item, i) => {
      const n = i + 1;
      const name = text(item, "categoryName", n, what, { required: true, max: 50 });
      if (names.has(name)) throw badRequest(`${what} #${n}: categoryName repeats another group's`);
      names.add(name);
      plain(name, "categoryName", n, what);
      url(text(item, "url", n, what, { required: true, max: 500 }), n, what);
      if (!SLUG_RE.test(text(item, "slug", n, what, { required: true, max: 100 })))
        throw badRequest(`${what} #${n}: slug may hold only letters, digits, _ and -`);
      plain(text(item, "description", n, what, { max: 200 }), "description", n, what);
    });
  },
};

/** The value to store for a console_setting.* key, or a 400 naming the problem. */
export function validatePanelOption(key: string, value: string): string {
  if (key.endsWith("_enabled")) {
    if (value !== "true" && value !== "false") throw badRequest(`${key} must be "true" or "false"`);
    return value;
  }
  if (value.trim() === "") return "";
  try {
    VALIDATORS[key]?.(value);
  } catch (e) {
    throw badRequest(`${key}: ${(e as Error).message}`);
  }
  return value;
}

/** A stored list, or [] when empty or unreadable (an older value never breaks the status call). */
export function panelList(raw: string): Item[] {
  if (!raw.trim()) return [];
  try {
    const v = JSON.parse(raw);
    return Array.isArray(v) ? v.filter((x) => x && typeof x === "object" && !Array.isArray(x)) : [];
  } catch {
    return [];
  }
}

/** Newest first, as new-api sends them (by publishDate; undated entries last). */
export function sortedAnnouncements(raw: string): Item[] {
  const time = (x: Item) => {
    const t = Date.parse(String(x.publishDate ?? ""));
    return Number.isNaN(t) ? -Infinity : t;
  };
  return panelList(raw)
    .map((x, i) => ({ x, i }))
    .sort((a, b) => time(b.x) - time(a.x) || a.i - b.i)
    .map(({ x }) => x);
}

/** The panel part of /api/status, as new-api sends it: the four switches, and each enabled panel's list. */
export function panelStatus(get: (key: string) => string): Record<string, unknown> {
  const on = (k: string) => get(`console_setting.${k}_enabled`) === "true";
  const out: Record<string, unknown> = {
    api_info_enabled: on("api_info"),
    uptime_kuma_enabled: on("uptime_kuma"),
    announcements_enabled: on("announcements"),
    faq_enabled: on("faq"),
  };
  if (on("api_info")) out.api_info = panelList(get("console_setting.api_info"));
  if (on("announcements")) out.announcements = sortedAnnouncements(get("console_setting.announcements"));
  if (on("faq")) out.faq = panelList(get("console_setting.faq"));
  return out;
}
