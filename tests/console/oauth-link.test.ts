// The OIDC authorise link names the configured site as redirect_uri (ServerAddress, the value the server
// sends again when it exchanges the code), else the console's own origin; nothing from the page's URL.
import { describe, expect, test } from "bun:test";
import { authoriseUrl } from "../../console/components/OAuthButtons.tsx";
import { BASE_STATUS } from "./helpers.tsx";

const status = { ...BASE_STATUS, oidc_authorization_endpoint: "https://idp.example/authorize", oidc_client_id: "cid" };
const redirectOf = (url: string) => new URL(url).searchParams.get("redirect_uri");

describe("OIDC authorise link", () => {
  test("ServerAddress when set (a trailing slash dropped)", () => {
    expect(redirectOf(authoriseUrl("oidc", { ...status, server_address: "https://gw.example.com/" }, "st"))).toBe(
      "https://gw.example.com/oauth/oidc",
    );
  });

  test("else the console's own origin, whatever the current path and query hold", () => {
    history.replaceState(null, "", "/login?redirect_uri=https://evil.example/&next=//evil.example");
    const url = authoriseUrl("oidc", { ...status, server_address: "" }, "st");
    expect(redirectOf(url)).toBe(`${location.origin}/oauth/oidc`);
    expect(new URL(url).origin).toBe("https://idp.example");
    expect(new URL(url).searchParams.get("state")).toBe("st");
  });
});

describe("OIDC sign-in button", () => {
  test("goes to the link the server builds (it holds the nonce and PKCE verifier), passing the invite code", async () => {
    const { mockFetch } = await import("./helpers.tsx");
    const { startOAuth } = await import("../../console/components/OAuthButtons.tsx");
    const target = `${location.origin}/idp-authorize?state=s1&nonce=n1&code_challenge=c1`;
    const mock = mockFetch({ "GET /api/oauth/oidc/authorize": { url: target, state: "s1" } });
    try {
      await startOAuth("oidc", status, "AFF");
      expect(mock.calls.map((c) => c.path)).toEqual(["/api/oauth/oidc/authorize"]);
      expect(mock.calls[0].query.get("aff")).toBe("AFF");
      expect(location.href).toBe(target);
    } finally {
      mock.restore();
    }
  });
});
