// OpenID Connect through openid-client (certified, on oauth4webapi). The provider's metadata comes from its
// well-known document (oidc.well_known), read once and remembered; each explicit endpoint option overrides
// the document's. With a document, the ID token from the code exchange is validated (issuer, audience,
// expiry, signature with the provider's JWKS, and the nonce when the server built the authorisation URL),
// PKCE (S256) is used when the document lists it, and userinfo must name the ID token's subject. Without a
// document no issuer or key is known: the ID token is set aside and the account comes from userinfo over
// TLS, as before. The account id is the subject (sub), as new-api stores it.
// Plain http is refused for the provider except on loopback (127.0.0.0/8, ::1, localhost): a provider on
// the same machine, as in the tests, where oauth4webapi's insecure-requests switch is turned on for it alone.
import type * as Oidc from "openid-client";
import type { AppDeps } from "../../deps.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import type { ExternalIdentity } from "./model.ts";
import { PROVIDER_TIMEOUT_MS, refused } from "./upstream.ts";
import { MISSING_CODE } from "./github.ts";
import { callbackUrl } from "./endpoints.ts";
import type { StateData } from "./state.ts";

/** A document is re-read after this long; a failed read is retried sooner. */
const DISCOVERY_TTL_MS = 10 * 60_000;
const DISCOVERY_RETRY_MS = 60_000;
/** The status object, read on every page load, waits no longer than this for a first discovery. */
const STATUS_WAIT_MS = 2_000;
const SCOPE = "openid profile email";

type Discovered = { at: number; ttl: number; meta: Oidc.ServerMetadata | null; error: string };
const discovered = new Map<string, Discovered>();
const inFlight = new Map<string, Promise<Discovered>>();
/** The provider's keys, kept across sign-ins (a Configuration is made per call from the remembered metadata). */
const jwksCaches = new Map<string, Oidc.ExportedJWKSCache>();

// openid-client is loaded with the first OIDC call, not at start.
let lib: typeof Oidc | undefined;
const openid = async () => (lib ??= await import("openid-client"));

const isLoopbackHost = (host: string) =>
  host === "localhost" || host === "[::1]" || host === "::1" || /^127\./.test(host);
const isLoopbackUrl = (url: string) => {
  try {
    return isLoopbackHost(new URL(url).hostname);
  } catch {
    return false;
  }
};

/** What the sign-in needs to be told when the provider's answers cannot be used. */
const MSG = {
  unknownEndpoints: "the OIDC token and userinfo endpoints are unknown: check the well-known URL or set the endpoints",
  noSubject: "the OIDC provider did not return the account's subject, check the OIDC settings",
  otherSubject: "the OIDC provider's userinfo names another subject than its ID token",
  httpsOnly: "the OIDC provider must be reached over https (plain http only for a provider on this machine)",
  unreachable: "could not reach OIDC, try again later",
  noClient: "the OIDC client id is not set",
} as const;

function discover(url: string): Promise<Discovered> {
  const hit = discovered.get(url);
  if (hit && Date.now() - hit.at < hit.ttl) return Promise.resolve(hit);
  let pending = inFlight.get(url);
  if (!pending) {
    pending = readDocument(url).then((d) => {
      discovered.set(url, d);
      inFlight.delete(url);
      return d;
    });
    inFlight.set(url, pending);
  }
  return pending;
}

async function readDocument(url: string): Promise<Discovered> {
  const at = Date.now();
  const oidc = await openid();
  try {
    // The URL names the document itself, so openid-client reads it as is (a document's issuer need not be its
    // URL's prefix); only the metadata is kept, the client comes later. The client id here is a placeholder.
    const config = await oidc.discovery(new URL(url), "discovery", undefined, undefined, {
      timeout: PROVIDER_TIMEOUT_MS / 1000,
      execute: isLoopbackUrl(url) ? [oidc.allowInsecureRequests] : [],
    });
    return { at, ttl: DISCOVERY_TTL_MS, meta: config.serverMetadata(), error: "" };
  } catch (e) {
    console.error("[oauth] OIDC discovery failed:", url, describe(e));
    return { at, ttl: DISCOVERY_RETRY_MS, meta: null, error: httpsRefused(e) ? MSG.httpsOnly : MSG.unreachable };
  }
}

interface Settings {
  clientId: string;
  clientSecret: string;
  wellKnown: string;
  explicit: { authorization_endpoint: string; token_endpoint: string; userinfo_endpoint: string };
}

function settings(deps: AppDeps): Settings {
  const o = deps.options;
  return {
    clientId: o.get("oidc.client_id"),
    clientSecret: o.get("oidc.client_secret"),
    wellKnown: o.get("oidc.well_known").trim(),
    explicit: {
      authorization_endpoint: o.get("oidc.authorization_endpoint"),
      token_endpoint: o.get("oidc.token_endpoint"),
      userinfo_endpoint: o.get("oidc.user_info_endpoint"),
    },
  };
}

