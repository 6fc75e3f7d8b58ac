// Sign-in with an OpenID Connect provider: endpoints from the well-known document (or set explicitly),
// code → token (form POST) → userinfo; the account id is the subject (sub).
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { oauthCallback } from "../helpers/oauth.ts";
import { startOAuthUpstream, type OAuthMock } from "../mocks/oauth-upstream.ts";

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
    const code = mock.code("oidc", { sub: "sub-alice", email: "alice@idp.example", name: "Alice A.", preferred_username: "alice" });
    const r = await oauthCallback(ctx, "oidc", code);
    expect(r.body.success).toBe(true);
    expect(r.body.message).not.toBe("bind");
    expect(r.body.data).toMatchObject({ username: "alice", display_name: "Alice A.", email: "alice@idp.example", oidc_id: "sub-alice" });
    expect(mock.requests.some((q) => q.path === "/oidc/.well-known/openid-configuration")).toBe(true);
    const token = mock.requests.find((q) => q.path === "/oidc/token")!;
    expect(token.headers["content-type"]).toContain("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(token.raw))).toEqual({
      client_id: "oidc-client", client_secret: "oidc-secret", code, grant_type: "authorization_code", redirect_uri: "https://gw.example.com/oauth/oidc",
    });
    expect(mock.last().path).toBe("/oidc/userinfo");
    const self = await ctx.request("GET", "/api/user/self", { as: r.session! });
    expect(self.body.data.oidc_id).toBe("sub-alice");
  });

  test("the second sign-in reaches the same user; a taken preferred username falls back to oidc_<n>", async () => {
    const again = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-alice", email: "alice@idp.example", preferred_username: "alice" }));
    expect(again.body.data.username).toBe("alice");
    expect(await bySub("sub-alice")).toHaveLength(1);
    const other = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-other", email: "x@idp.example", preferred_username: "alice" }));
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
    const r = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-bind", email: "b@idp.example" }), { as: me });
    expect(r.body).toMatchObject({ success: true, message: "bind", data: { id: me.id, oidc_id: "sub-bind" } });
    const intruder = await ctx.user();
    const taken = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-bind", email: "b@idp.example" }), { as: intruder });
    expect(taken.body).toEqual({ success: false, message: "this OIDC account is already bound to another user" });
    expect((await bySub("sub-bind")).map((u) => u.id)).toEqual([me.id]);
  });

  test("bad state, switched-off OIDC and banned users are refused", async () => {
    const badState = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-x", email: "x@x.example" }), { state: "forged" });
    expect(badState.status).toBe(403);
    await set("oidc.enabled", "false");
    const off = await oauthCallback(ctx, "oidc", mock.code("oidc", { sub: "sub-x", email: "x@x.example" }));
    expect(off.body).toEqual({ success: false, message: "the administrator has not enabled sign-in with OIDC" });
    await set("oidc.enabled", "true");
    await ctx.deps.db.insertInto("users").values({ username: "oidc_banned", password: "", oidc_id: "sub-banned", status: 2, aff_code: "oidcbanned" } as any).execute();
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
    expect(s.body.data).toMatchObject({ oidc_enabled: true, oidc_client_id: "oidc-client", oidc_authorization_endpoint: `${mock.url}/oidc/authorize` });
    await set("oidc.authorization_endpoint", "https://idp.example/authorize");
    expect((await ctx.request("GET", "/api/status")).body.data.oidc_authorization_endpoint).toBe("https://idp.example/authorize");
  });
});
