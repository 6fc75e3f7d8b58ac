// Linux DO Connect: code → token (form POST, client credentials as HTTP Basic) → /api/user. The account
// id is Linux DO's numeric user id, as new-api stores it.
import type { AppDeps } from "../../deps.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import { callbackUrl, endpoint } from "./endpoints.ts";
import type { ExternalIdentity } from "./model.ts";
import { callProvider, refused } from "./upstream.ts";
import { MISSING_CODE } from "./github.ts";

export async function linuxdoIdentity(deps: AppDeps, code: string, request: Request): Promise<ExternalIdentity> {
  if (!code) throw badRequest(MISSING_CODE);
  const o = deps.options;
  const basic = Buffer.from(`${o.get("LinuxDOClientId")}:${o.get("LinuxDOClientSecret")}`).toString("base64");
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code,
    redirect_uri: callbackUrl(deps, request, "/oauth/linuxdo"),
  });
  const token = await callProvider("Linux DO", endpoint(deps, "linuxdoToken"), {
    method: "POST",
    headers: {
      authorization: `Basic ${basic}`,
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    },
    body: form.toString(),
  });
  const accessToken = token.body?.access_token;
  if (typeof accessToken !== "string" || !accessToken) throw refused("Linux DO", token);
  const me = await callProvider("Linux DO", endpoint(deps, "linuxdoUser"), {
    headers: { authorization: `Bearer ${accessToken}`, accept: "application/json" },
  });
  const id = me.body?.id;
  if (me.status !== 200 || !Number.isSafeInteger(id) || id <= 0)
    throw new AppError(502, "Linux DO did not return the account's details, try again later");
  return { id: String(id), displayName: String(me.body.name || me.body.username || ""), email: "" };
}
