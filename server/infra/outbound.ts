// Outbound requests to addresses that users supply (image URLs in prompts, notification webhooks): the one
// door through which the server fetches them, so a request can never be turned against the gateway's own
// network (SSRF). Rules come from new-api's fetch_setting.* options:
//   enable_ssrf_protection   off = no address checks at all (redirects, size and time limits still apply)
//   allow_private_ip         private, loopback, link-local, CGNAT, multicast and reserved ranges
//   allowed_ports            ["80", "443", "8000-9000"]; an empty list allows every port
//   domain_filter_mode/_list true = whitelist, false = blacklist; "example.com" or "*.example.com"
//   ip_filter_mode/ip_list   the same for addresses (CIDR or single IP)
//   apply_ip_filter_for_domain  the IP list also judges the addresses a name resolves to
// Unlike new-api, what a name resolves to is always checked against the private ranges (a name pointing at
// 127.0.0.1 is as dangerous as 127.0.0.1), and cloud metadata addresses stay closed even with
// allow_private_ip (only turning protection off opens them). A checked name is connected to at the address
// that passed the check (Host header and TLS server name keep the name), so DNS cannot answer differently
// between the check and the connection. Redirects are followed by hand and every hop is checked again.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

/** The read side of the option store this module needs (OptionStore and the providers' SiteOptions fit). */
export interface OptionReader {
  get(key: string): string;
}

export const FETCH_SETTING_DEFAULTS: Record<string, string> = {
  "fetch_setting.enable_ssrf_protection": "true",
  "fetch_setting.allow_private_ip": "false",
  "fetch_setting.domain_filter_mode": "false",
  "fetch_setting.domain_list": "[]",
  "fetch_setting.ip_filter_mode": "false",
  "fetch_setting.ip_list": "[]",
  "fetch_setting.allowed_ports": JSON.stringify(["80", "443", "8080", "8443"]),
  "fetch_setting.apply_ip_filter_for_domain": "true",
};

export class OutboundError extends Error {
  /** true: the policy refused the address (the caller's fault, a 400); false: the fetch itself failed. */
  constructor(
    message: string,
    readonly refused: boolean,
  ) {
    super(message);
  }
}

// ---- addresses: every IP as 16 bytes (IPv4 as ::ffff:a.b.c.d), ranges as prefix + length ----

type Bytes = Uint8Array;
interface Cidr {
  bytes: Bytes;
  prefix: number;
}

function v4Bytes(text: string): number[] | null {
  if (isIP(text) !== 4) return null;
  return text.split(".").map(Number);
}

/** 16 bytes for an IPv4 or IPv6 literal (brackets and a zone id allowed), or null. */
export function parseIp(raw: string): Bytes | null {
  const text = raw.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const v4 = v4Bytes(text);
  if (v4) return Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...v4]);
  if (isIP(text) !== 6) return null;
  let groups: number[] = [];
  const [head, tail] = text.includes("::") ? (text.split("::") as [string, string]) : [text, null];
  const parse = (part: string) => {
    const out: number[] = [];
    for (const g of part ? part.split(":") : []) {
      const dotted = v4Bytes(g);
      if (dotted) out.push((dotted[0]! << 8) | dotted[1]!, (dotted[2]! << 8) | dotted[3]!);
      else out.push(parseInt(g, 16));
    }
    return out;
  };
  const h = parse(head);
  if (tail === null) groups = h;
  else {
    const t = parse(tail);
    groups = [...h, ...new Array(8 - h.length - t.length).fill(0), ...t];
  }
  if (groups.length !== 8) return null;
  return Uint8Array.from(groups.flatMap((g) => [g >> 8, g & 0xff]));
}

/** "10.0.0.0/8", "fd00::/8" or a single address; null when malformed. */
export function parseCidr(text: string): Cidr | null {
  const [addr, len, extra] = text.trim().split("/");
  if (extra !== undefined || !addr) return null;
  const bytes = parseIp(addr);
  if (!bytes) return null;
  const isV4 = isIP(addr) === 4;
  const max = isV4 ? 32 : 128;
  const n = len === undefined ? max : /^\d{1,3}$/.test(len) ? Number(len) : NaN;
  if (!(n >= 0 && n <= max)) return null;
  return { bytes, prefix: isV4 ? n + 96 : n };
}

