// Signed links to a drawing task's image through the gateway (MjForwardUrlEnabled): clients and the
// console get <ServerAddress>/mj/image/<mj_id>?sig=<hmac>, and /mj/image answers only a matching signature,
// so nobody can walk the task ids to read other users' images and no upstream address is shown.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { AppDeps } from "../../deps.ts";

export function mjImageSignature(deps: AppDeps, mjId: string): string {
  return createHmac("sha256", deps.config.sessionSecret).update(`mj-image\n${mjId}`).digest("hex").slice(0, 32);
}

export function mjImageSignatureValid(deps: AppDeps, mjId: string, sig: string): boolean {
  const want = Buffer.from(mjImageSignature(deps, mjId));
  const got = Buffer.from(sig);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** The image URL a client is shown: the gateway's signed link when MjForwardUrlEnabled, else the upstream's. */
export function mjImageUrl(deps: AppDeps, mjId: string, upstreamUrl: string): string {
  if (!upstreamUrl || !mjId || !deps.options.bool("MjForwardUrlEnabled")) return upstreamUrl;
  const base = deps.options.get("ServerAddress").replace(/\/+$/, "");
  return `${base}/mj/image/${encodeURIComponent(mjId)}?sig=${mjImageSignature(deps, mjId)}`;
}
