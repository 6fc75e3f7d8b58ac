// Checks of the routing options' JSON before saving (the server checks them again and names the problem):
// ModelFallbacks is {model: [fallback models]}, GroupModelFallbacks is {group: {model: [fallback models]}}.
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

function tableOk(v: unknown): boolean {
  return (
    isObject(v)
    && Object.entries(v).every(
      ([k, list]) =>
        k.trim() !== "" && Array.isArray(list) && list.every((m) => typeof m === "string" && m.trim() !== ""),
    )
  );
}

function parsed(value: string): { ok: true; v: unknown } | { ok: false } {
  if (value.trim() === "") return { ok: true, v: {} };
  try {
    return { ok: true, v: JSON.parse(value) };
  } catch {
    return { ok: false };
  }
}

/** An i18n key naming what is wrong with a ModelFallbacks value, or null. */
export function fallbacksProblem(value: string): string | null {
  const p = parsed(value);
  if (!p.ok) return "settings.invalidJson";
  return tableOk(p.v) ? null : "operation.fallbacksShape";
}

/** An i18n key naming what is wrong with a GroupModelFallbacks value, or null. */
export function groupFallbacksProblem(value: string): string | null {
  const p = parsed(value);
  if (!p.ok) return "settings.invalidJson";
  return isObject(p.v) && Object.values(p.v).every(tableOk) ? null : "operation.groupFallbacksShape";
}
