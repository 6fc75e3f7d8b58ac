// Per-IP fixed-window limits on management routes (counts live in the shared cache, so they hold across
// instances when Redis is configured).
import type { AppDeps } from "../deps.ts";
import { AppError } from "./errors.ts";

export const LIMITS = {
  /** login, register, password reset, verification mail */
  critical: { count: 20, windowSeconds: 20 * 60 },
  /** every other /api call */
  api: { count: 480, windowSeconds: 180 },
} as const;

/** The client's address: the one a trusted reverse proxy passed on, else the connection's peer (`peer` when the
 * caller has looked it up already), else "local" (a request made in process, through app.handle()). */
export function clientIp(
  request: Request,
  server: { requestIP(r: Request): { address: string } | null } | null,
  trustProxy: boolean,
  peer?: { address: string } | null,
): string {
  return (
    forwardedIp(request, trustProxy) ?? (peer === undefined ? server?.requestIP(request) : peer)?.address ?? "local"
  );
}

/** The client's address a trusted reverse proxy passed on (X-Forwarded-For, X-Real-IP), if any. */
function forwardedIp(request: Request, trustProxy: boolean): string | null {
  if (!trustProxy) return null;
  const fwd = request.headers.get("x-forwarded-for");
  if (fwd) return fwd.split(",")[0].trim();
  const real = request.headers.get("x-real-ip");
  return real ? real.trim() : null;
}

export async function enforceLimit(deps: AppDeps, bucket: keyof typeof LIMITS, ip: string): Promise<void> {
  if (!deps.config.rateLimitEnabled) return;
  const { count, windowSeconds } = LIMITS[bucket];
  const n = await deps.cache.incr(`rl:${bucket}:${ip}`, windowSeconds);
  if (n > count) throw new AppError(429, "too many requests, please try again later");
}
