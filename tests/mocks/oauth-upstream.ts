// Local stand-ins for the third-party sign-in providers, on one port under four prefixes:
//   /github   GitHub's token endpoint (JSON body) and REST user endpoint
//   /oidc     an OpenID provider: well-known document, JWKS, token endpoint (form body) answering ID tokens
//             signed RS256 with a key made at start, PKCE (S256) for codes issued with a challenge, userinfo
//   /linuxdo  Linux DO Connect: token endpoint (form body, HTTP Basic client auth) and /api/user
//   /wechat   a one-api WeChat server: /api/wechat/user?code= with the server token in Authorization
// Each code is issued by code(provider, profile) or, for OIDC, authorize(url, profile) (the user approving
// at the provider), and works once, as real authorisation codes do.
import { serve, type MockUpstream } from "./recorder.ts";

export type CodeProvider = "github" | "oidc" | "linuxdo" | "wechat";

/** How the mock's ID token for a code departs from a correct one (for tests that it is refused). */
export interface IdTokenTweak {
  iss?: string;
  aud?: string;
  sub?: string;
  nonce?: string;
  /** Signed with another key under the provider's key id: the signature does not verify. */
  foreignKey?: boolean;
  /** Already expired (exp and iat an hour ago). */
  expired?: boolean;
  /** Signed HS256 with the client secret instead of the provider's RSA key. */
  hs256?: boolean;
}

export interface OidcCodeOptions {
  nonce?: string;
  codeChallenge?: string;
  redirectUri?: string;
  idToken?: IdTokenTweak;
}

export interface OAuthMockOptions {
  /** Advertise PKCE (code_challenge_methods_supported: ["S256"]) in the discovery document; default true. */
  pkce?: boolean;
}

const b64url = (data: ArrayBuffer | Uint8Array | string) =>
  Buffer.from(typeof data === "string" ? data : new Uint8Array(data as ArrayBuffer)).toString("base64url");

async function rsaKey(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  );
}

async function signJwt(key: CryptoKey, kid: string, claims: Record<string, unknown>): Promise<string> {
  const alg = key.algorithm.name === "HMAC" ? "HS256" : "RS256";
  const input = `${b64url(JSON.stringify({ alg, typ: "JWT", kid }))}.${b64url(JSON.stringify(claims))}`;
  const sig = await crypto.subtle.sign(key.algorithm.name, key, new TextEncoder().encode(input));
  return `${input}.${b64url(sig)}`;
}

const hmacKey = (secret: string) =>
  crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);

const s256 = async (verifier: string) =>
  b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));

export interface OAuthMock extends MockUpstream {
  /** Client credentials each provider accepts (the WeChat server's token is wechat.secret). */
  clients: Record<CodeProvider, { id: string; secret: string }>;
  /** The endpoint map the gateway takes in deps.oauthEndpoints. */
  endpoints: { githubToken: string; githubUser: string; linuxdoToken: string; linuxdoUser: string };
  wellKnown: string;
  wechatServer: string;
  /** The OIDC issuer (the well-known document's `issuer`). */
  issuer: string;
  /** A fresh single-use code that yields this profile (for WeChat: { openid }). */
  code(provider: CodeProvider, profile: Record<string, unknown>, oidc?: OidcCodeOptions): string;
  /**
   * The user approves an OIDC authorisation URL the gateway built: checks client_id and response_type,
   * and issues a code bound to its nonce, PKCE challenge and redirect_uri. Answers the code and the state.
   */
  authorize(
    url: string,
    profile: Record<string, unknown>,
    idToken?: IdTokenTweak,
  ): { code: string; state: string; params: URLSearchParams };
}

let seq = 0;

type CodeGrant = { provider: CodeProvider; profile: Record<string, unknown>; oidc?: OidcCodeOptions };

