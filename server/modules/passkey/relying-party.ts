// Who the passkeys belong to (the WebAuthn relying party), read from the passkey.* options as new-api's
// service/passkey does: origins from passkey.origins, else ServerAddress, else the request's own origin;
// the RP id from passkey.rp_id, else the host of the first origin. Plain http is refused unless
// passkey.allow_insecure_origin is on, except for localhost (which browsers treat as secure).
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { splitOrigins } from "./options.ts";

export type UserVerification = "required" | "preferred" | "discouraged";

export interface RelyingParty {
  rpID: string;
  rpName: string;
  origins: string[];
  userVerification: UserVerification;
  attachment: "" | "platform" | "cross-platform";
}

const isLocal = (host: string) =>
  host === "localhost" || host === "127.0.0.1" || host === "[::1]" || host.endsWith(".localhost");

function requestOrigin(deps: AppDeps, request: Request): string {
  const url = new URL(request.url);
  if (deps.config.trustProxy) {
    const proto = request.headers.get("x-forwarded-proto")?.split(",")[0].trim();
    const host = request.headers.get("x-forwarded-host")?.split(",")[0].trim();
    if (proto || host) return `${proto || url.protocol.replace(":", "")}://${host || url.host}`;
  }
  return url.origin;
}

export function relyingParty(deps: AppDeps, request: Request): RelyingParty {
  const o = deps.options;
  const allowInsecure = o.bool("passkey.allow_insecure_origin");
  let origins = splitOrigins(o.get("passkey.origins"));
  if (!origins.length) {
    const server = o.get("ServerAddress");
    origins = [server ? new URL(server).origin : requestOrigin(deps, request)];
  }
  for (const origin of origins) {
    const u = new URL(origin);
    if (u.protocol === "http:" && !allowInsecure && !isLocal(u.hostname)) {
      throw new AppError(
        400,
        `passkeys need HTTPS: ${origin} is plain http (set ServerAddress or passkey.origins to an https address, or allow insecure origins)`,
      );
    }
  }
  const rpID = o.get("passkey.rp_id") || new URL(origins[0]).hostname;
  const uv = o.get("passkey.user_verification");
  const attachment = o.get("passkey.attachment_preference");
  return {
    rpID,
    origins,
    rpName: o.get("passkey.rp_display_name") || o.get("SystemName") || "Switchyard",
    userVerification: uv === "required" || uv === "discouraged" ? uv : "preferred",
    attachment: attachment === "platform" || attachment === "cross-platform" ? attachment : "",
  };
}
