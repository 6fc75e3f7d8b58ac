// OpenID Connect: endpoints come from the explicit options when set, else from the provider's well-known
// document (oidc.well_known), fetched once and remembered; code → token (form POST) → userinfo, and the
// account id is the subject (sub), as new-api stores it.
import type { AppDeps } from "../../deps.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import type { ExternalIdentity } from "./model.ts";
import { callProvider, refused } from "./upstream.ts";
import { MISSING_CODE } from "./github.ts";
import { callbackUrl } from "./endpoints.ts";

export interface OidcEndpoints { authorization: string; token: string; userinfo: string }

/** A document is re-read after this long; a failed read is retried sooner. */
const DISCOVERY_TTL_MS = 10 * 60_000;
const DISCOVERY_RETRY_MS = 60_000;
/** The status object, read on every page load, waits no longer than this for a first discovery. */
const STATUS_WAIT_MS = 2_000;
const discovered = new Map<string, { at: number; ttl: number; doc: Partial<OidcEndpoints> | null }>();
const inFlight = new Map<string, Promise<Partial<OidcEndpoints> | null>>();

function discover(url: string): Promise<Partial<OidcEndpoints> | null> {
  const hit = discovered.get(url);
  if (hit && Date.now() - hit.at < hit.ttl) return Promise.resolve(hit.doc);
  let pending = inFlight.get(url);
  if (!pending) {
    pending = fetchDocument(url).then((doc) => {
      discovered.set(url, { at: Date.now(), ttl: doc ? DISCOVERY_TTL_MS : DISCOVERY_RETRY_MS, doc });
      inFlight.delete(url);
      return doc;
    });
    inFlight.set(url, pending);
  }
  return pending;
}

async function fetchDocument(url: string): Promise<Partial<OidcEndpoints> | null> {
  try {
    const r = await callProvider("the OIDC provider", url, { headers: { accept: "application/json" } });
    const b = r.body;
    if (r.status !== 200 || !b || typeof b !== "object") return null;
    return { authorization: str(b.authorization_endpoint), token: str(b.token_endpoint), userinfo: str(b.userinfo_endpoint) };
  } catch {
    return null;
  }
}

const str = (v: unknown) => (typeof v === "string" ? v : "");

/** The three endpoints: each explicit option wins; the well-known document fills the gaps. */
export async function oidcEndpoints(deps: AppDeps): Promise<OidcEndpoints> {
  const o = deps.options;
  const explicit = { authorization: o.get("oidc.authorization_endpoint"), token: o.get("oidc.token_endpoint"), userinfo: o.get("oidc.user_info_endpoint") };
  const wellKnown = o.get("oidc.well_known");
  if ((explicit.authorization && explicit.token && explicit.userinfo) || !wellKnown) return explicit;
  const doc = (await discover(wellKnown)) ?? {};
  return {
    authorization: explicit.authorization || doc.authorization || "",
    token: explicit.token || doc.token || "",
    userinfo: explicit.userinfo || doc.userinfo || "",
  };
}

/** For the status object: never throws, and asks the network only when OIDC is on and needs it. */
export async function oidcAuthorizationEndpoint(deps: AppDeps): Promise<string> {
  const explicit = deps.options.get("oidc.authorization_endpoint");
  if (explicit || !deps.options.bool("oidc.enabled")) return explicit;
  const timeout = new Promise<null>((resolve) => setTimeout(resolve, STATUS_WAIT_MS, null).unref?.());
  const ep = await Promise.race([oidcEndpoints(deps).catch(() => null), timeout]);
  return ep?.authorization ?? "";
}

export async function oidcIdentity(deps: AppDeps, code: string, request: Request): Promise<ExternalIdentity> {
  if (!code) throw badRequest(MISSING_CODE);
  const ep = await oidcEndpoints(deps);
  if (!ep.token || !ep.userinfo) {
    throw new AppError(502, "the OIDC token and userinfo endpoints are unknown: check the well-known URL or set the endpoints");
  }
  const o = deps.options;
  const form = new URLSearchParams({
    client_id: o.get("oidc.client_id"), client_secret: o.get("oidc.client_secret"), code, grant_type: "authorization_code",
    redirect_uri: callbackUrl(deps, request, "/oauth/oidc"),
  });
  const token = await callProvider("OIDC", ep.token, {
    method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" }, body: form.toString(),
  });
  const accessToken = token.body?.access_token;
  if (typeof accessToken !== "string" || !accessToken) throw refused("OIDC", token);
  const info = await callProvider("OIDC", ep.userinfo, { headers: { authorization: `Bearer ${accessToken}`, accept: "application/json" } });
  const sub = info.body?.sub;
  if (info.status !== 200 || (typeof sub !== "string" && typeof sub !== "number") || sub === "") {
    throw new AppError(502, "the OIDC provider did not return the account's subject, check the OIDC settings");
  }
  const b = info.body;
  return { id: String(sub), displayName: str(b.name), email: str(b.email), username: str(b.preferred_username) };
}
