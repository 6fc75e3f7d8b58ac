// Third-party sign-in: the state handshake and the GitHub flow, which also states the account rules every
// provider shares (register, log in, bind, refuse) against a local mock of GitHub.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { sql } from "kysely";
import { testContext, type TestContext } from "../helpers/app.ts";
import { oauthCallback, startState } from "../helpers/oauth.ts";
import { startOAuthUpstream, type OAuthMock } from "../mocks/oauth-upstream.ts";

let ctx: TestContext;
let mock: OAuthMock;

beforeAll(async () => {
  ctx = await testContext();
  mock = startOAuthUpstream();
  ctx.deps.oauthEndpoints = mock.endpoints;
  await ctx.deps.options.set("GitHubClientId", mock.clients.github.id);
  await ctx.deps.options.set("GitHubClientSecret", mock.clients.github.secret);
});
afterAll(async () => {
  mock.stop();
  await ctx.close();
});
beforeEach(async () => {
  await ctx.deps.options.set("GitHubOAuthEnabled", "true");
  await ctx.deps.options.set("RegisterEnabled", "true");
});

/** A user straight into the table, without signing in (banned and deleted users cannot). */
async function insertUser(fields: Record<string, unknown>) {
  const username = `x${Math.random().toString(36).slice(2, 10)}`;
  await ctx.deps.db
    .insertInto("users")
    .values({
      username,
      password: "",
      display_name: username,
      role: 1,
      status: 1,
      group: "default",
      aff_code: username,
      setting: "",
      ...fields,
    } as any)
    .execute();
}

const userByGitHub = (login: string) =>
  ctx.deps.db.selectFrom("users").selectAll().where("github_id", "=", login).execute();
const STATE_REFUSED = "the sign-in state is missing, expired or does not match this browser; start the sign-in again";

test("every provider id column is indexed (each sign-in looks a user up by it)", async () => {
  const rows = (
    await sql<{ sql: string }>`select sql from sqlite_master where type = 'index' and tbl_name = 'users'`.execute(
      ctx.deps.db,
    )
  ).rows;
  for (const column of ["github_id", "oidc_id", "wechat_id", "telegram_id", "linux_do_id"]) {
    expect(rows.some((r) => new RegExp(`\\("?${column}"?\\)`).test(r.sql ?? ""))).toBe(true);
  }
});

describe("GET /api/oauth/state", () => {
  test("answers a fresh random state and ties it to this browser with a short-lived HttpOnly cookie", async () => {
    const a = await startState(ctx);
    const b = await startState(ctx);
    expect(a.reply.body.success).toBe(true);
    expect(typeof a.state).toBe("string");
    expect(a.state.length).toBeGreaterThanOrEqual(16);
    expect(a.state).not.toBe(b.state);
    const raw = a.reply.headers.getSetCookie().find((c) => c.startsWith("oauth_state="))!;
    expect(raw).toContain(`oauth_state=${a.state}`);
    expect(raw).toContain("HttpOnly");
    expect(raw).toContain("Path=/api/oauth");
    expect(raw).toMatch(/Max-Age=(\d+)/);
    expect(Number(/Max-Age=(\d+)/.exec(raw)![1])).toBeLessThanOrEqual(600);
  });
});

