// IP allow lists of tokens: one entry per line, each a single address or a CIDR range (IPv4 or IPv6).
// The relay calls ipAllowed() with the parsed list; the token service validates with parseAllowIps().
import { isIP } from "node:net";

export interface IpRange {
  version: 4 | 6;
  base: bigint;
  bits: number;
}

function toBigInt(ip: string, version: 4 | 6): bigint {
  if (version === 4) return ip.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
  let text = ip;
  // An IPv6 address may end in an embedded IPv4 address (::ffff:1.2.3.4).
  const v4 = text.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const n = toBigInt(v4[1], 4);
    text = text.slice(0, -v4[1].length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const headParts = head ? head.split(":") : [];
  const tailParts = tail ? tail.split(":") : [];
  const missing = 8 - headParts.length - tailParts.length;
  const parts = [...headParts, ...Array(tail === undefined ? 0 : missing).fill("0"), ...tailParts];
  return parts.reduce((acc, p) => (acc << 16n) | BigInt(parseInt(p || "0", 16)), 0n);
}

/** Parses one allow-list entry; null when it is neither an address nor a CIDR range. */
export function parseIpEntry(entry: string): IpRange | null {
  const [addr, prefix, extra] = entry.trim().split("/");
  if (extra !== undefined || !addr) return null;
  const v = isIP(addr);
  if (v !== 4 && v !== 6) return null;
  const max = v === 4 ? 32 : 128;
  let bits = max;
  if (prefix !== undefined) {
    if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return null;
    bits = Number(prefix);
  }
  const mask = bits === 0 ? 0n : ((1n << BigInt(bits)) - 1n) << BigInt(max - bits);
  return { version: v, base: toBigInt(addr, v) & mask, bits };
}

/** Splits the stored allow list into lines; returns the bad lines separately so callers can name them. */
export function parseAllowIps(text: string | null | undefined): { ranges: IpRange[]; invalid: string[] } {
  const ranges: IpRange[] = [];
  const invalid: string[] = [];
  for (const line of (text ?? "").split(/\r?\n/)) {
    const entry = line.trim();
    if (!entry) continue;
    const r = parseIpEntry(entry);
    if (r) ranges.push(r);
    else invalid.push(entry);
  }
  return { ranges, invalid };
}

/** True when the list is empty (no restriction) or the address falls inside one of its ranges. */
export function ipAllowed(ranges: IpRange[], ip: string): boolean {
  if (ranges.length === 0) return true;
  let addr = ip.trim();
  // IPv4 clients seen through an IPv6 socket arrive as ::ffff:a.b.c.d.
  if (addr.toLowerCase().startsWith("::ffff:") && isIP(addr.slice(7)) === 4) addr = addr.slice(7);
  const v = isIP(addr);
  if (v !== 4 && v !== 6) return false;
  const max = v === 4 ? 32 : 128;
  const value = toBigInt(addr, v);
  return ranges.some((r) => {
    if (r.version !== v) return false;
    const mask = r.bits === 0 ? 0n : ((1n << BigInt(r.bits)) - 1n) << BigInt(max - r.bits);
    return (value & mask) === r.base;
  });
}
