// Gemini cannot fetch arbitrary image URLs, so the gateway downloads them and sends the bytes inline.
// The URL is the client's: it goes through the outbound guard (fetch_setting.* options, infra/outbound.ts).
import { fetchOutbound, fetchPolicy, type OptionReader } from "../../../infra/outbound.ts";

const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const IMAGE_TIMEOUT_MS = 15_000;

export async function fetchImage(url: string, site?: OptionReader): Promise<{ mimeType: string; data: string }> {
  if (!/^https?:\/\//i.test(url)) throw new Error(`unsupported image URL scheme: ${url.slice(0, 40)}`);
  const res = await fetchOutbound(url, {
    timeoutMs: IMAGE_TIMEOUT_MS,
    maxBytes: MAX_IMAGE_BYTES,
    policy: fetchPolicy(site),
  });
  if (res.status < 200 || res.status > 299) throw new Error(`could not download the image (status ${res.status})`);
  const bytes = res.body;
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
export async function fetchImages(
  urls: string[],
  site?: OptionReader,
): Promise<Map<string, { mimeType: string; data: string }>> {
  const unique = [...new Set(urls)];
  const results = await Promise.all(unique.map(async (u) => [u, await fetchImage(u, site)] as const));
  return new Map(results);
}