function inCidr(ip: Bytes, c: Cidr): boolean {
  let bits = c.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip[i]! & mask) !== (c.bytes[i]! & mask)) return false;
  }
  return true;
}

const cidrs = (list: string[]) => list.map((s) => parseCidr(s)!);

/** Not on the public internet: private, loopback, link-local, CGNAT, documentation, multicast, reserved. */
const NON_PUBLIC = cidrs([
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
  "::/128",
  "::1/128",
  "100::/64",
  "2001:db8::/32",
  "fc00::/7",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
]);

/** Cloud instance metadata (credentials): AWS/GCP/Azure/OpenStack, AWS ECS, Alibaba, AWS over IPv6. */
const METADATA = cidrs(["169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254"]);
const METADATA_NAMES = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
]);

/** IPv4 carried inside an IPv6 address (mapped, compatible, NAT64, 6to4, Teredo), judged as itself. */
function embeddedV4(ip: Bytes): Bytes | null {
  const v4 = (a: number[]) => Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...a]);
  const zeros = (from: number, to: number) => ip.slice(from, to).every((b) => b === 0);
  if (zeros(0, 10) && ip[10] === 0xff && ip[11] === 0xff) return null; // already IPv4 (mapped)
  if (zeros(0, 12) && !zeros(12, 14)) return v4([...ip.slice(12)]); // ::a.b.c.d (deprecated compatible form)
  if (ip[0] === 0x00 && ip[1] === 0x64 && ip[2] === 0xff && ip[3] === 0x9b && zeros(4, 12))
    return v4([...ip.slice(12)]); // 64:ff9b::/96
  if (ip[0] === 0x20 && ip[1] === 0x02) return v4([...ip.slice(2, 6)]); // 2002::/16
  if (ip[0] === 0x20 && ip[1] === 0x01 && ip[2] === 0 && ip[3] === 0) return v4([...ip.slice(12)].map((b) => b ^ 0xff)); // Teredo
  return null;
}

const judged = (ip: Bytes): Bytes[] => {
  const inner = embeddedV4(ip);
  return inner ? [ip, inner] : [ip];
};
const isMetadata = (ip: Bytes) => judged(ip).some((x) => METADATA.some((c) => inCidr(x, c)));
const isNonPublic = (ip: Bytes) => judged(ip).some((x) => NON_PUBLIC.some((c) => inCidr(x, c)));

// ---- the policy ----

export interface FetchPolicy {
  enabled: boolean;
  allowPrivate: boolean;
  domainWhitelist: boolean;
  domains: string[];
  ipWhitelist: boolean;
  ips: Cidr[];
  /** Inclusive ranges; empty = every port. */
  ports: [number, number][];
  ipFilterForDomains: boolean;
}

/** "80", "8000-9000" (strings or numbers) → ranges; throws with a message naming the bad entry. */
export function parsePortRanges(list: unknown[]): [number, number][] {
  return list.map((item) => {
    const m = /^\s*(\d{1,5})\s*(?:-\s*(\d{1,5})\s*)?$/.exec(String(item));
    const from = m ? Number(m[1]) : NaN;
    const to = m?.[2] !== undefined ? Number(m[2]) : from;
    if (!(from >= 1 && to <= 65535 && from <= to))
      throw new Error(`"${String(item)}" is not a port (1-65535) or a range like 8000-9000`);
    return [from, to] as [number, number];
  });
}

const DOMAIN_PATTERN =
  /^(\*\.)?(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)(\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)*$/i;
export const isDomainPattern = (s: string) => DOMAIN_PATTERN.test(s.trim());

