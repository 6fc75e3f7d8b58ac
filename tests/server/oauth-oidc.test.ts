// Sign-in with an OpenID Connect provider (openid-client): endpoints from the well-known document (or set
// explicitly), code → token (form POST; the ID token validated against the document's issuer and JWKS) →
// userinfo; the account id is the subject (sub). The mock provider signs real RS256 ID tokens.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { oauthCallback, startOidc } from "../helpers/oauth.ts";
import { startOAuthUpstream, type IdTokenTweak, type OAuthMock } from "../mocks/oauth-upstream.ts";

let ctx: TestContext;
let mock: OAuthMock;
const set = (key: string, value: string) => ctx.deps.options.set(key, value);

beforeAll(async () => {
  ctx = await testContext();
  mock = startOAuthUpstream();
  await set("ServerAddress", "https://gw.example.com");
  await set("oidc.client_id", mock.clients.oidc.id);
  await set("oidc.client_secret", mock.clients.oidc.secret);
});
afterAll(async () => {
  mock.stop();
  await ctx.close();
});
beforeEach(async () => {
  await set("oidc.well_known", mock.wellKnown);
  for (const k of ["oidc.authorization_endpoint", "oidc.token_endpoint", "oidc.user_info_endpoint"]) await set(k, "");
  await set("oidc.enabled", "true");
});

const bySub = (sub: string) => ctx.deps.db.selectFrom("users").selectAll().where("oidc_id", "=", sub).execute();

describe("OIDC sign-in", () => {
  test("with only the well-known URL set, a new subject registers (preferred_username when free) and is logged in", async () => {
    const code = mock.code("oidc", {
      sub: "sub-alice",
      email: "alice@idp.example",
      name: "Alice A.",
      preferred_username: "alice",
    });
    const r = await oauthCallback(ctx, "oidc", code);
    expect(r.body.success).toBe(true);
    expect(r.body.message).not.toBe("bind");
    expect(r.body.data).toMatchObject({
      username: "alice",
      display_name: "Alice A.",
      email: "alice@idp.example",
      oidc_id: "sub-alice",
    });
    expect(mock.requests.some((q) => q.path === "/oidc/.well-known/openid-configuration")).toBe(true);
    const token = mock.requests.find((q) => q.path === "/oidc/token")!;
    expect(token.headers["content-type"]).toContain("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(token.raw))).toEqual({
      client_id: "oidc-client",
      client_secret: "oidc-secret",
      code,
      grant_type: "authorization_code",
      redirect_uri: "https://gw.example.com/oauth/oidc",
    });
    expect(mock.last().path).toBe("/oidc/userinfo");
    const self = await ctx.request("GET", "/api/user/self", { as: r.session! });
    expect(self.body.data.oidc_id).toBe("sub-alice");
  });

  test("the second sign-in reaches the same user; a taken preferred username falls back to oidc_<n>", async () => {
    const again = await oauthCallback(
      ctx,
      "oidc",
      mock.code("oidc", { sub: "sub-alice", email: "alice@idp.example", preferred_username: "alice" }),
    );
    expect(again.body.data.username).toBe("alice");
    expect(await bySub("sub-alice")).toHaveLength(1);
    const other = await oauthCallback(
      ctx,
      "oidc",
      mock.code("oidc", { sub: "sub-other", email: "x@idp.example", preferred_username: "alice" }),
    );
    expect(other.body.success).toBe(true);
    expect(other.body.data.username).toMatch(/^oidc_\d+$/);
    expect(other.body.data.display_name).toBe("OIDC User");
  });

  test("explicit endpoints work without a well-known document", async () => {
    await set("oidc.well_known", "");
    await set("oidc.token_endpoint", `${mock.url}/oidc/token`);
    await set("oidc.user_info_endpoint", `${mock.url}/oidc/userinfo`);
    const r = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-explicit", email: "e@idp.example" }));
    expect(r.body.success).toBe(true);
    expect(r.body.data.oidc_id).toBe("sub-explicit");
  });

  test("a logged-in user binds the subject; one bound to someone else is refused", async () => {
    const me = await ctx.user();
    const r = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-bind", email: "b@idp.example" }), {
      as: me,
    });
    expect(r.body).toMatchObject({ success: true, message: "bind", data: { id: me.id, oidc_id: "sub-bind" } });
    const intruder = await ctx.user();
    const taken = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-bind", email: "b@idp.example" }), {
      as: intruder,
    });
    expect(taken.body).toEqual({ success: false, message: "this OIDC account is already bound to another user" });
    expect((await bySub("sub-bind")).map((u) => u.id)).toEqual([me.id]);
  });

  test("bad state, switched-off OIDC and banned users are refused", async () => {
    const badState = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-x", email: "x@x.example" }), {
      state: "forged",
    });
    expect(badState.status).toBe(403);
    await set("oidc.enabled", "false");
    const off = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-x", email: "x@x.example" }));
    expect(off.body).toEqual({ success: false, message: "the administrator has not enabled sign-in with OIDC" });
    await set("oidc.enabled", "true");
    await ctx.deps.db
      .insertInto("users")
      .values({
        username: "oidc_banned",
        password: "",
        oidc_id: "sub-banned",
        status: 2,
        aff_code: "oidcbanned",
      } as any)
      .execute();
    const banned = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-banned", email: "z@x.example" }));
    expect(banned.body).toEqual({ success: false, message: "user has been banned" });
    expect(banned.session).toBeNull();
    expect(await bySub("sub-x")).toHaveLength(0);
  });

  test("a userinfo answer without a subject signs nobody in", async () => {
    const r = await oauthCallback(ctx, "oidc", mock.code("oidc", { email: "nosub@idp.example" }));
    expect(r.status).toBe(502);
    expect(r.body.success).toBe(false);
    expect(r.session).toBeNull();
  });

  test("a code the provider refuses is a 400 with its reason", async () => {
    const r = await oauthCallback(ctx, "oidc", "not-a-code");
    expect(r.status).toBe(400);
    expect(r.body.message).toBe("OIDC refused the sign-in: invalid_grant");
  });

  test("the status object offers the discovered authorisation endpoint when none is set explicitly", async () => {
    const s = await ctx.request("GET", "/api/status");
    expect(s.body.data).toMatchObject({
      oidc_enabled: true,
      oidc_client_id: "oidc-client",
      oidc_authorization_endpoint: `${mock.url}/oidc/authorize`,
    });
    await set("oidc.authorization_endpoint", "https://idp.example/authorize");
    expect((await ctx.request("GET", "/api/status")).body.data.oidc_authorization_endpoint).toBe(
      "https://idp.example/authorize",
    );
  });
});