/** The client for this sign-in; `verified` when issuer and keys are known, so ID tokens can be validated. */
interface Provider {
  config: Oidc.Configuration;
  verified: boolean;
  wellKnown: string;
}

async function provider(deps: AppDeps, opts: { issParameter?: boolean } = {}): Promise<Provider> {
  const s = settings(deps);
  if (!s.clientId) throw new AppError(502, MSG.noClient);
  const oidc = await openid();
  const overrides = Object.fromEntries(Object.entries(s.explicit).filter(([, v]) => v));
  let meta: { -readonly [K in keyof Oidc.ServerMetadata]: Oidc.ServerMetadata[K] };
  let verified = false;
  if (s.wellKnown) {
    const d = await discover(s.wellKnown);
    if (!d.meta) throw new AppError(502, d.error);
    meta = { ...d.meta, ...overrides };
    verified = true;
  } else {
    // No issuer is known; the name below never matches a token because ID tokens are set aside (tokenFetch).
    meta = { issuer: "urn:switchyard:oidc:issuer-unknown", ...overrides };
  }
  if (!meta.token_endpoint || !meta.userinfo_endpoint) throw new AppError(502, MSG.unknownEndpoints);
  // RFC 9207's iss parameter is checked when the callback brings it; the console's callback page forwards
  // only code and state, and with one configured provider there is no other issuer to mix up.
  if (!opts.issParameter) delete meta.authorization_response_iss_parameter_supported;
  const config = new oidc.Configuration(meta, s.clientId, s.clientSecret);
  config.timeout = PROVIDER_TIMEOUT_MS / 1000;
  const endpoints = [meta.issuer, meta.token_endpoint, meta.userinfo_endpoint, meta.jwks_uri].filter(
    (u): u is string => !!u,
  );
  if (verified ? isLoopbackUrl(meta.issuer) : endpoints.slice(1).every(isLoopbackUrl))
    oidc.allowInsecureRequests(config);
  if (verified) {
    oidc.enableNonRepudiationChecks(config);
    const cached = jwksCaches.get(s.wellKnown);
    if (cached) oidc.setJwksCache(config, cached);
  } else {
    config[oidc.customFetch] = tokenFetch(meta.token_endpoint);
  }
  return { config, verified, wellKnown: s.wellKnown };
}

/** Without a well-known document, the token answer's id_token is removed before openid-client reads it. */
function tokenFetch(tokenEndpoint: string): Oidc.CustomFetch {
  return async (url, options) => {
    const res = await fetch(url, options as RequestInit);
    if (url !== new URL(tokenEndpoint).href || !res.ok) return res;
    const body = await res.json().catch(() => null);
    if (body && typeof body === "object") delete body.id_token;
    return Response.json(body, { status: res.status, headers: { "content-type": "application/json" } });
  };
}

/** For the status object: never throws, and asks the network only when OIDC is on and needs it. */
export async function oidcAuthorizationEndpoint(deps: AppDeps): Promise<string> {
  const explicit = deps.options.get("oidc.authorization_endpoint");
  const wellKnown = deps.options.get("oidc.well_known").trim();
  if (explicit || !wellKnown || !deps.options.bool("oidc.enabled")) return explicit;
  const timeout = new Promise<null>((resolve) => setTimeout(resolve, STATUS_WAIT_MS, null).unref?.());
  const d = await Promise.race([discover(wellKnown), timeout]);
  return d?.meta?.authorization_endpoint ?? "";
}

/**
 * The authorisation URL for a sign-in started by the server: a nonce for the ID token and, when the
 * provider lists S256, a PKCE verifier, both kept with the state (`issue` stores them and answers the state).
 */
export async function oidcAuthorizationUrl(
  deps: AppDeps,
  request: Request,
  issue: (checks: Pick<StateData, "pkce" | "nonce">) => Promise<string>,
): Promise<{ url: string; state: string }> {
  const p = await provider(deps);
  const oidc = await openid();
  const meta = p.config.serverMetadata();
  if (!meta.authorization_endpoint)
    throw new AppError(502, "the OIDC authorisation endpoint is unknown: check the well-known URL or set the endpoint");
  const pkce = p.verified && meta.supportsPKCE("S256") ? oidc.randomPKCECodeVerifier() : undefined;
  const nonce = p.verified ? oidc.randomNonce() : undefined;
  const state = await issue({ pkce, nonce });
  const params: Record<string, string> = {
    redirect_uri: callbackUrl(deps, request, "/oauth/oidc"),
    response_type: "code",
    scope: SCOPE,
    state,
  };
  if (nonce) params.nonce = nonce;
  if (pkce)
    Object.assign(params, {
      code_challenge: await oidc.calculatePKCECodeChallenge(pkce),
      code_challenge_method: "S256",
    });
  try {
    return { url: oidc.buildAuthorizationUrl(p.config, params).href, state };
  } catch (e) {
    throw failure(oidc, "authorize", e);
  }
}

