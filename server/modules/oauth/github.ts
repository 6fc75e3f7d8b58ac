// GitHub: code → access token (JSON POST with the client credentials) → GET /user. The id stored is the
// login, as one-api and new-api store it, so their databases keep working.
import type { AppDeps } from "../../deps.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import { endpoint } from "./endpoints.ts";
import type { ExternalIdentity } from "./model.ts";
import { callProvider, refused } from "./upstream.ts";

export const MISSING_CODE = "the authorisation code is missing; start the sign-in again";

export async function githubIdentity(deps: AppDeps, code: string): Promise<ExternalIdentity> {
  if (!code) throw badRequest(MISSING_CODE);
  const o = deps.options;
  const token = await callProvider("GitHub", endpoint(deps, "githubToken"), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ client_id: o.get("GitHubClientId"), client_secret: o.get("GitHubClientSecret"), code }),
  });
  const accessToken = token.body?.access_token;
  if (typeof accessToken !== "string" || !accessToken) throw refused("GitHub", token);
  const me = await callProvider("GitHub", endpoint(deps, "githubUser"), {
    // GitHub's REST API refuses requests without a User-Agent.
    headers: {
      authorization: `Bearer ${accessToken}`,
      accept: "application/vnd.github+json",
      "user-agent": "Switchyard",
    },
  });
  const login = me.body?.login;
  if (me.status !== 200 || typeof login !== "string" || !login) {
    throw new AppError(502, "GitHub did not return the account's details, try again later");
  }
  return { id: login, displayName: String(me.body.name ?? ""), email: String(me.body.email ?? "") };
}
