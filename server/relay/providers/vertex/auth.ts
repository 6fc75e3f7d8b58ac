// Service-account credentials → OAuth access token: a JWT signed RS256 with the account's private
// key is exchanged at the token endpoint (RFC 7523 jwt-bearer grant). Tokens are cached per account
// until shortly before they expire, and concurrent callers share one exchange.

export interface ServiceAccount {
  type?: string;
  project_id: string;
  private_key_id?: string;
  private_key: string;
  client_email: string;
  token_uri?: string;
}

export const GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token";
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** Renew this long before expiry so a token never dies in the middle of a request. */
const EXPIRY_MARGIN_SECONDS = 300;

export function parseServiceAccount(key: string): ServiceAccount {
  let sa: any;
  try {
    sa = JSON.parse(key);
  } catch {
    throw new Error("Vertex AI channel key must be the service account JSON");
  }
  if (
    !sa
    || typeof sa.client_email !== "string"
    || typeof sa.private_key !== "string"
    || typeof sa.project_id !== "string"
  ) {
    throw new Error("Vertex AI service account JSON needs project_id, client_email and private_key");
  }
  return sa as ServiceAccount;
}

const b64url = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");

async function importKey(pem: string): Promise<CryptoKey> {
  const body = pem.replace(/-----(BEGIN|END) [A-Z ]+-----/g, "").replace(/\s+/g, "");
  const der = Buffer.from(body, "base64");
  return crypto.subtle.importKey("pkcs8", der, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, ["sign"]);
}

export async function signJwt(sa: ServiceAccount, now = Math.floor(Date.now() / 1000)): Promise<string> {
  const header: Record<string, string> = { alg: "RS256", typ: "JWT" };
  if (sa.private_key_id) header.kid = sa.private_key_id;
  const claims = {
    iss: sa.client_email,
    scope: CLOUD_PLATFORM_SCOPE,
    aud: sa.token_uri || GOOGLE_TOKEN_URI,
    iat: now,
    exp: now + 3600,
  };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const sig = await crypto.subtle.sign(
    "RSASSA-PKCS1-v1_5",
    await importKey(sa.private_key),
    new TextEncoder().encode(input),
  );
  return `${input}.${b64url(new Uint8Array(sig))}`;
}

interface Cached {
  token: string;
  expiresAt: number;
}
const cache = new Map<string, Cached>();
const inflight = new Map<string, Promise<string>>();

async function exchange(sa: ServiceAccount): Promise<Cached> {
  const assertion = await signJwt(sa);
  const res = await fetch(sa.token_uri || GOOGLE_TOKEN_URI, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }).toString(),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  let j: any = {};
  try {
    j = JSON.parse(text);
  } catch {}
  if (!res.ok || typeof j.access_token !== "string") {
    const why = j.error_description ?? j.error ?? `status ${res.status}`;
    throw new Error(`Vertex AI token exchange failed: ${why}`);
  }
  const ttl = Number(j.expires_in) > 0 ? Number(j.expires_in) : 3600;
  return { token: j.access_token, expiresAt: Math.floor(Date.now() / 1000) + ttl };
}

export async function accessToken(sa: ServiceAccount): Promise<string> {
  const id = `${sa.client_email}|${sa.private_key_id ?? ""}|${sa.token_uri ?? ""}`;
  const hit = cache.get(id);
  if (hit && hit.expiresAt - EXPIRY_MARGIN_SECONDS > Math.floor(Date.now() / 1000)) return hit.token;
  let p = inflight.get(id);
  if (!p) {
    p = exchange(sa)
      .then((c) => {
        cache.set(id, c);
        return c.token;
      })
      .finally(() => inflight.delete(id));
    inflight.set(id, p);
  }
  return p;
}

/** Forgets cached tokens (tests; a rotated key). */
export function clearTokenCache(): void {
  cache.clear();
}