export function startOAuthUpstream(opts: OAuthMockOptions = {}): OAuthMock {
  const codes = new Map<string, CodeGrant>();
  const tokens = new Map<string, CodeGrant>();
  const kid = "mock-key-1";
  // Made at start, awaited by the handlers that need them.
  const keys = Promise.all([rsaKey(), rsaKey()]);
  const clients: OAuthMock["clients"] = {
    github: { id: "gh-client", secret: "gh-secret" },
    oidc: { id: "oidc-client", secret: "oidc-secret" },
    linuxdo: { id: "ld-client", secret: "ld-secret" },
    wechat: { id: "", secret: "wechat-server-token" },
  };

  const redeem = (provider: CodeProvider, code: string) => {
    const hit = codes.get(code);
    if (!hit || hit.provider !== provider) return null;
    codes.delete(code);
    const token = `at-${provider}-${++seq}`;
    tokens.set(token, hit);
    return token;
  };
  const idToken = async (grant: CodeGrant) => {
    const [key, foreign] = await keys;
    const t = grant.oidc?.idToken ?? {};
    const now = Math.floor(Date.now() / 1000) - (t.expired ? 3600 : 0);
    const nonce = t.nonce ?? grant.oidc?.nonce;
    const claims: Record<string, unknown> = {
      iss: t.iss ?? `${server.url}/oidc`,
      aud: t.aud ?? clients.oidc.id,
      iat: now,
      exp: now + 600,
      ...(nonce ? { nonce } : {}),
    };
    const sub = t.sub ?? grant.profile.sub;
    if (sub !== undefined) claims.sub = sub;
    return signJwt(
      t.hs256 ? await hmacKey(clients.oidc.secret) : t.foreignKey ? foreign.privateKey : key.privateKey,
      kid,
      claims,
    );
  };
  const bearer = (provider: CodeProvider, req: Request) => {
    const hit = tokens.get((req.headers.get("authorization") ?? "").replace(/^Bearer\s+/i, ""));
    return hit && hit.provider === provider ? hit.profile : null;
  };
  const form = (raw: string) => Object.fromEntries(new URLSearchParams(raw));

  const server = serve(async (req, rec) => {
    const p = rec.path;
    // GitHub answers 200 with an error object when the code or the client is wrong.
    if (p === "/github/login/oauth/access_token" && req.method === "POST") {
      const b = rec.body ?? {};
      if (b.client_id !== clients.github.id || b.client_secret !== clients.github.secret) {
        return Response.json({
          error: "incorrect_client_credentials",
          error_description: "The client_id and/or client_secret passed are incorrect.",
        });
      }
      const token = redeem("github", String(b.code ?? ""));
      if (!token)
        return Response.json({
          error: "bad_verification_code",
          error_description: "The code passed is incorrect or expired.",
        });
      return Response.json({ access_token: token, scope: "user:email", token_type: "bearer" });
    }
    if (p === "/github/user" && req.method === "GET") {
      const profile = bearer("github", req);
      return profile
        ? Response.json({ id: 1000 + seq, ...profile })
        : Response.json({ message: "Bad credentials" }, { status: 401 });
    }

    if (p === "/oidc/.well-known/openid-configuration") {
      return Response.json({
        issuer: `${server.url}/oidc`,
        authorization_endpoint: `${server.url}/oidc/authorize`,
        token_endpoint: `${server.url}/oidc/token`,
        userinfo_endpoint: `${server.url}/oidc/userinfo`,
        jwks_uri: `${server.url}/oidc/jwks`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256", "HS256"],
        token_endpoint_auth_methods_supported: ["client_secret_post"],
        scopes_supported: ["openid", "profile", "email"],
        authorization_response_iss_parameter_supported: true,
        ...(opts.pkce === false ? {} : { code_challenge_methods_supported: ["S256"] }),
      });
    }
    if (p === "/oidc/jwks") {
      const [key] = await keys;
      const jwk = await crypto.subtle.exportKey("jwk", key.publicKey);
      return Response.json({ keys: [{ kty: jwk.kty, n: jwk.n, e: jwk.e, kid, alg: "RS256", use: "sig" }] });
    }
    if (p === "/oidc/token" && req.method === "POST") {
      const b = form(rec.raw);
      if (b.client_id !== clients.oidc.id || b.client_secret !== clients.oidc.secret)
        return Response.json({ error: "invalid_client" }, { status: 401 });
      if (b.grant_type !== "authorization_code")
        return Response.json({ error: "unsupported_grant_type" }, { status: 400 });
      const grant = codes.get(b.code ?? "");
      const bound = grant?.oidc;
      if (bound?.codeChallenge && (!b.code_verifier || (await s256(b.code_verifier)) !== bound.codeChallenge)) {
        return Response.json(
          { error: "invalid_grant", error_description: "PKCE verification failed" },
          { status: 400 },
        );
      }
      if (bound?.redirectUri && b.redirect_uri !== bound.redirectUri)
        return Response.json({ error: "invalid_grant", error_description: "redirect_uri mismatch" }, { status: 400 });
      const token = redeem("oidc", b.code ?? "");
      if (!token || !grant) return Response.json({ error: "invalid_grant" }, { status: 400 });
      return Response.json({
        access_token: token,
        token_type: "Bearer",
        expires_in: 3600,
        id_token: await idToken(grant),
      });
    }
    if (p === "/oidc/userinfo") {
      const profile = bearer("oidc", req);
      return profile ? Response.json(profile) : Response.json({ error: "invalid_token" }, { status: 401 });
    }

    if (p === "/linuxdo/oauth2/token" && req.method === "POST") {
      const basic = "Basic " + Buffer.from(`${clients.linuxdo.id}:${clients.linuxdo.secret}`).toString("base64");
      if (req.headers.get("authorization") !== basic)
        return Response.json({ error: "invalid_client", message: "client authentication failed" }, { status: 401 });
      const token = redeem("linuxdo", form(rec.raw).code ?? "");
      if (!token) return Response.json({ error: "invalid_grant", message: "the code is invalid" }, { status: 400 });
      return Response.json({ access_token: token, token_type: "bearer", expires_in: 3600 });
    }
    if (p === "/linuxdo/api/user") {
      const profile = bearer("linuxdo", req);
      return profile
        ? Response.json({ active: true, trust_level: 1, silenced: false, ...profile })
        : Response.json({ error: "unauthorised" }, { status: 401 });
    }

    // The WeChat server's answer to an unknown or used code is success with an empty openid.
    if (p === "/wechat/api/wechat/user") {
      if (req.headers.get("authorization") !== clients.wechat.secret)
        return Response.json({ success: false, message: "no permission" });
      const code = new URL(req.url).searchParams.get("code") ?? "";
      const hit = codes.get(code);
      if (!hit || hit.provider !== "wechat") return Response.json({ success: true, message: "", data: "" });
      codes.delete(code);
      return Response.json({ success: true, message: "", data: String(hit.profile.openid) });
    }
    return Response.json({ error: "not found" }, { status: 404 });
  });

  return {
    ...server,
    clients,
    endpoints: {
      githubToken: `${server.url}/github/login/oauth/access_token`,
      githubUser: `${server.url}/github/user`,
      linuxdoToken: `${server.url}/linuxdo/oauth2/token`,
      linuxdoUser: `${server.url}/linuxdo/api/user`,
    },
    wellKnown: `${server.url}/oidc/.well-known/openid-configuration`,
    wechatServer: `${server.url}/wechat`,
    issuer: `${server.url}/oidc`,
    code(provider, profile, oidc) {
      const code = `code-${provider}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;
      codes.set(code, { provider, profile, oidc });
      return code;
    },
    authorize(url, profile, idToken) {
      const u = new URL(url);
      const q = u.searchParams;
      if (u.origin + u.pathname !== `${server.url}/oidc/authorize`)
        throw new Error(`not this provider's authorisation endpoint: ${url}`);
      if (q.get("client_id") !== clients.oidc.id || q.get("response_type") !== "code")
        throw new Error(`bad authorisation request: ${url}`);
      if (q.has("code_challenge") && q.get("code_challenge_method") !== "S256")
        throw new Error("only S256 challenges are accepted");
      const code = this.code("oidc", profile, {
        nonce: q.get("nonce") ?? undefined,
        codeChallenge: q.get("code_challenge") ?? undefined,
        redirectUri: q.get("redirect_uri") ?? undefined,
        idToken,
      });
      return { code, state: q.get("state") ?? "", params: q };
    },
  };
}
