// Sign-in with Linux DO Connect: code → token (form POST, client id and secret as HTTP Basic) → /api/user;
// the account id is Linux DO's numeric user id.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { oauthCallback, startState } from "../helpers/oauth.ts";
import { startOAuthUpstream, type OAuthMock } from "../mocks/oauth-upstream.ts";

let ctx: TestContext;
let mock: OAuthMock;
const set = (key: string, value: string) => ctx.deps.options.set(key, value);

beforeAll(async () => {
  ctx = await testContext();
  mock = startOAuthUpstream();
  ctx.deps.oauthEndpoints = mock.endpoints;
  await set("ServerAddress", "https://gw.example.com");
  await set("LinuxDOClientId", mock.clients.linuxdo.id);
  await set("LinuxDOClientSecret", mock.clients.linuxdo.secret);
});
afterAll(async () => {
  mock.stop();
  await ctx.close();
});
beforeEach(() => set("LinuxDOOAuthEnabled", "true"));

const byId = (id: string) => ctx.deps.db.selectFrom("users").selectAll().where("linux_do_id", "=", id).execute();

describe("Linux DO sign-in", () => {
  test("a new Linux DO account registers linuxdo_<n> and is logged in; the second sign-in is the same user", async () => {
    const max = await ctx.deps.db
      .selectFrom("users")
      .select((eb) => eb.fn.max("id").as("m"))
      .executeTakeFirstOrThrow();
    const code = mock.code("linuxdo", { id: 4242, username: "neo", name: "Neo" });
    const r = await oauthCallback(ctx, "linuxdo", code);
    expect(r.body.success).toBe(true);
    expect(r.body.data).toMatchObject({
      username: `linuxdo_${Number(max.m) + 1}`,
      display_name: "Neo",
      linux_do_id: "4242",
    });
    const token = mock.requests.find((q) => q.path === "/linuxdo/oauth2/token")!;
    expect(token.headers.authorization).toBe("Basic " + Buffer.from("ld-client:ld-secret").toString("base64"));
    expect(Object.fromEntries(new URLSearchParams(token.raw))).toEqual({
      grant_type: "authorization_code",
      code,
      redirect_uri: "https://gw.example.com/oauth/linuxdo",
    });
    expect(mock.last().headers.authorization).toMatch(/^Bearer at-linuxdo-/);
    expect((await ctx.request("GET", "/api/user/self", { as: r.session! })).body.data.linux_do_id).toBe("4242");

    const again = await oauthCallback(ctx, "linuxdo", mock.code("linuxdo", { id: 4242, username: "neo", name: "" }));
    expect(again.body.data.id).toBe(r.body.data.id);
    expect(await byId("4242")).toHaveLength(1);
  });

  test("the display name falls back to the Linux DO username", async () => {
    const r = await oauthCallback(ctx, "linuxdo", mock.code("linuxdo", { id: 77, username: "trinity", name: "" }));
    expect(r.body.data.display_name).toBe("trinity");
  });

  test("a logged-in user binds; an id bound to someone else is refused", async () => {
    const me = await ctx.user();
    const r = await oauthCallback(ctx, "linuxdo", mock.code("linuxdo", { id: 9001, username: "morpheus" }), { as: me });
    expect(r.body).toMatchObject({ success: true, message: "bind", data: { id: me.id, linux_do_id: "9001" } });
    const other = await ctx.user();
    const taken = await oauthCallback(ctx, "linuxdo", mock.code("linuxdo", { id: 9001, username: "morpheus" }), {
      as: other,
    });
    expect(taken.body).toEqual({ success: false, message: "this Linux DO account is already bound to another user" });
    expect((await byId("9001")).map((u) => u.id)).toEqual([me.id]);
  });

  test("a bad state, a switched-off provider and a banned user are refused", async () => {
    const n = mock.requests.length;
    const forged = await oauthCallback(ctx, "linuxdo", mock.code("linuxdo", { id: 1 }), { state: "forged" });
    expect(forged.status).toBe(403);
    await set("LinuxDOOAuthEnabled", "false");
    const off = await oauthCallback(ctx, "linuxdo", mock.code("linuxdo", { id: 1 }));
    expect(off.body).toEqual({ success: false, message: "the administrator has not enabled sign-in with Linux DO" });
    expect(mock.requests.length).toBe(n);
    await set("LinuxDOOAuthEnabled", "true");
    await ctx.deps.db
      .insertInto("users")
      .values({ username: "ld_banned", password: "", linux_do_id: "666", status: 2, aff_code: "ldbanned" } as any)
      .execute();
    const banned = await oauthCallback(ctx, "linuxdo", mock.code("linuxdo", { id: 666, username: "smith" }));
    expect(banned.body).toEqual({ success: false, message: "user has been banned" });
    expect(banned.session).toBeNull();
  });

  test("the provider's own error on the callback (user denied access) is shown", async () => {
    const r = await ctx.request(
      "GET",
      "/api/oauth/linuxdo?error=access_denied&error_description=The+user+denied+access",
    );
    expect(r.body.success).toBe(false);
    // Without the state the request is refused before anything else.
    expect(r.status).toBe(403);
    const s = await startState(ctx);
    const denied = await ctx.request(
      "GET",
      `/api/oauth/linuxdo?error=access_denied&error_description=The+user+denied+access&state=${s.state}`,
      { headers: { cookie: s.cookie } },
    );
    expect(denied.body).toEqual({
      success: false,
      message: "the sign-in was cancelled or refused: The user denied access",
    });
  });

  test("a refused code is a 400 with Linux DO's reason", async () => {
    const r = await oauthCallback(ctx, "linuxdo", "stale-code");
    expect(r.status).toBe(400);
    expect(r.body.message).toBe("Linux DO refused the sign-in: the code is invalid");
  });
});
