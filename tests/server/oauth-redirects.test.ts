// OAuth redirects go only to the configured site: the redirect_uri the gateway sends when exchanging a code
// is ServerAddress + /oauth/<provider>, else the request's own origin; never a Host or X-Forwarded-Host a
// caller made up, never a redirect_uri or redirect parameter from the query. No /api/oauth route answers
// with a redirect (the console navigates itself), so there is no Location to steer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { startState } from "../helpers/oauth.ts";
import { startOAuthUpstream, type OAuthMock } from "../mocks/oauth-upstream.ts";

let ctx: TestContext;
let mock: OAuthMock;
const set = (key: string, value: string) => ctx.deps.options.set(key, value);

beforeAll(async () => {
  ctx = await testContext({ config: { trustProxy: true } });
  mock = startOAuthUpstream();
  ctx.deps.oauthEndpoints = mock.endpoints;
  await set("oidc.client_id", mock.clients.oidc.id);
  await set("oidc.client_secret", mock.clients.oidc.secret);
  await set("oidc.well_known", mock.wellKnown);
  await set("oidc.enabled", "true");
  await set("LinuxDOClientId", mock.clients.linuxdo.id);
  await set("LinuxDOClientSecret", mock.clients.linuxdo.secret);
  await set("LinuxDOOAuthEnabled", "true");
});
afterAll(async () => {
  mock.stop();
  await ctx.close();
});

/** The callback as a crafted request: another Host, forwarded headers and redirect parameters in the query. */
async function craftedCallback(provider: "oidc" | "linuxdo", code: string) {
  const { state, cookie } = await startState(ctx);
  const query = new URLSearchParams({
    code,
    state,
    redirect_uri: "https://evil.example/steal",
    redirect: "https://evil.example/",
    next: "//evil.example",
  });
  const res = await ctx.app.handle(
    new Request(`http://evil.example/api/oauth/${provider}?${query}`, {
      headers: {
        cookie,
        "x-forwarded-host": "evil.example",
        "x-forwarded-proto": "https",
        forwarded: "host=evil.example",
      },
    }),
  );
  const tokenCall = mock.requests.filter((q) => q.path.endsWith("/token")).at(-1)!;
  return { res, body: (await res.json()) as any, redirectUri: new URLSearchParams(tokenCall.raw).get("redirect_uri") };
}

describe("redirect_uri in the code exchange", () => {
  test("with ServerAddress it is always ServerAddress, whatever the request says", async () => {
    await set("ServerAddress", "https://gw.example.com");
    for (const provider of ["oidc", "linuxdo"] as const) {
      const code =
        provider === "oidc"
          ? mock.code("oidc", { sub: `sub-${provider}-1` })
          : mock.code("linuxdo", { id: 9001, username: "r1" });
      const { res, body, redirectUri } = await craftedCallback(provider, code);
      expect(redirectUri).toBe(`https://gw.example.com/oauth/${provider}`);
      expect(body.success).toBe(true);
      expect(res.headers.get("location")).toBeNull();
    }
  });

  test("without ServerAddress it is the request's own origin, not a forwarded host", async () => {
    await set("ServerAddress", "");
    const { state, cookie } = await startState(ctx);
    const code = mock.code("oidc", { sub: "sub-origin" });
    const res = await ctx.app.handle(
      new Request(`http://localhost/api/oauth/oidc?code=${code}&state=${state}&redirect_uri=https://evil.example/`, {
        headers: { cookie, "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" },
      }),
    );
    expect(((await res.json()) as any).success).toBe(true);
    const tokenCall = mock.requests.filter((q) => q.path.endsWith("/token")).at(-1)!;
    expect(new URLSearchParams(tokenCall.raw).get("redirect_uri")).toBe("http://localhost/oauth/oidc");
    await set("ServerAddress", "https://gw.example.com");
  });
});

describe("no redirects from /api/oauth", () => {
  test("refusals and provider errors answer JSON, never a Location", async () => {
    const { state, cookie } = await startState(ctx);
    const paths = [
      `/api/oauth/oidc?error=access_denied&error_description=no&state=${state}&redirect=https://evil.example/`,
      "/api/oauth/github?code=x&state=forged&redirect_uri=https://evil.example/",
      "/api/oauth/linuxdo?code=x&state=&next=//evil.example",
      "/api/oauth/state?aff=x&redirect=https://evil.example/",
      "/api/oauth/wechat?code=x&redirect=https://evil.example/",
      "/api/oauth/telegram/login?id=1&hash=x&redirect=https://evil.example/",
    ];
    for (const path of paths) {
      const res = await ctx.app.handle(new Request("http://localhost" + path, { headers: { cookie } }));
      expect(res.status < 300 || res.status >= 400).toBe(true);
      expect(res.headers.get("location")).toBeNull();
      expect(res.headers.get("content-type")).toContain("application/json");
    }
  });
});
