// new-api's fetch_setting.* options (server/infra/outbound.ts applies them): switches are "true"/"false",
// lists are JSON arrays of strings as new-api stores them, so a database moves between the two unchanged.
import { badRequest } from "../../http/errors.ts";
import { isDomainPattern, parseCidr, parsePortRanges } from "../../infra/outbound.ts";

const SWITCHES = new Set([
  "enable_ssrf_protection",
  "allow_private_ip",
  "domain_filter_mode",
  "ip_filter_mode",
  "apply_ip_filter_for_domain",
]);

function list(key: string, value: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.trim() === "" ? "[]" : value);
  } catch {
    throw badRequest(`${key} must be a JSON array, e.g. ["example.com"]`);
  }
  if (!Array.isArray(parsed)) throw badRequest(`${key} must be a JSON array, e.g. ["example.com"]`);
  for (const item of parsed)
    if (typeof item !== "string" && typeof item !== "number") throw badRequest(`${key}: every entry must be a string`);
  return parsed;
}

/** The value to store for a fetch_setting.* key, or a 400 naming the problem. */
export function validateFetchSetting(key: string, value: string): string {
  const name = key.slice("fetch_setting.".length);
  if (SWITCHES.has(name)) {
    if (value !== "true" && value !== "false") throw badRequest(`${key} must be "true" or "false"`);
    return value;
  }
  const items = list(key, value)
    .map((i) => String(i).trim())
    .filter(Boolean);
  if (name === "allowed_ports") {
    try {
      parsePortRanges(items);
    } catch (e) {
      throw badRequest(`${key}: ${(e as Error).message}`);
    }
  } else if (name === "domain_list") {
    for (const d of items)
      if (!isDomainPattern(d)) throw badRequest(`${key}: "${d}" is not a domain or a pattern like *.example.com`);
    return JSON.stringify(items.map((d) => d.toLowerCase()));
  } else if (name === "ip_list") {
    for (const ip of items)
      if (!parseCidr(ip)) throw badRequest(`${key}: "${ip}" is not an IP address or a CIDR range`);
  }
  return JSON.stringify(items);
}
