// Field descriptions and validation for the option forms of the settings page (spec 000 §5, 001 §5).
// Everything here is pure: the section component renders and saves, these functions decide.

export type FieldType = "switch" | "text" | "secret" | "url" | "number" | "textarea" | "json" | "select" | "domains";

export interface FieldDef {
  key: string;
  label: string;
  type: FieldType;
  help?: string;
  placeholder?: string;
  min?: number;
  max?: number;
  step?: number;
  /** Integer-only numbers. */
  integer?: boolean;
  options?: Array<{ value: string; label: string }>;
  /** Switches that save the moment they change instead of through the section button. */
  immediate?: boolean;
  readOnly?: boolean;
  /** Message key when the JSON does not parse (default "settings.invalidJson"). */
  jsonMessage?: string;
  /** Extra check on the raw value; returns an i18n key. */
  validate?: (value: string, all: Record<string, string>) => string | null;
  disabledWhen?: (all: Record<string, string>) => boolean;
  span?: 1 | 2 | 3;
}

export const isJson = (v: string) => {
  if (v.trim() === "") return true;
  try {
    JSON.parse(v);
    return true;
  } catch {
    return false;
  }
};

/** The error key for one field's current value, or null. */
export function fieldProblem(f: FieldDef, value: string, all: Record<string, string>): string | null {
  if (f.readOnly || (f.disabledWhen && f.disabledWhen(all))) return null;
  if (f.type === "json" && !isJson(value)) return f.jsonMessage ?? "settings.invalidJson";
  if (f.type === "number") {
    if (value.trim() === "" || !Number.isFinite(Number(value))) return "common.enterNumber";
    const n = Number(value);
    if (f.integer && !Number.isInteger(n)) return "settings.integerRequired";
    if (f.min !== undefined && n < f.min) return "settings.tooSmall";
    if (f.max !== undefined && n > f.max) return "settings.tooLarge";
  }
  return f.validate ? f.validate(value, all) : null;
}

export const stripTrailingSlash = (v: string) => v.trim().replace(/\/+$/, "");

/**
 * What a section sends: trailing slashes stripped from addresses, secrets only when typed (the server
 * never returns them, so an empty secret means "keep the stored one").
 */
export function outgoingValues(fields: FieldDef[], values: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fields) {
    if (f.readOnly || f.immediate) continue;
    let v = values[f.key] ?? "";
    if (f.type === "url") v = stripTrailingSlash(v);
    if (f.type === "secret" && v === "") continue;
    if (f.type === "number" && v.trim() !== "") v = String(Number(v));
    out[f.key] = v;
  }
  return out;
}

export const DOMAIN_RE = /^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\.[a-z]{2,63}$/i;

/** Adds a domain to the comma-separated whitelist; returns the new list or an error key. */
export function addDomain(list: string, domain: string): { list: string } | { error: string } {
  const d = domain.trim().toLowerCase();
  if (!DOMAIN_RE.test(d)) return { error: "system.domainInvalid" };
  const items = splitList(list);
  if (items.includes(d)) return { error: "system.domainDuplicate" };
  return { list: [...items, d].join(",") };
}

export const splitList = (list: string) =>
  list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** Duplicate keys of a JSON object text (JSON.parse would silently keep the last one). */
export function duplicateTopLevelKeys(text: string): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  let depth = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      let s = "";
      while (j < text.length && text[j] !== '"') {
        if (text[j] === "\\") {
          s += text[j + 1];
          j += 2;
          continue;
        }
        s += text[j];
        j++;
      }
      const rest = text.slice(j + 1).trimStart();
      if (depth === 1 && rest.startsWith(":")) {
        if (seen.has(s)) dups.push(s);
        seen.add(s);
      }
      i = j + 1;
      continue;
    }
    if (c === "{" || c === "[") depth++;
    if (c === "}" || c === "]") depth--;
    i++;
  }
  return dups;
}

/** A JSON object whose every value passes `ok` (empty text is fine): null, "settings.invalidJson", or `shapeKey`. */
export function objectValuesProblem(text: string, shapeKey: string, ok: (value: unknown) => boolean): string | null {
  if (text.trim() === "") return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return "settings.invalidJson";
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) return shapeKey;
  return Object.values(v as Record<string, unknown>).every(ok) ? null : shapeKey;
}

/** ModelRequestRateLimitGroup: {"group": [max requests >= 0, max successes >= 1]}. */
export function rateLimitGroupProblem(text: string): string | null {
  return objectValuesProblem(text, "ratelimit.groupShape", (pair) => {
    if (!Array.isArray(pair) || pair.length !== 2) return false;
    const [count, success] = pair.map(Number);
    return Number.isInteger(count) && count >= 0 && Number.isInteger(success) && success >= 1;
  });
}

export function groupNamesProblem(text: string): string | null {
  if (!isJson(text)) return "settings.invalidJson";
  return duplicateTopLevelKeys(text).length ? "operation.groupDuplicate" : null;
}

export function wellKnownProblem(url: string): string | null {
  if (url.trim() === "") return null;
  return /^https?:\/\//.test(url.trim()) ? null : "system.wellKnownScheme";
}
