// Calls to sign-in providers: bounded in time, JSON read leniently, and failures turned into messages a
// user can act on (502 when the provider can't be reached, 400 when it refuses) instead of a 500.
import { AppError } from "../../http/errors.ts";

export const PROVIDER_TIMEOUT_MS = 10_000;

export interface ProviderReply {
  status: number;
  body: any;
}

export async function callProvider(label: string, url: string, init: RequestInit = {}): Promise<ProviderReply> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS) });
    text = await res.text();
  } catch (e) {
    console.error(`[oauth] ${label} unreachable:`, (e as Error).message);
    throw new AppError(502, `could not reach ${label}, try again later`);
  }
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: res.status, body };
}

/** The provider answered but would not sign the user in; its own reason is passed on. */
export function refused(label: string, reply: ProviderReply, fallback?: string): AppError {
  const b = reply.body;
  const reason =
    (b && typeof b === "object" && (b.error_description || b.message || b.error))
    || fallback
    || `it answered HTTP ${reply.status}`;
  return new AppError(400, `${label} refused the sign-in: ${String(reason).slice(0, 300)}`);
}