function domainListed(host: string, list: string[]): boolean {
  return list.some((item) => {
    if (item.startsWith("*.")) {
      const suffix = item.slice(2);
      return host === suffix || host.endsWith("." + suffix);
    }
    return host === item;
  });
}

function jsonList(raw: string): unknown[] {
  try {
    const v = JSON.parse(raw);
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

let memo: { raw: string; policy: FetchPolicy } | null = null;

/** The policy of the fetch_setting.* options (defaults for keys the reader lacks); bad entries are skipped. */
export function fetchPolicy(options?: OptionReader): FetchPolicy {
  const get = (key: string) => {
    const v = options?.get(key) ?? "";
    return v === "" ? FETCH_SETTING_DEFAULTS[key]! : v;
  };
  const keys = Object.keys(FETCH_SETTING_DEFAULTS);
  const raw = keys.map(get).join("\u0000");
  if (memo?.raw === raw) return memo.policy;
  const on = (k: string) => get(`fetch_setting.${k}`) === "true";
  const ports = jsonList(get("fetch_setting.allowed_ports")).flatMap((p) => {
    try {
      return parsePortRanges([p]);
    } catch {
      return [];
    }
  });
  const policy: FetchPolicy = {
    enabled: on("enable_ssrf_protection"),
    allowPrivate: on("allow_private_ip"),
    domainWhitelist: on("domain_filter_mode"),
    domains: jsonList(get("fetch_setting.domain_list"))
      .map((d) => String(d).trim().toLowerCase())
      .filter(Boolean),
    ipWhitelist: on("ip_filter_mode"),
    ips: jsonList(get("fetch_setting.ip_list"))
      .map((s) => parseCidr(String(s)))
      .filter((c): c is Cidr => !!c),
    ports,
    ipFilterForDomains: on("apply_ip_filter_for_domain"),
  };
  memo = { raw, policy };
  return policy;
}

export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** Where to connect for a checked URL: the address that passed (null = the URL as it is). */
interface Target {
  address: string | null;
}

/** Refuses an address the policy does not allow; `name` is the host name it was resolved from, if any. */
function judgeIp(ip: Bytes, shown: string, p: FetchPolicy, name: string | null): void {
  const refuse = (what: string) => {
    throw new OutboundError(name ? `${name} resolves to ${what}` : `${shown} is ${what}`, true);
  };
  if (isMetadata(ip)) refuse("a cloud metadata address, which is never fetched");
  if (isNonPublic(ip) && !p.allowPrivate) refuse("a private or local address (fetch_setting.allow_private_ip is off)");
  if (name && !p.ipFilterForDomains) return;
  const listed = p.ips.some((c) => judged(ip).some((x) => inCidr(x, c)));
  if (p.ipWhitelist && !listed) refuse("an address that is not on the IP whitelist");
  if (!p.ipWhitelist && listed) refuse("an address on the IP blacklist");
}

/** Checks one URL against the policy; answers the address to connect to. Throws OutboundError. */
export async function checkUrl(url: URL, p: FetchPolicy, resolve: Resolver = systemResolver): Promise<Target> {
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new OutboundError(`only http and https URLs are fetched, not ${url.protocol}`, true);
  if (url.username || url.password) throw new OutboundError("URLs with a user name or password are not fetched", true);
  if (!p.enabled) return { address: null };
  const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  if (p.ports.length && !p.ports.some(([a, b]) => port >= a && port <= b)) {
    throw new OutboundError(`port ${port} is not allowed (fetch_setting.allowed_ports)`, true);
  }
  const host = url.hostname.replace(/\.$/, "").toLowerCase();
  const literal = parseIp(host);
  if (literal) {
    judgeIp(literal, host.replace(/^\[|\]$/g, ""), p, null);
    return { address: null };
  }
  if (METADATA_NAMES.has(host))
    throw new OutboundError(`${host} is a cloud metadata address and is never fetched`, true);
  const listed = domainListed(host, p.domains);
  if (p.domainWhitelist && !listed) throw new OutboundError(`${host} is not on the domain whitelist`, true);
  if (!p.domainWhitelist && listed) throw new OutboundError(`${host} is on the domain blacklist`, true);
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    addresses = [];
  }
  if (!addresses.length) throw new OutboundError(`${host} could not be resolved`, false);
  for (const a of addresses) {
    const ip = parseIp(a);
    if (!ip) throw new OutboundError(`${host} could not be resolved`, false);
    judgeIp(ip, a, p, host);
  }
  return { address: addresses[0]! };
}

// ---- fetching ----

export interface OutboundOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The whole exchange, every hop and the body included. */
  timeoutMs: number;
  /** Larger answers are refused (the declared length is checked first, then the bytes as they arrive). */
  maxBytes: number;
  /** 0 = a redirect is answered as it is (the caller sees the 3xx). */
  maxRedirects?: number;
  policy: FetchPolicy;
  /** Tests resolve names without DNS. */
  resolve?: Resolver;
}

