// Gemini cannot fetch arbitrary image URLs, so the gateway downloads them and sends the bytes inline.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const IMAGE_TIMEOUT_MS = 15_000;

/** Link-local addresses host cloud metadata services (credentials); a prompt must never read them. */
export function isLinkLocal(address: string): boolean {
  const v4 = address.replace(/^::ffff:/i, "");
  if (isIP(v4) === 4) return v4.startsWith("169.254.");
  return /^fe[89ab][0-9a-f]:/i.test(address);
}

async function assertFetchable(url: URL): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (host === "metadata.google.internal" || host === "metadata") throw new Error("this image address is not allowed");
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  if (addresses.some(isLinkLocal)) throw new Error("this image address is not allowed");
}

export async function fetchImage(url: string): Promise<{ mimeType: string; data: string }> {
  if (!/^https?:\/\//i.test(url)) throw new Error(`unsupported image URL scheme: ${url.slice(0, 40)}`);
  await assertFetchable(new URL(url));
  const res = await fetch(url, { signal: AbortSignal.timeout(IMAGE_TIMEOUT_MS), redirect: "error" });
  if (!res.ok) throw new Error(`could not download the image (status ${res.status})`);
  const declared = Number(res.headers.get("content-length") ?? 0);
  if (declared > MAX_IMAGE_BYTES) throw new Error("the image is larger than 20 MB");
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (bytes.byteLength > MAX_IMAGE_BYTES) throw new Error("the image is larger than 20 MB");
  const mimeType = (res.headers.get("content-type") ?? "").split(";")[0]!.trim() || sniffImageType(bytes);
  return { mimeType, data: Buffer.from(bytes).toString("base64") };
}

function sniffImageType(b: Uint8Array): string {
  if (b[0] === 0x89 && b[1] === 0x50) return "image/png";
  if (b[0] === 0xff && b[1] === 0xd8) return "image/jpeg";
  if (b[0] === 0x47 && b[1] === 0x49) return "image/gif";
  if (b[8] === 0x57 && b[9] === 0x45) return "image/webp";
  return "application/octet-stream";
}

/** Downloads every distinct URL at once; a failure names the problem without the URL's query string. */
export async function fetchImages(urls: string[]): Promise<Map<string, { mimeType: string; data: string }>> {
  const unique = [...new Set(urls)];
  const results = await Promise.all(unique.map(async (u) => [u, await fetchImage(u)] as const));
  return new Map(results);
}