describe("the ID token, nonce and PKCE", () => {
  const profile = (sub: string) => ({ sub, email: `${sub}@idp.example`, name: "Val" });
  const tokenForm = () =>
    Object.fromEntries(new URLSearchParams(mock.requests.filter((q) => q.path === "/oidc/token").at(-1)!.raw));
  const s256 = async (v: string) =>
    Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(v))).toString("base64url");

  test("the server-built authorisation URL carries a nonce and an S256 challenge; the verifier goes with the code", async () => {
    const started = await startOidc(ctx);
    expect(started.reply.body.success).toBe(true);
    const u = new URL(started.url);
    expect(u.origin + u.pathname).toBe(`${mock.url}/oidc/authorize`);
    const q = u.searchParams;
    const { nonce, code_challenge, state, ...fixed } = Object.fromEntries(q);
    expect(fixed).toEqual({
      client_id: "oidc-client",
      redirect_uri: "https://gw.example.com/oauth/oidc",
      response_type: "code",
      scope: "openid profile email",
      code_challenge_method: "S256",
    });
    expect(state).toBe(started.state);
    expect(started.cookie).toBe(`oauth_state=${started.state}`);
    expect(nonce.length).toBeGreaterThanOrEqual(32);
    expect(code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { code } = mock.authorize(started.url, profile("sub-pkce"));
    const r = await oauthCallback(ctx, "oidc", code, { started });
    expect(r.body.success).toBe(true);
    expect(r.body.data).toMatchObject({ oidc_id: "sub-pkce", email: "sub-pkce@idp.example", display_name: "Val" });
    expect(await s256(tokenForm().code_verifier)).toBe(code_challenge);
    expect(mock.requests.some((req) => req.path === "/oidc/jwks")).toBe(true);
    // Two sign-ins never share a nonce or a challenge.
    const again = new URL((await startOidc(ctx)).url).searchParams;
    expect(again.get("nonce")).not.toBe(nonce);
    expect(again.get("code_challenge")).not.toBe(code_challenge);
  });

  const refusedCases: [string, IdTokenTweak, RegExp][] = [
    ["issuer", { iss: "https://evil.example/oidc" }, /"iss" \(issuer\)/],
    ["audience", { aud: "another-client" }, /"aud" \(audience\)/],
    ["signature", { foreignKey: true }, /signature verification failed/],
    ["nonce", { nonce: "not-the-nonce-that-was-sent" }, /"nonce"/],
    ["expiry", { expired: true }, /"exp"/],
    // Listed by the provider, but a token signed with the shared client secret proves nothing to a third party.
    ["algorithm (HS256)", { hs256: true }, /unsupported JWS algorithm/],
  ];
  for (const [what, tweak, reason] of refusedCases) {
    test(`an ID token with the wrong ${what} signs nobody in`, async () => {
      const started = await startOidc(ctx);
      const { code } = mock.authorize(started.url, profile(`sub-forged-${what}`), tweak);
      const r = await oauthCallback(ctx, "oidc", code, { started });
      expect(r.status).toBe(502);
      expect(r.body.success).toBe(false);
      expect(r.body.message).toStartWith("the OIDC provider's answer was refused: ");
      expect(r.body.message).toMatch(reason);
      expect(r.session).toBeNull();
      expect(await bySub(`sub-forged-${what}`)).toHaveLength(0);
    });
  }

  test("a state from /api/oauth/state (the URL built by the browser) expects no nonce, and still checks the token", async () => {
    const withNonce = await oauthCallback(
      ctx,
      "oidc",
      mock.code("oidc", profile("sub-unasked-nonce"), { idToken: { nonce: "injected" } }),
    );
    expect(withNonce.status).toBe(502);
    expect(withNonce.body.message).toMatch(/"nonce"/);
    const forged = await oauthCallback(
      ctx,
      "oidc",
      mock.code("oidc", profile("sub-old-flow-forged"), { idToken: { foreignKey: true } }),
    );
    expect(forged.status).toBe(502);
    expect(await bySub("sub-old-flow-forged")).toHaveLength(0);
  });

  test("userinfo must describe the ID token's subject", async () => {
    const r = await oauthCallback(
      ctx,
      "oidc",
      mock.code("oidc", profile("sub-userinfo"), { idToken: { sub: "sub-someone-else" } }),
    );
    expect(r.status).toBe(502);
    expect(r.body.message).toBe("the OIDC provider's userinfo names another subject than its ID token");
    expect(r.session).toBeNull();
    expect(await bySub("sub-userinfo")).toHaveLength(0);
    expect(await bySub("sub-someone-else")).toHaveLength(0);
  });

  test("a code issued with a PKCE challenge is refused by the provider when the state holds no verifier", async () => {
    const started = await startOidc(ctx);
    const { code } = mock.authorize(started.url, profile("sub-no-verifier"));
    const r = await oauthCallback(ctx, "oidc", code); // a fresh state from /api/oauth/state
    expect(r.status).toBe(400);
    expect(r.body.message).toBe("OIDC refused the sign-in: PKCE verification failed");
    expect(tokenForm().code_verifier).toBeUndefined();
  });

  test("an iss parameter on the redirect must name the issuer (RFC 9207)", async () => {
    const wrong = await oauthCallback(ctx, "oidc", mock.code("oidc", profile("sub-iss-param")), {
      extra: { iss: "https://evil.example/oidc" },
    });
    expect(wrong.status).toBe(502);
    expect(await bySub("sub-iss-param")).toHaveLength(0);
    const right = await oauthCallback(ctx, "oidc", mock.code("oidc", profile("sub-iss-param")), {
      extra: { iss: mock.issuer },
    });
    expect(right.body.success).toBe(true);
  });

  test("a provider that does not list S256 gets a nonce and no challenge", async () => {
    const plain = startOAuthUpstream({ pkce: false });
    try {
      await set("oidc.well_known", plain.wellKnown);
      const started = await startOidc(ctx);
      const q = new URL(started.url).searchParams;
      expect(q.has("code_challenge")).toBe(false);
      expect(q.get("nonce")).toBeTruthy();
      const { code } = plain.authorize(started.url, profile("sub-no-pkce"));
      const r = await oauthCallback(ctx, "oidc", code, { started });
      expect(r.body.data.oidc_id).toBe("sub-no-pkce");
    } finally {
      plain.stop();
    }
  });

  test("without a well-known document: no nonce or challenge, the ID token set aside, the account from userinfo", async () => {
    await set("oidc.well_known", "");
    await set("oidc.authorization_endpoint", `${mock.url}/oidc/authorize`);
    await set("oidc.token_endpoint", `${mock.url}/oidc/token`);
    await set("oidc.user_info_endpoint", `${mock.url}/oidc/userinfo`);
    const started = await startOidc(ctx);
    const q = new URL(started.url).searchParams;
    expect(q.has("nonce")).toBe(false);
    expect(q.has("code_challenge")).toBe(false);
    // No issuer or key is known to check the ID token against, so even a foreign one is not what decides.
    const { code } = mock.authorize(started.url, profile("sub-explicit-only"), { foreignKey: true });
    const r = await oauthCallback(ctx, "oidc", code, { started });
    expect(r.body.data.oidc_id).toBe("sub-explicit-only");
  });

  test("plain http is refused for a provider that is not on this machine", async () => {
    await set("oidc.well_known", "http://idp.example/.well-known/openid-configuration");
    const r = await oauthCallback(ctx, "oidc", mock.code("oidc", profile("sub-http")));
    expect(r.status).toBe(502);
    expect(r.body.message).toBe(
      "the OIDC provider must be reached over https (plain http only for a provider on this machine)",
    );
    await set("oidc.well_known", "");
    await set("oidc.token_endpoint", "http://idp.example/token");
    await set("oidc.user_info_endpoint", `${mock.url}/oidc/userinfo`);
    const explicit = await oauthCallback(ctx, "oidc", mock.code("oidc", profile("sub-http")));
    expect(explicit.status).toBe(502);
    expect(explicit.body.message).toBe(
      "the OIDC provider must be reached over https (plain http only for a provider on this machine)",
    );
    expect(await bySub("sub-http")).toHaveLength(0);
  });

  test("the authorize route needs OIDC on", async () => {
    await set("oidc.enabled", "false");
    const r = await startOidc(ctx);
    expect(r.reply.body).toEqual({ success: false, message: "the administrator has not enabled sign-in with OIDC" });
    expect(r.cookie).toBe("");
  });
});