describe("GitHub sign-in", () => {
  test("a new GitHub account registers a user named like one-api's (github_<n>), logs it in and answers the user", async () => {
    const before = await ctx.deps.db
      .selectFrom("users")
      .select((eb) => eb.fn.max("id").as("m"))
      .executeTakeFirstOrThrow();
    const code = mock.code("github", { login: "octocat", name: "The Octocat", email: "octo@example.com" });
    const r = await oauthCallback(ctx, "github", code);
    expect(r.body.success).toBe(true);
    expect(r.body.message).not.toBe("bind");
    expect(r.body.data).toMatchObject({
      username: `github_${Number(before.m) + 1}`,
      display_name: "The Octocat",
      github_id: "octocat",
      role: 1,
      status: 1,
    });
    expect(r.body.data.password).toBeUndefined();
    // The code went to GitHub with the client credentials, then the token to the user endpoint.
    const tokenCall = mock.requests.find(
      (q) => q.path === "/github/login/oauth/access_token" && q.body?.code === code,
    )!;
    expect(tokenCall.body).toMatchObject({ client_id: "gh-client", client_secret: "gh-secret" });
    expect(tokenCall.headers.accept).toContain("application/json");
    expect(mock.last().path).toBe("/github/user");
    expect(mock.last().headers.authorization).toMatch(/^Bearer at-github-/);
    // The session works like a password login's.
    expect(r.session).not.toBeNull();
    const self = await ctx.request("GET", "/api/user/self", { as: r.session! });
    expect(self.body.data).toMatchObject({ id: r.body.data.id, github_id: "octocat", email: "octo@example.com" });
    // The state was used up and its cookie cleared.
    const cleared = r.headers.getSetCookie().find((c) => c.startsWith("oauth_state="))!;
    expect(cleared).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/);
  });

  test("the second sign-in with the same GitHub account logs in the same user", async () => {
    const first = await oauthCallback(ctx, "github", mock.code("github", { login: "returning", name: "" }));
    expect(first.body.data.display_name).toBe("GitHub User");
    const second = await oauthCallback(ctx, "github", mock.code("github", { login: "returning", name: "Renamed" }));
    expect(second.body.success).toBe(true);
    expect(second.body.data.id).toBe(first.body.data.id);
    expect(second.session).not.toBeNull();
    expect(await userByGitHub("returning")).toHaveLength(1);
  });

  test("a logged-in user binds the GitHub account: message 'bind', no new user", async () => {
    const me = await ctx.user();
    const r = await oauthCallback(ctx, "github", mock.code("github", { login: "binder" }), { as: me });
    expect(r.body).toMatchObject({ success: true, message: "bind" });
    expect(r.body.data).toMatchObject({ id: me.id, github_id: "binder" });
    const rows = await userByGitHub("binder");
    expect(rows.map((u) => u.id)).toEqual([me.id]);
    // Signing in with it later reaches the same account.
    const later = await oauthCallback(ctx, "github", mock.code("github", { login: "binder" }));
    expect(later.body.data.id).toBe(me.id);
  });

  test("a bind started while logged in whose session ended meanwhile is refused, not turned into a sign-in", async () => {
    const me = await ctx.user();
    const started = await startState(ctx, { as: me });
    await ctx.request("GET", "/api/user/logout", { as: me });
    const code = mock.code("github", { login: "half-bound" });
    const r = await ctx.request("GET", `/api/oauth/github?code=${code}&state=${started.state}`, {
      headers: { ...me.headers, cookie: `${me.cookie}; ${started.cookie}` },
    });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ success: false, message: "your login has expired: log in again, then bind the account" });
    expect(await userByGitHub("half-bound")).toHaveLength(0);
  });

  test("binding a GitHub account that belongs to another user is refused and changes nothing", async () => {
    const owner = await ctx.user(1, { github_id: "taken" });
    const me = await ctx.user();
    const r = await oauthCallback(ctx, "github", mock.code("github", { login: "taken" }), { as: me });
    expect(r.body).toEqual({ success: false, message: "this GitHub account is already bound to another user" });
    expect((await userByGitHub("taken")).map((u) => u.id)).toEqual([owner.id]);
    const mine = await ctx.deps.db
      .selectFrom("users")
      .select("github_id")
      .where("id", "=", me.id)
      .executeTakeFirstOrThrow();
    expect(mine.github_id).toBe("");
  });

  test("binding the account the user already has bound again is fine", async () => {
    const me = await ctx.user(1, { github_id: "mine-already" });
    const r = await oauthCallback(ctx, "github", mock.code("github", { login: "mine-already" }), { as: me });
    expect(r.body).toMatchObject({ success: true, message: "bind" });
  });

  test("a missing, unknown, foreign or reused state is refused before GitHub is asked", async () => {
    const asked = () => mock.requests.length;
    const n = asked();
    const noState = await oauthCallback(ctx, "github", mock.code("github", { login: "csrf" }), { state: "" });
    expect(noState.status).toBe(403);
    expect(noState.body).toEqual({ success: false, message: STATE_REFUSED });
    const unknown = await oauthCallback(ctx, "github", mock.code("github", { login: "csrf" }), {
      state: "not-issued-by-us-123",
    });
    expect(unknown.status).toBe(403);
    // An attacker's genuine state, sent by a victim's browser that never asked for it (no cookie).
    const attackers = await startState(ctx);
    const foreign = await oauthCallback(ctx, "github", mock.code("github", { login: "csrf" }), {
      state: attackers.state,
      stateCookie: null,
    });
    expect(foreign.status).toBe(403);
    // ... or with the victim's own cookie for a different state.
    const mismatched = await oauthCallback(ctx, "github", mock.code("github", { login: "csrf" }), {
      state: attackers.state,
    });
    expect(mismatched.status).toBe(403);
    expect(asked()).toBe(n);
    expect(await userByGitHub("csrf")).toHaveLength(0);

    // A state works once.
    const s = await startState(ctx);
    const send = (code: string) =>
      ctx.request("GET", `/api/oauth/github?code=${code}&state=${s.state}`, { headers: { cookie: s.cookie } });
    expect((await send(mock.code("github", { login: "once" }))).body.success).toBe(true);
    const again = await send(mock.code("github", { login: "once" }));
    expect(again.status).toBe(403);
  });

  test("an expired state is refused", async () => {
    const s = await startState(ctx);
    await ctx.deps.cache.del(`oauth:state:${s.state}`);
    const r = await ctx.request(
      "GET",
      `/api/oauth/github?code=${mock.code("github", { login: "late" })}&state=${s.state}`,
      { headers: { cookie: s.cookie } },
    );
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(STATE_REFUSED);
  });

  test("with GitHub sign-in switched off, sign-in and binding are refused without asking GitHub", async () => {
    await ctx.deps.options.set("GitHubOAuthEnabled", "false");
    const n = mock.requests.length;
    const r = await oauthCallback(ctx, "github", mock.code("github", { login: "off" }));
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ success: false, message: "the administrator has not enabled sign-in with GitHub" });
    const me = await ctx.user();
    const bind = await oauthCallback(ctx, "github", mock.code("github", { login: "off" }), { as: me });
    expect(bind.body.success).toBe(false);
    expect(mock.requests.length).toBe(n);
  });

  test("a banned user is refused and gets no session", async () => {
    await insertUser({ github_id: "banned-one", status: 2 });
    const r = await oauthCallback(ctx, "github", mock.code("github", { login: "banned-one" }));
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ success: false, message: "user has been banned" });
    expect(r.session).toBeNull();
  });

  test("a deleted account is refused, not replaced by a new registration", async () => {
    await insertUser({ github_id: "gone", deleted_at: "2024-01-01 00:00:00" });
    const r = await oauthCallback(ctx, "github", mock.code("github", { login: "gone" }));
    expect(r.body).toEqual({ success: false, message: "this account has been deleted" });
    expect(r.session).toBeNull();
    expect(await userByGitHub("gone")).toHaveLength(1);
  });

  test("with registration closed a new GitHub account is refused; known ones still log in", async () => {
    await ctx.user(1, { github_id: "known-closed" });
    await ctx.deps.options.set("RegisterEnabled", "false");
    const r = await oauthCallback(ctx, "github", mock.code("github", { login: "newcomer" }));
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ success: false, message: "registration is closed by the administrator" });
    expect(await userByGitHub("newcomer")).toHaveLength(0);
    const known = await oauthCallback(ctx, "github", mock.code("github", { login: "known-closed" }));
    expect(known.body.success).toBe(true);
  });

  test("the aff code given with the state makes the inviter's referral, with the invite rewards", async () => {
    await ctx.deps.options.set("QuotaForNewUser", "100");
    await ctx.deps.options.set("QuotaForInvitee", "20");
    await ctx.deps.options.set("QuotaForInviter", "7");
    try {
      const inviter = await ctx.user(1, { aff_code: "INVITE42" });
      const r = await oauthCallback(ctx, "github", mock.code("github", { login: "invited" }), { aff: "INVITE42" });
      expect(r.body.data).toMatchObject({ inviter_id: inviter.id, quota: 120 });
      const inv = await ctx.deps.db
        .selectFrom("users")
        .selectAll()
        .where("id", "=", inviter.id)
        .executeTakeFirstOrThrow();
      expect([inv.aff_count, inv.aff_quota, inv.aff_history]).toEqual([1, 7, 7]);
      // An unknown code is ignored.
      const stranger = await oauthCallback(ctx, "github", mock.code("github", { login: "uninvited" }), { aff: "NOPE" });
      expect(stranger.body.data).toMatchObject({ inviter_id: 0, quota: 100 });
    } finally {
      await ctx.deps.options.set("QuotaForNewUser", "0");
      await ctx.deps.options.set("QuotaForInvitee", "0");
      await ctx.deps.options.set("QuotaForInviter", "0");
    }
  });

  test("a generated username already taken by someone else gets another name", async () => {
    const max = await ctx.deps.db
      .selectFrom("users")
      .select((eb) => eb.fn.max("id").as("m"))
      .executeTakeFirstOrThrow();
    await ctx.user(1, { username: `github_${Number(max.m) + 2}` });
    const r = await oauthCallback(ctx, "github", mock.code("github", { login: "collider" }));
    expect(r.body.success).toBe(true);
    expect(r.body.data.username).toStartWith("github_");
    expect(r.body.data.username).not.toBe(`github_${Number(max.m) + 2}`);
  });

  test("an email another account already uses is not copied onto the new user", async () => {
    await ctx.user(1, { email: "shared@example.com" });
    const r = await oauthCallback(
      ctx,
      "github",
      mock.code("github", { login: "emailclash", email: "shared@example.com" }),
    );
    expect(r.body.success).toBe(true);
    expect(r.body.data.email).toBe("");
  });

  test("a code GitHub rejects gives GitHub's reason and creates nobody", async () => {
    const r = await oauthCallback(ctx, "github", "made-up-code");
    expect(r.body.success).toBe(false);
    expect(r.status).toBe(400);
    expect(r.body.message).toBe("GitHub refused the sign-in: The code passed is incorrect or expired.");
    const none = await oauthCallback(ctx, "github", "");
    expect(none.body.success).toBe(false);
  });

  test("an unreachable GitHub is a 502 with a plain message, not an internal error", async () => {
    ctx.deps.oauthEndpoints = { ...mock.endpoints, githubToken: "http://127.0.0.1:9/nothing" };
    try {
      const r = await oauthCallback(ctx, "github", mock.code("github", { login: "offline" }));
      expect(r.status).toBe(502);
      expect(r.body).toEqual({ success: false, message: "could not reach GitHub, try again later" });
    } finally {
      ctx.deps.oauthEndpoints = mock.endpoints;
    }
  });
});
