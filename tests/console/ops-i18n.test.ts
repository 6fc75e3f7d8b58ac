// The operations screens' strings: the three dictionaries carry the same keys, and every key the
// screens use (literal or built from a known set of values) exists.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import en from "../../console/i18n/ops.en.ts";
import zh from "../../console/i18n/ops.zh.ts";
import ru from "../../console/i18n/ops.ru.ts";
import { TYPE_FIELDS } from "../../console/pages/channel-edit/fields.ts";
import { DRAWING_ACTIONS } from "../../console/pages/midjourney/index.tsx";

const PAGES = resolve(import.meta.dir, "../../console/pages");
const OPS_DIRS = [
  "_shared",
  "channel",
  "channel-edit",
  "token",
  "redemption",
  "topup",
  "log",
  "detail",
  "midjourney",
  "task",
  "pricing",
  "playground",
  "chat",
  "chat2link",
];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(f) ? [p] : [];
  });
}

const used = new Set<string>();
for (const d of OPS_DIRS) {
  for (const f of files(join(PAGES, d)))
    for (const m of readFileSync(f, "utf8").matchAll(/"(ops\.[A-Za-z0-9_.]+)"/g)) used.add(m[1]);
}
// Keys built at run time from closed sets of values.
const dynamic = [
  ...[1, 2, 3].map((s) => `ops.ch.status.${s}`),
  ...[1, 2, 3, 4].map((s) => `ops.token.status.${s}`),
  ...[1, 2, 3].map((s) => `ops.redemption.status.${s}`),
  ...[0, 1, 2, 3, 4, 5].map((s) => `ops.log.types.${s}`),
  "ops.topup.method.zfb",
  "ops.topup.method.wx",
  "ops.detail.hour",
  "ops.detail.day",
  "ops.detail.week",
  ...["loading", "incomplete", "complete", "error"].map((s) => `ops.pg.status.${s}`),
  ...DRAWING_ACTIONS.map((a) => `ops.mj.action.${a}`),
  ...["1", "21", "22", "0", "other"].map((c) => `ops.mj.code.${c}`),
  ...["NOT_START", "SUBMITTED", "IN_PROGRESS", "SUCCESS", "FAILURE", "MODAL", "other"].map((s) => `ops.mj.status.${s}`),
  "ops.task.action.MUSIC",
  "ops.task.action.LYRICS",
  ...["SUCCESS", "NOT_START", "SUBMITTED", "IN_PROGRESS", "FAILURE", "QUEUED", "UNKNOWN"].map(
    (s) => `ops.task.status.${s}`,
  ),
];

describe("operations dictionaries", () => {
  test("zh, en and ru have exactly the same keys, none empty", () => {
    const keys = Object.keys(en).sort();
    expect(Object.keys(zh).sort()).toEqual(keys);
    expect(Object.keys(ru).sort()).toEqual(keys);
    for (const d of [en, zh, ru]) for (const k of keys) expect(d[k].trim().length).toBeGreaterThan(0);
  });

  test("every key the screens use exists", () => {
    const missing = [...used, ...dynamic].filter((k) => !(k in en));
    expect(missing).toEqual([]);
    for (const f of Object.values(TYPE_FIELDS)) {
      for (const k of [f.other?.label, f.baseUrl?.label, f.keyHint]) if (k) expect(k in en).toBe(true);
      // placeholders and help are i18n keys too, unless they are literal addresses
      for (const k of [f.other?.placeholder, f.other?.help, f.baseUrl?.placeholder, f.baseUrl?.help])
        if (k?.startsWith("ops.")) expect(k in en).toBe(true);
    }
  });

  test("placeholders ({{name}}) match across languages", () => {
    const vars = (s: string) => [...s.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]).sort();
    for (const k of Object.keys(en)) {
      expect(vars(zh[k])).toEqual(vars(en[k]));
      expect(vars(ru[k])).toEqual(vars(en[k]));
    }
  });
});
