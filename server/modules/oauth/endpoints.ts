// Where GitHub and Linux DO live. OIDC's endpoints come from its options (well-known document or explicit
// URLs) and the WeChat server's from WeChatServerAddress, so only these two need a default here.
import type { AppDeps } from "../../deps.ts";

export const OAUTH_ENDPOINTS = {
  githubToken: "https://github.com/login/oauth/access_token",
  githubUser: "https://api.github.com/user",
  linuxdoToken: "https://connect.linux.do/oauth2/token",
  linuxdoUser: "https://connect.linux.do/api/user",
} as const;

export type OAuthEndpoints = Record<keyof typeof OAUTH_ENDPOINTS, string>;

/** The URL to call; tests point deps.oauthEndpoints at a local mock. */
export function endpoint(deps: AppDeps, key: keyof OAuthEndpoints): string {
  return deps.oauthEndpoints?.[key] || OAUTH_ENDPOINTS[key];
}

/** The redirect URI the console sent the user off with: the site's address, else this request's origin. */
export function callbackUrl(deps: AppDeps, request: Request, path: string): string {
  const base = deps.options.get("ServerAddress") || new URL(request.url).origin;
  return `${base.replace(/\/+$/, "")}${path}`;
}
