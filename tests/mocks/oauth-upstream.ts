// Local stand-ins for the third-party sign-in providers, on one port under four prefixes:
//   /github   GitHub's token endpoint (JSON body) and REST user endpoint
//   /oidc     an OpenID provider: well-known document, token endpoint (form body), userinfo
//   /linuxdo  Linux DO Connect: token endpoint (form body, HTTP Basic client auth) and /api/user
//   /wechat   a one-api WeChat server: /api/wechat/user?code= with the server token in Authorization
// Each code is issued by code(provider, profile) and works once, as real authorisation codes do.
import { serve, type MockUpstream } from "./recorder.ts";

export type CodeProvider = "github" | "oidc" | "linuxdo" | "wechat";

export interface OAuthMock extends MockUpstream {
  /** Client credentials each provider accepts (the WeChat server's token is wechat.secret). */
  clients: Record<CodeProvider, { id: string; secret: string }>;
  /** The endpoint map the gateway takes in deps.oauthEndpoints. */
  endpoints: { githubToken: string; githubUser: string; linuxdoToken: string; linuxdoUser: string };
  wellKnown: string;
  wechatServer: string;
  /** A fresh single-use code that yields this profile (for WeChat: { openid }). */
  code(provider: CodeProvider, profile: Record<string, unknown>): string;
}

let seq = 0;

export function startOAuthUpstream(): OAuthMock {
  const codes = new Map<string, { provider: CodeProvider; profile: Record<string, unknown> }>();
  const tokens = new Map<string, { provider: CodeProvider; profile: Record<string, unknown> }>();
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
  const bearer = (provider: CodeProvider, req: Request) => {
    const hit = tokens.get((req.headers.get("authorization") ?? "").replace(/^Bearer\s+/i, ""));
    return hit && hit.provider === provider ? hit.profile : null;
  };
  const form = (raw: string) => Object.fromEntries(new URLSearchParams(raw));

  const server = serve((req, rec) => {
    const p = rec.path;
    // GitHub answers 200 with an error object when the code or the client is wrong.
    if (p === "/github/login/oauth/access_token" && req.method === "POST") {
      const b = rec.body ?? {};
      if (b.client_id !== clients.github.id || b.client_secret !== clients.github.secret) {
        return Response.json({ error: "incorrect_client_credentials", error_description: "The client_id and/or client_secret passed are incorrect." });
      }
      const token = redeem("github", String(b.code ?? ""));
      if (!token) return Response.json({ error: "bad_verification_code", error_description: "The code passed is incorrect or expired." });
      return Response.json({ access_token: token, scope: "user:email", token_type: "bearer" });
    }
    if (p === "/github/user" && req.method === "GET") {
      const profile = bearer("github", req);
      return profile ? Response.json({ id: 1000 + seq, ...profile }) : Response.json({ message: "Bad credentials" }, { status: 401 });
    }

    if (p === "/oidc/.well-known/openid-configuration") {
      return Response.json({
        issuer: `${server.url}/oidc`, authorization_endpoint: `${server.url}/oidc/authorize`, token_endpoint: `${server.url}/oidc/token`,
        userinfo_endpoint: `${server.url}/oidc/userinfo`, response_types_supported: ["code"], subject_types_supported: ["public"],
      });
    }
    if (p === "/oidc/token" && req.method === "POST") {
      const b = form(rec.raw);
      if (b.client_id !== clients.oidc.id || b.client_secret !== clients.oidc.secret) return Response.json({ error: "invalid_client" }, { status: 401 });
      if (b.grant_type !== "authorization_code") return Response.json({ error: "unsupported_grant_type" }, { status: 400 });
      const token = redeem("oidc", b.code ?? "");
      if (!token) return Response.json({ error: "invalid_grant" }, { status: 400 });
      return Response.json({ access_token: token, token_type: "Bearer", expires_in: 3600, id_token: "unused" });
    }
    if (p === "/oidc/userinfo") {
      const profile = bearer("oidc", req);
      return profile ? Response.json(profile) : Response.json({ error: "invalid_token" }, { status: 401 });
    }

    if (p === "/linuxdo/oauth2/token" && req.method === "POST") {
      const basic = "Basic " + Buffer.from(`${clients.linuxdo.id}:${clients.linuxdo.secret}`).toString("base64");
      if (req.headers.get("authorization") !== basic) return Response.json({ error: "invalid_client", message: "client authentication failed" }, { status: 401 });
      const token = redeem("linuxdo", form(rec.raw).code ?? "");
      if (!token) return Response.json({ error: "invalid_grant", message: "the code is invalid" }, { status: 400 });
      return Response.json({ access_token: token, token_type: "bearer", expires_in: 3600 });
    }
    if (p === "/linuxdo/api/user") {
      const profile = bearer("linuxdo", req);
      return profile ? Response.json({ active: true, trust_level: 1, silenced: false, ...profile }) : Response.json({ error: "unauthorised" }, { status: 401 });
    }

    // The WeChat server's answer to an unknown or used code is success with an empty openid.
    if (p === "/wechat/api/wechat/user") {
      if (req.headers.get("authorization") !== clients.wechat.secret) return Response.json({ success: false, message: "no permission" });
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
      githubToken: `${server.url}/github/login/oauth/access_token`, githubUser: `${server.url}/github/user`,
      linuxdoToken: `${server.url}/linuxdo/oauth2/token`, linuxdoUser: `${server.url}/linuxdo/api/user`,
    },
    wellKnown: `${server.url}/oidc/.well-known/openid-configuration`,
    wechatServer: `${server.url}/wechat`,
    code(provider, profile) {
      const code = `code-${provider}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;
      codes.set(code, { provider, profile });
      return code;
    },
  };
}
