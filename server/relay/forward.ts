// The client headers a call forwards to its upstream (catalogue/forwarded-headers.ts says which): decided once
// per channel setting and wire format into a rule (names and a few prefixes), then applied per call.
import {
  FORWARDED_HEADERS,
  KIND_WIRE_FORMATS,
  NEVER_FORWARDED,
  channelType,
  forwardHeaderNames,
  type WireFormat,
} from "../catalogue/index.ts";
import type { ProviderAdaptor, ProviderCall } from "./providers/types.ts";

export interface ForwardRule {
  names: ReadonlySet<string>;
  /** the same names as a list, for a rule without prefixes (a lookup each: cheaper than walking the headers) */
  list: readonly string[];
  prefixes: readonly string[];
}

const NONE: ForwardRule = { names: new Set(), list: [], prefixes: [] };
const NEVER = new Set(NEVER_FORWARDED);

function ruleOf(list: readonly string[]): ForwardRule {
  const names = new Set<string>();
  const prefixes = new Set<string>();
  for (const entry of list) {
    const name = entry.trim().toLowerCase();
    if (name.endsWith("*")) {
      if (name.length > 1) prefixes.add(name.slice(0, -1));
    } else if (name && !NEVER.has(name)) names.add(name);
  }
  return names.size || prefixes.size ? { names, list: [...names], prefixes: [...prefixes] } : NONE;
}

/** The rules of the channels' settings objects (one per loaded channel row: core/route.ts channelConfig). */
const rules = new WeakMap<object, Partial<Record<WireFormat, ForwardRule>>>();
const DEFAULT_RULES: Readonly<Record<WireFormat, ForwardRule>> = {
  openai: ruleOf(FORWARDED_HEADERS.openai),
  claude: ruleOf(FORWARDED_HEADERS.claude),
  gemini: ruleOf(FORWARDED_HEADERS.gemini),
};

/** The rule for a call of `format` on a channel with these settings; nothing for a call the channel converts. */
export function forwardRule(format: WireFormat, options: Record<string, unknown>, native: boolean): ForwardRule {
  if (!native) return NONE;
  if (options.forward_headers === undefined) return DEFAULT_RULES[format];
  let byFormat = rules.get(options);
  if (!byFormat) rules.set(options, (byFormat = {}));
  return (byFormat[format] ??= ruleOf([...FORWARDED_HEADERS[format], ...forwardHeaderNames(options.forward_headers)]));
}

/**
 * The client's headers the rule lets through (lower-case names), or undefined when there are none; nothing is
 * made when the rule allows none. A rule of names only looks each up; one with prefixes walks the client's header
 * names once (Headers.keys(), a value read only for a header that goes), which stays small for a usual request.
 */
export function forwardedHeaders(headers: Headers | undefined, rule: ForwardRule): Record<string, string> | undefined {
  if (!headers || rule === NONE) return undefined;
  let out: Record<string, string> | undefined;
  const { names, prefixes } = rule;
  if (prefixes.length === 0) {
    for (const name of rule.list) {
      const value = headers.get(name);
      if (value !== null) (out ??= {})[name] = value;
    }
    return out;
  }
  for (const name of headers.keys()) {
    if (names.has(name) || hasPrefix(name, prefixes)) (out ??= {})[name] = headers.get(name)!;
  }
  return out;
}

function hasPrefix(name: string, prefixes: readonly string[]): boolean {
  if (NEVER.has(name)) return false;
  for (const p of prefixes) if (name.startsWith(p)) return true;
  return false;
}

/** Whether the channel's upstream speaks the client's format for this call (Vertex answers per model). */
function isNative(adaptor: ProviderAdaptor, call: ProviderCall): boolean {
  const kind = channelType(call.channel.type)?.kind;
  const formats = kind ? KIND_WIRE_FORMATS[kind] : undefined;
  return !!formats && formats.includes(call.format) && (adaptor.nativeFormat?.(call) ?? "openai") === call.format;
}

/** The client headers this attempt forwards (ProviderCall.clientHeaders). */
export function clientHeadersFor(
  adaptor: ProviderAdaptor,
  call: ProviderCall,
  headers: Headers | undefined,
): Record<string, string> | undefined {
  if (!headers) return undefined;
  return forwardedHeaders(headers, forwardRule(call.format, call.options, isNative(adaptor, call)));
}

/** The upstream request's headers with the forwarded ones added; a header the adaptor set itself (its auth,
 * its content type, a version it needs) is kept as the adaptor set it. */
export function withForwarded(
  headers: Record<string, string>,
  forwarded: Record<string, string>,
): Record<string, string> {
  const own = new Set(Object.keys(headers).map((k) => k.toLowerCase()));
  const out = { ...headers };
  for (const name in forwarded) if (!own.has(name)) out[name] = forwarded[name]!;
  return out;
}