export interface OutboundResponse {
  status: number;
  headers: Headers;
  body: Uint8Array;
  /** The URL that answered, after redirects. */
  url: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Dropped when a redirect leaves the origin, as browsers do. */
const CREDENTIAL_HEADERS = ["authorization", "cookie", "proxy-authorization"];

const tooLarge = (maxBytes: number) =>
  new OutboundError(
    `the answer is larger than ${maxBytes % 1048576 === 0 ? `${maxBytes / 1048576} MB` : `${maxBytes} bytes`}`,
    true,
  );

async function readCapped(res: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get("content-length") ?? 0);
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw tooLarge(maxBytes);
  }
  if (!res.body) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge(maxBytes);
    }
    parts.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Fetches a user-supplied URL under the policy: checked, pinned, redirects re-checked, bounded in time and size. */
export async function fetchOutbound(raw: string, o: OutboundOptions): Promise<OutboundResponse> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundError("not a valid URL", true);
  }
  const signal = AbortSignal.timeout(o.timeoutMs);
  let method = (o.method ?? "GET").toUpperCase();
  let body = o.body;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(o.headers ?? {})) headers[k.toLowerCase()] = v;
  const maxRedirects = o.maxRedirects ?? 5;
  try {
    for (let hop = 0; ; hop++) {
      const target = await checkUrl(url, o.policy, o.resolve);
      let connect = url.href;
      let tls: Record<string, string> | undefined;
      const sent = { ...headers };
      if (target.address) {
        const pinned = new URL(url.href);
        pinned.hostname = isIP(target.address) === 6 ? `[${target.address}]` : target.address;
        connect = pinned.href;
        sent.host = url.host;
        if (url.protocol === "https:") tls = { serverName: url.hostname };
      }
      let res: Response;
      try {
        res = await fetch(connect, {
          method,
          headers: sent,
          body,
          redirect: "manual",
          signal,
          ...(tls ? { tls } : {}),
        } as RequestInit);
      } catch (_e) {
        if (signal.aborted) throw new OutboundError(`no answer within ${Math.round(o.timeoutMs / 1000)} s`, false);
        throw new OutboundError(`could not connect to ${url.host}`, false);
      }
      const location = res.headers.get("location");
      if (!REDIRECTS.has(res.status) || !location || maxRedirects === 0) {
        return { status: res.status, headers: res.headers, body: await readCapped(res, o.maxBytes), url: url.href };
      }
      await res.body?.cancel();
      if (hop >= maxRedirects) throw new OutboundError(`more than ${maxRedirects} redirects`, true);
      const next = new URL(location, url);
      if (next.origin !== url.origin) for (const h of CREDENTIAL_HEADERS) delete headers[h];
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
        delete headers["content-type"];
      }
      url = next;
    }
  } catch (e) {
    if (e instanceof OutboundError) throw e;
    if (signal.aborted) throw new OutboundError(`no answer within ${Math.round(o.timeoutMs / 1000)} s`, false);
    throw new OutboundError(`the fetch failed: ${(e as Error)?.message ?? e}`, false);
  }
}
