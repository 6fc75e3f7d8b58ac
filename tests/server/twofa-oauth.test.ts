// A third-party sign-in is a first factor like a password: a user with two-factor sign-in on gets the same
// require_2fa step (and no session) until the code is given.
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { oauthCallback } from "../helpers/oauth.ts";
import { rawPost } from "../helpers/twofa.ts";
import { startOAuthUpstream, type OAuthMock } from "../mocks/oauth-upstream.ts";
import { totpCode } from "../../server/modules/twofa/totp.ts";

// Setting up two-factor sign-in hashes 8 bcrypt backup codes (~0.5 s); the shared machine can be slow.
setDefaultTimeout(20_000);

let ctx: TestContext;
let mock: OAuthMock;

beforeAll(async () => {
  ctx = await testContext();
  mock = startOAuthUpstream();
  ctx.deps.oauthEndpoints = mock.endpoints;
  for (const [k, v] of [
    ["GitHubClientId", mock.clients.github.id],
    ["GitHubClientSecret", mock.clients.github.secret],
    ["GitHubOAuthEnabled", "true"],
  ]) {
    await ctx.deps.options.set(k, v);
  }
});
afterAll(async () => {
  mock.stop();
  await ctx.close();
});

test("GitHub sign-in of a user with 2FA answers require_2fa; the code then opens the session", async () => {
  const me = await ctx.user(1);
  await oauthCallback(ctx, "github", mock.code("github", { login: "twofa-octo" }), { as: me });
  const setup = await ctx.request("POST", "/api/user/2fa/setup", { as: me });
  await ctx.request("POST", "/api/user/2fa/enable", { as: me, body: { code: totpCode(setup.body.data.secret) } });

  const r = await oauthCallback(ctx, "github", mock.code("github", { login: "twofa-octo" }));
  expect(r.body).toMatchObject({ success: true, data: { require_2fa: true } });
  expect(r.session).toBeNull();
  const done = await rawPost(ctx, "/api/user/login/2fa", {
    flow_token: r.body.data.flow_token,
    code: setup.body.data.backup_codes[0],
  });
  expect(done.body.data).toMatchObject({ id: me.id, github_id: "twofa-octo" });
});
