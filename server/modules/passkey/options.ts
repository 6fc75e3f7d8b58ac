// The passkey.* site options (new-api's system_setting passkey keys) with their defaults and validation.
import { badRequest } from "../../http/errors.ts";

export const PASSKEY_OPTION_DEFAULTS: Record<string, string> = {
  "passkey.enabled": "false",
  /** shown by the browser's passkey dialog; empty = SystemName */
  "passkey.rp_display_name": "",
  /** the relying party id (a domain); empty = the host of the first origin */
  "passkey.rp_id": "",
  /** allowed origins, comma- or line-separated; empty = ServerAddress, else the request's own origin */
  "passkey.origins": "",
  "passkey.allow_insecure_origin": "false",
  "passkey.user_verification": "preferred",
  /** "", "platform" or "cross-platform" */
  "passkey.attachment_preference": "",
};

const HOST_RE =
  /^(?=.{1,253}$)(localhost|([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)$/i;

export function splitOrigins(raw: string): string[] {
  return raw
    .split(/[,\n]/)
    .map((o) => o.trim().replace(/\/+$/, ""))
    .filter(Boolean);
}

/** Returns the value to store for a passkey.* key, or throws a 400 naming the problem. */
export function validatePasskeyOption(key: string, value: string): string {
  switch (key) {
    case "passkey.enabled":
    case "passkey.allow_insecure_origin":
      if (value !== "true" && value !== "false") throw badRequest(`${key} must be "true" or "false"`);
      return value;
    case "passkey.user_verification":
      if (!["required", "preferred", "discouraged"].includes(value))
        throw badRequest(`${key} must be required, preferred or discouraged`);
      return value;
    case "passkey.attachment_preference":
      if (!["", "platform", "cross-platform"].includes(value))
        throw badRequest(`${key} must be empty, platform or cross-platform`);
      return value;
    case "passkey.rp_id": {
      const host = value.trim();
      if (host && !HOST_RE.test(host))
        throw badRequest(`${key} must be a domain name such as example.com (no scheme, port or path)`);
      return host;
    }
    case "passkey.origins": {
      const origins = splitOrigins(value);
      for (const o of origins) {
        let u: URL;
        try {
          u = new URL(o);
        } catch {
          throw badRequest(`passkey origin "${o}" is not a URL such as https://example.com`);
        }
        if (!/^https?:$/.test(u.protocol) || u.origin !== o)
          throw badRequest(`passkey origin "${o}" must be a scheme and host only, such as https://example.com`);
      }
      return origins.join(",");
    }
    default:
      return value;
  }
}