/** code → token (ID token validated when the provider is known) → userinfo; the account is the ID token's subject. */
export async function oidcIdentity(
  deps: AppDeps,
  code: string,
  request: Request,
  state: StateData,
): Promise<ExternalIdentity> {
  if (!code) throw badRequest(MISSING_CODE);
  const query = new URL(request.url).searchParams;
  const iss = query.get("iss");
  const p = await provider(deps, { issParameter: !!iss });
  const oidc = await openid();
  // The URL the provider sent the browser back to (the console's page), with what it carried.
  const current = new URL(callbackUrl(deps, request, "/oauth/oidc"));
  current.searchParams.set("code", code);
  current.searchParams.set("state", query.get("state") ?? "");
  if (iss) current.searchParams.set("iss", iss);
  let tokens: Awaited<ReturnType<typeof Oidc.authorizationCodeGrant>>;
  try {
    tokens = await oidc.authorizationCodeGrant(p.config, current, {
      // The state was checked against the browser's cookie and the shared cache before this call.
      expectedState: query.get("state") ?? oidc.skipStateCheck,
      pkceCodeVerifier: state.pkce,
      expectedNonce: p.verified ? state.nonce : undefined,
      idTokenExpected: p.verified,
    });
  } catch (e) {
    throw failure(oidc, "token", e);
  } finally {
    const jwks = p.verified ? oidc.getJwksCache(p.config) : undefined;
    if (jwks) jwksCaches.set(p.wellKnown, jwks);
  }
  const claims = p.verified ? tokens.claims() : undefined;
  let info: Oidc.UserInfoResponse;
  try {
    info = await oidc.fetchUserInfo(p.config, tokens.access_token, claims?.sub ?? oidc.skipSubjectCheck);
  } catch (e) {
    throw failure(oidc, "userinfo", e);
  }
  const sub = claims?.sub ?? info.sub;
  if (!sub) throw new AppError(502, MSG.noSubject);
  const text = (v: unknown) => (typeof v === "string" ? v : "");
  return {
    id: String(sub),
    displayName: text(info.name) || text(claims?.name),
    email: text(info.email) || text(claims?.email),
    username: text(info.preferred_username) || text(claims?.preferred_username),
  };
}

const describe = (e: unknown): string => {
  const err = e as { message?: string; code?: string; cause?: { message?: string } };
  return [err.code, err.message, err.cause?.message].filter(Boolean).join(": ") || String(e);
};

/** oauth4webapi refused a plain-http URL (openid-client passes some of its errors on unwrapped). */
const httpsRefused = (e: unknown) => (e as { code?: unknown } | null)?.code === "OAUTH_HTTP_REQUEST_FORBIDDEN";

/** The codes oauth4webapi gives an answer that came but does not hold up (claims, signature, keys, shape). */
const INVALID = new Set([
  "OAUTH_JWT_CLAIM_COMPARISON_FAILED",
  "OAUTH_JWT_TIMESTAMP_CHECK_FAILED",
  "OAUTH_KEY_SELECTION_FAILED",
  "OAUTH_INVALID_RESPONSE",
  "OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED",
  "OAUTH_PARSE_ERROR",
  "OAUTH_UNSUPPORTED_OPERATION",
  "OAUTH_RESPONSE_IS_NOT_JSON",
  "OAUTH_RESPONSE_IS_NOT_CONFORM",
  "OAUTH_INVALID_SERVER_METADATA",
]);

/** An openid-client failure as the caller's answer: 400 when the provider refused, else 502 saying what went wrong. */
function failure(oidc: typeof Oidc, stage: "authorize" | "token" | "userinfo", e: unknown): AppError {
  if (e instanceof AppError) return e;
  console.error(`[oauth] OIDC ${stage} failed:`, describe(e));
  if (e instanceof oidc.ResponseBodyError || e instanceof oidc.AuthorizationResponseError) {
    if (stage === "userinfo") return new AppError(502, MSG.noSubject);
    return refused("OIDC", {
      status: e instanceof oidc.ResponseBodyError ? e.status : 400,
      body: { error: e.error, error_description: e.error_description },
    });
  }
  if (e instanceof oidc.WWWAuthenticateChallengeError) {
    return stage === "userinfo" ? new AppError(502, MSG.noSubject) : refused("OIDC", { status: e.status, body: null });
  }
  if (httpsRefused(e)) return new AppError(502, MSG.httpsOnly);
  if (e instanceof oidc.ClientError && e.code && INVALID.has(e.code)) {
    if (stage === "userinfo")
      return new AppError(502, e.code === "OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED" ? MSG.otherSubject : MSG.noSubject);
    const reason = (e.cause as { message?: string } | undefined)?.message ?? e.message;
    return new AppError(502, `the OIDC provider's answer was refused: ${reason}`);
  }
  return new AppError(502, MSG.unreachable);
}
