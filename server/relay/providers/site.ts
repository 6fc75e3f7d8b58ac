// Site options for providers: the live option store when the relay passes one, otherwise the option
// defaults (unit tests of the conversions, channel tests run outside a request).
import { OPTION_DEFAULTS } from "../../modules/option/defaults.ts";
import type { ProviderCall, SiteOptions } from "./types.ts";

class DefaultOptions implements SiteOptions {
  get(key: string): string {
    return (OPTION_DEFAULTS as Record<string, string>)[key] ?? "";
  }
  bool(key: string): boolean {
    return this.get(key) === "true";
  }
  number(key: string, fallback = 0): number {
    const raw = this.get(key);
    const n = Number(raw);
    return raw !== "" && Number.isFinite(n) ? n : fallback;
  }
  json<T>(key: string, fallback: T): T {
    try {
      const raw = this.get(key);
      return raw === "" ? fallback : (JSON.parse(raw) as T);
    } catch {
      return fallback;
    }
  }
}

export const DEFAULT_SITE_OPTIONS: SiteOptions = new DefaultOptions();

export function siteOf(call: Pick<ProviderCall, "site">): SiteOptions {
  return call.site ?? DEFAULT_SITE_OPTIONS;
}

/** Per-model option maps ({"default": x, "<model>": y}): the model's entry, else "default", else fallback. */
export function perModel<T>(map: unknown, model: string, fallback: T): T {
  if (map && typeof map === "object") {
    const m = map as Record<string, unknown>;
    if (m[model] !== undefined) return m[model] as T;
    if (m.default !== undefined) return m.default as T;
  }
  return fallback;
}
