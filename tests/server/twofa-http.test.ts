// Two-factor sign-in through the routes new-api's console calls: /api/user/2fa/*, the two-step password
// login (/api/user/login → require_2fa → /api/user/login/2fa), /api/verify, the admin's reset, and the
// option that makes the super admin use it.
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { totpCode } from "../../server/modules/twofa/totp.ts";
import { cookieNamed, rawPost, sessionOf, type RawReply } from "../helpers/twofa.ts";

// Setting up two-factor sign-in hashes 8 bcrypt backup codes (~0.5 s); the shared machine can be slow.
setDefaultTimeout(20_000);

const STEP_MS = 30_000;

for (const kind of storageKinds()) {
  describe(`two-factor sign-in over HTTP [${kind}]`, () => {
    let ctx: TestContext;
    beforeAll(async () => {
      ctx = await testContext({ kind, redis: true });
    });
    afterAll(() => ctx.close());

    const passwordLogin = (username: string, password: string) =>
      rawPost(ctx, "/api/user/login", { username, password });
    const sessionFrom = (reply: RawReply, username: string) => sessionOf(reply, username, "password123");
    /** Sets up and enables 2FA through the API; answers the secret and backup codes. */
    const enable = async (s: Session) => {
      const setup = await ctx.request("POST", "/api/user/2fa/setup", { as: s });
      expect(setup.body.success).toBe(true);
      const r = await ctx.request("POST", "/api/user/2fa/enable", {
        as: s,
        body: { code: totpCode(setup.body.data.secret) },
      });
      expect(r.body).toMatchObject({ success: true });
      return setup.body.data as { secret: string; qr_code_data: string; backup_codes: string[] };
    };
    const secondStep = (body: Record<string, unknown>, cookie?: string) =>
      rawPost(ctx, "/api/user/login/2fa", body, cookie);

    test("setup answers new-api's {secret, qr_code_data, backup_codes}; status reports progress, never the secret", async () => {
      const s = await ctx.user(1);
      expect((await ctx.request("GET", "/api/user/2fa/status", { as: s })).body).toEqual({
        success: true,
        message: "",
        data: { enabled: false, locked: false },
      });
      const setup = await ctx.request("POST", "/api/user/2fa/setup", { as: s });
      expect(Object.keys(setup.body.data).sort()).toEqual(["backup_codes", "qr_code_data", "secret"]);
      expect(setup.body.data.qr_code_data).toStartWith("otpauth://totp/");
      const wrong = await ctx.request("POST", "/api/user/2fa/enable", { as: s, body: { code: "12345" } });
      expect(wrong.body.success).toBe(false);
      await ctx.request("POST", "/api/user/2fa/enable", { as: s, body: { code: totpCode(setup.body.data.secret) } });
      const status = await ctx.request("GET", "/api/user/2fa/status", { as: s });
      expect(status.body.data).toEqual({ enabled: true, locked: false, backup_codes_remaining: 8 });
      for (const path of ["/api/user/2fa/status", "/api/user/self"]) {
        expect(JSON.stringify((await ctx.request("GET", path, { as: s })).body)).not.toContain(setup.body.data.secret);
      }
      expect((await ctx.request("GET", "/api/user/2fa/status")).status).toBe(401);
    });

    test("password login of a 2FA user answers require_2fa and no session; the code (flow_token) completes it once", async () => {
      const s = await ctx.user(1);
      const { secret } = await enable(s);
      const first = await passwordLogin(s.username, s.password);
      expect(first.body).toMatchObject({ success: true, data: { require_2fa: true } });
      expect(first.body.data.id).toBeUndefined();
      expect(typeof first.body.data.flow_token).toBe("string");
      expect(cookieNamed(first.cookies, "session")).toBeUndefined();
      expect(cookieNamed(first.cookies, "pending_2fa")).toBeDefined();
      const wrong = await secondStep({
        flow_token: first.body.data.flow_token,
        code: "000000" === totpCode(secret, Date.now() + STEP_MS) ? "111111" : "000000",
      });
      expect(wrong.body.success).toBe(false);
      const done = await secondStep({
        flow_token: first.body.data.flow_token,
        code: totpCode(secret, Date.now() + STEP_MS),
      });
      expect(done.body).toMatchObject({ success: true, data: { id: s.id, username: s.username } });
      expect(done.body.data.password).toBeUndefined();
      const session = sessionFrom(done, s.username);
      expect((await ctx.request("GET", "/api/user/self", { as: session })).body.data.id).toBe(s.id);
      // Spent: the same pending sign-in does not open a second session, even with a fresh backup code.
      const again = await secondStep({
        flow_token: first.body.data.flow_token,
        code: totpCode(secret, Date.now() + STEP_MS),
      });
      expect(again.body).toEqual({
        success: false,
        message: "the sign-in has expired, log in with your password again",
      });
    });

    test("new-api's console sends only the code: the pending cookie carries the sign-in; a backup code works", async () => {
      const s = await ctx.user(1);
      const { backup_codes } = await enable(s);
      const first = await passwordLogin(s.username, s.password);
      const done = await secondStep({ code: backup_codes[0] }, cookieNamed(first.cookies, "pending_2fa"));
      expect(done.body.success).toBe(true);
      expect(cookieNamed(done.cookies, "session")).toBeDefined();
      expect((await secondStep({ code: backup_codes[1] })).body.success).toBe(false);
    });

    test("a password change (or ban) between the two steps voids the pending sign-in", async () => {
      const s = await ctx.user(1);
      const { secret } = await enable(s);
      const first = await passwordLogin(s.username, s.password);
      await ctx.deps.db.updateTable("users").set({ session_version: 7 }).where("id", "=", s.id).execute();
      const done = await secondStep({
        flow_token: first.body.data.flow_token,
        code: totpCode(secret, Date.now() + STEP_MS),
      });
      expect(done.body.message).toBe("the sign-in has expired, log in with your password again");
    });

    test("disable needs a code; afterwards the password alone signs in", async () => {
      const s = await ctx.user(1);
      const { secret } = await enable(s);
      expect((await ctx.request("POST", "/api/user/2fa/disable", { as: s, body: { code: "" } })).body.success).toBe(
        false,
      );
      const off = await ctx.request("POST", "/api/user/2fa/disable", {
        as: s,
        body: { code: totpCode(secret, Date.now() + STEP_MS) },
      });
      expect(off.body.success).toBe(true);
      const login = await passwordLogin(s.username, s.password);
      expect(login.body.data.id).toBe(s.id);
    });

    test("backup codes regenerate with an authenticator code", async () => {
      const s = await ctx.user(1);
      const { secret, backup_codes } = await enable(s);
      const r = await ctx.request("POST", "/api/user/2fa/backup_codes", {
        as: s,
        body: { code: totpCode(secret, Date.now() + STEP_MS) },
      });
      expect(r.body.data.backup_codes).toHaveLength(8);
      expect(r.body.data.backup_codes).not.toContain(backup_codes[0]);
    });

    test("an admin turns off a lower user's 2FA (lost phone), not an equal's; stats count enabled users", async () => {
      const s = await ctx.user(1);
      await enable(s);
      const admin = await ctx.user(10);
      const otherAdmin = await ctx.user(10);
      await enable(otherAdmin);
      const stats = await ctx.request("GET", "/api/user/2fa/stats", { as: admin });
      expect(stats.body.data.enabled_users).toBeGreaterThanOrEqual(2);
      expect((await ctx.request("GET", "/api/user/2fa/stats", { as: s })).status).toBe(403);
      expect((await ctx.request("DELETE", `/api/user/${otherAdmin.id}/2fa`, { as: admin })).status).toBe(403);
      expect((await ctx.request("DELETE", `/api/user/${s.id}/2fa`, { as: admin })).body.success).toBe(true);
      expect((await ctx.request("GET", "/api/user/2fa/status", { as: s })).body.data.enabled).toBe(false);
    });

    test("POST /api/verify marks this session verified for five minutes (2fa or password), not other sessions", async () => {
      const s = await ctx.user(1);
      const { secret } = await enable(s);
      expect((await ctx.request("GET", "/api/verify/status", { as: s })).body.data).toEqual({ verified: false });
      const bad = await ctx.request("POST", "/api/verify", { as: s, body: { method: "2fa", code: "12x" } });
      expect(bad.body.success).toBe(false);
      const r = await ctx.request("POST", "/api/verify", {
        as: s,
        body: { method: "2fa", code: totpCode(secret, Date.now() + STEP_MS) },
      });
      expect(r.body).toMatchObject({ success: true, data: { verified: true } });
      expect(Math.abs(r.body.data.expires_at - (Date.now() / 1000 + 300))).toBeLessThan(5);
      expect((await ctx.request("GET", "/api/verify/status", { as: s })).body.data.verified).toBe(true);
      // The other session of the same user is a different cookie: not verified.
      const p = await ctx.user(1);
      expect((await ctx.request("GET", "/api/verify/status", { as: p })).body.data.verified).toBe(false);
      const wrongPw = await ctx.request("POST", "/api/verify", {
        as: p,
        body: { method: "password", password: "nope" },
      });
      expect(wrongPw.status).toBe(403);
      const pw = await ctx.request("POST", "/api/verify", {
        as: p,
        body: { method: "password", password: p.password },
      });
      expect(pw.body.data.verified).toBe(true);
      expect((await ctx.request("POST", "/api/verify", { as: p, body: { method: "passkey" } })).body.success).toBe(
        false,
      );
      expect((await ctx.request("POST", "/api/verify", { as: p, body: { method: "sms" } })).body.success).toBe(false);
      // Scripts with an access token have no session to mark.
      const token = (await ctx.request("GET", "/api/user/token", { as: p })).body.data;
      const viaToken = await ctx.request("POST", "/api/verify", {
        headers: { authorization: token },
        body: { method: "password", password: p.password },
      });
      expect(viaToken.status).toBe(403);
    });

    test("RootTwoFARequiredEnabled: a super admin without 2FA may only set it up, then signs in with a code", async () => {
      const opt = await ctx.request("PUT", "/api/option/", {
        as: await ctx.login("root", ROOT_PASSWORD),
        body: { key: "RootTwoFARequiredEnabled", value: "true" },
      });
      expect(opt.body.success).toBe(true);
      expect((await ctx.request("GET", "/api/status")).body.data.root_2fa_required).toBe(true);
      const login = await passwordLogin("root", ROOT_PASSWORD);
      expect(login.body.data).toMatchObject({ username: "root", require_2fa_setup: true });
      const root = sessionFrom(login, "root");
      const blocked = await ctx.request("GET", "/api/channel/", { as: root });
      expect(blocked.status).toBe(403);
      expect(blocked.body.code).toBe("TWO_FA_SETUP_REQUIRED");
      // Ordinary users are not affected.
      const u = await ctx.user(1);
      expect((await ctx.request("GET", "/api/token/", { as: u })).status).toBe(200);
      expect((await ctx.request("GET", "/api/user/self", { as: root })).body.success).toBe(true);
      const { secret } = await enable(root);
      expect((await ctx.request("GET", "/api/channel/", { as: root })).status).toBe(200);
      const next = await passwordLogin("root", ROOT_PASSWORD);
      expect(next.body.data.require_2fa).toBe(true);
      const done = await secondStep({
        flow_token: next.body.data.flow_token,
        code: totpCode(secret, Date.now() + STEP_MS),
      });
      expect(done.body.data.require_2fa_setup).toBeUndefined();
      expect((await ctx.request("GET", "/api/channel/", { as: sessionFrom(done, "root") })).status).toBe(200);
      await ctx.deps.options.set("RootTwoFARequiredEnabled", "false");
    });
  });
}
