// WeChat sign-in through a one-api WeChat server: the user types the code the official account sent them;
// the gateway asks WeChatServerAddress/api/wechat/user?code= (Authorization: WeChatServerToken) for the openid.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { sessionOf } from "../helpers/oauth.ts";
import { startOAuthUpstream, type OAuthMock } from "../mocks/oauth-upstream.ts";

let ctx: TestContext;
let mock: OAuthMock;
const set = (key: string, value: string) => ctx.deps.options.set(key, value);

beforeAll(async () => {
  ctx = await testContext();
  mock = startOAuthUpstream();
  await set("WeChatServerAddress", mock.wechatServer);
  await set("WeChatServerToken", mock.clients.wechat.secret);
});
afterAll(async () => {
  mock.stop();
  await ctx.close();
});
beforeEach(() => set("WeChatAuthEnabled", "true"));

const login = (code: string) => ctx.request("GET", `/api/oauth/wechat?code=${encodeURIComponent(code)}`);
const byOpenid = (id: string) => ctx.deps.db.selectFrom("users").selectAll().where("wechat_id", "=", id).execute();

describe("WeChat sign-in", () => {
  test("a new openid registers wechat_<n> ('WeChat User') and is logged in; the second sign-in is the same user", async () => {
    const max = await ctx.deps.db
      .selectFrom("users")
      .select((eb) => eb.fn.max("id").as("m"))
      .executeTakeFirstOrThrow();
    const code = mock.code("wechat", { openid: "oWx-alice" });
    const r = await login(code);
    expect(r.body.success).toBe(true);
    expect(r.body.data).toMatchObject({
      username: `wechat_${Number(max.m) + 1}`,
      display_name: "WeChat User",
      wechat_id: "oWx-alice",
    });
    const asked = mock.last();
    expect(asked.path).toBe("/wechat/api/wechat/user");
    expect(new URLSearchParams(asked.search).get("code")).toBe(code);
    expect(asked.headers.authorization).toBe("wechat-server-token");
    const session = sessionOf(r)!;
    expect((await ctx.request("GET", "/api/user/self", { as: session })).body.data.wechat_id).toBe("oWx-alice");

    const again = await login(mock.code("wechat", { openid: "oWx-alice" }));
    expect(again.body.data.id).toBe(r.body.data.id);
    expect(await byOpenid("oWx-alice")).toHaveLength(1);
  });

  test("a wrong or used code is 'verification code is wrong or expired'; a missing one is refused without asking", async () => {
    const code = mock.code("wechat", { openid: "oWx-once" });
    expect((await login(code)).body.success).toBe(true);
    const reused = await login(code);
    expect(reused.status).toBe(400);
    expect(reused.body).toEqual({ success: false, message: "verification code is wrong or expired" });
    const n = mock.requests.length;
    expect((await ctx.request("GET", "/api/oauth/wechat")).body.success).toBe(false);
    expect(mock.requests.length).toBe(n);
  });

  test("the WeChat server's refusal (a wrong server token) is passed on", async () => {
    await set("WeChatServerToken", "wrong");
    try {
      const r = await login(mock.code("wechat", { openid: "oWx-token" }));
      expect(r.body).toEqual({ success: false, message: "the WeChat server refused the sign-in: no permission" });
    } finally {
      await set("WeChatServerToken", mock.clients.wechat.secret);
    }
  });

  test("switched off, it is refused without asking the WeChat server; banned users are refused", async () => {
    await set("WeChatAuthEnabled", "false");
    const n = mock.requests.length;
    const off = await login(mock.code("wechat", { openid: "oWx-off" }));
    expect(off.status).toBe(403);
    expect(off.body).toEqual({ success: false, message: "the administrator has not enabled sign-in with WeChat" });
    expect(mock.requests.length).toBe(n);
    await set("WeChatAuthEnabled", "true");
    await ctx.deps.db
      .insertInto("users")
      .values({ username: "wx_banned", password: "", wechat_id: "oWx-banned", status: 2, aff_code: "wxbanned" } as any)
      .execute();
    const banned = await login(mock.code("wechat", { openid: "oWx-banned" }));
    expect(banned.body).toEqual({ success: false, message: "user has been banned" });
    expect(sessionOf(banned)).toBeNull();
  });

  test("with registration closed a new openid is refused", async () => {
    await set("RegisterEnabled", "false");
    try {
      const r = await login(mock.code("wechat", { openid: "oWx-closed" }));
      expect(r.body).toEqual({ success: false, message: "registration is closed by the administrator" });
      expect(await byOpenid("oWx-closed")).toHaveLength(0);
    } finally {
      await set("RegisterEnabled", "true");
    }
  });
});

describe("WeChat binding", () => {
  test("a logged-in user binds the openid; one bound to someone else is refused; guests must log in", async () => {
    const me = await ctx.user();
    const r = await ctx.request("GET", `/api/oauth/wechat/bind?code=${mock.code("wechat", { openid: "oWx-bind" })}`, {
      as: me,
    });
    expect(r.body).toMatchObject({ success: true, data: { id: me.id, wechat_id: "oWx-bind" } });
    const other = await ctx.user();
    const taken = await ctx.request(
      "GET",
      `/api/oauth/wechat/bind?code=${mock.code("wechat", { openid: "oWx-bind" })}`,
      { as: other },
    );
    expect(taken.body).toEqual({ success: false, message: "this WeChat account is already bound to another user" });
    expect((await byOpenid("oWx-bind")).map((u) => u.id)).toEqual([me.id]);
    const guest = await ctx.request(
      "GET",
      `/api/oauth/wechat/bind?code=${mock.code("wechat", { openid: "oWx-guest" })}`,
    );
    expect(guest.status).toBe(401);
  });

  test("binding is refused while WeChat sign-in is off", async () => {
    await set("WeChatAuthEnabled", "false");
    const me = await ctx.user();
    const r = await ctx.request(
      "GET",
      `/api/oauth/wechat/bind?code=${mock.code("wechat", { openid: "oWx-off-bind" })}`,
      { as: me },
    );
    expect(r.body).toEqual({ success: false, message: "the administrator has not enabled sign-in with WeChat" });
  });
});
