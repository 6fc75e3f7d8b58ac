// Channel keys are read only by the super admin, through POST /api/channel/{id}/key after a fresh proof,
// and every view is logged (type 3, naming the channel, never the key). No other read returns a key.
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { totpCode } from "../../server/modules/twofa/totp.ts";
import { signInWithCode } from "../helpers/twofa.ts";

// Setting up two-factor sign-in hashes 8 bcrypt backup codes (~0.5 s); the shared machine can be slow.
setDefaultTimeout(20_000);

const SECRET_KEY = "sk-live-very-secret-0123456789";
const STEP_MS = 30_000;

for (const kind of storageKinds()) {
  describe(`channel key view [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let root: Session;
    let channelId: number;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      admin = await ctx.user(10);
      root = await ctx.login("root", ROOT_PASSWORD);
      const r = await ctx.request("POST", "/api/channel/", {
        as: admin,
        body: { type: 1, name: "prod-openai", key: SECRET_KEY, models: "gpt-4o", group: "default" },
      });
      channelId = r.body.data.ids[0];
    });
    afterAll(() => ctx.close());

    const view = (as: Session | null, body?: unknown) =>
      ctx.request("POST", `/api/channel/${channelId}/key`, { as, body });
    const manageLogs = () => ctx.deps.db.selectFrom("logs").selectAll().where("type", "=", 3).orderBy("id").execute();

    test("no channel read returns the key: the single read sends it empty, lists and searches leave it out", async () => {
      for (const who of [admin, root]) {
        const one = await ctx.request("GET", `/api/channel/${channelId}`, { as: who });
        expect(one.body.data.key).toBe("");
        expect(one.body.data.key_count).toBe(1);
        for (const path of [
          `/api/channel/${channelId}`,
          "/api/channel/?p=1&page_size=100",
          "/api/channel/?tag_mode=true",
          "/api/channel/search?keyword=prod",
        ]) {
          expect(JSON.stringify((await ctx.request("GET", path, { as: who })).body)).not.toContain(SECRET_KEY);
        }
      }
      const edited = await ctx.request("PUT", "/api/channel/", {
        as: admin,
        body: { id: channelId, name: "prod-openai" },
      });
      expect(JSON.stringify(edited.body)).not.toContain(SECRET_KEY);
      // Saving the form with the empty key keeps the stored one.
      await ctx.request("PUT", "/api/channel/", { as: admin, body: { id: channelId, key: "", name: "prod-openai" } });
      expect(
        (await ctx.deps.db.selectFrom("channels").select("key").where("id", "=", channelId).executeTakeFirstOrThrow())
          .key,
      ).toBe(SECRET_KEY);
    });

    test("an admin (role 10), a user and a guest are refused", async () => {
      const asAdmin = await view(admin, { password: admin.password });
      expect(asAdmin.status).toBe(403);
      expect(asAdmin.body).toEqual({ success: false, message: "only the super admin can do this" });
      expect((await view(await ctx.user(1), {})).status).toBe(403);
      expect((await view(null, {})).status).toBe(401);
      expect(await manageLogs()).toEqual([]);
    });

    test("the super admin without a proof is asked for one (VERIFICATION_REQUIRED); a wrong password is refused and logs nothing", async () => {
      const none = await view(root);
      expect(none.status).toBe(403);
      expect(none.body).toMatchObject({ success: false, code: "VERIFICATION_REQUIRED" });
      const wrong = await view(root, { password: "not-the-password" });
      expect(wrong.status).toBe(403);
      expect(wrong.body).toEqual({ success: false, message: "the password is wrong" });
      expect(JSON.stringify(wrong.body)).not.toContain(SECRET_KEY);
      // A code means nothing while the super admin has no 2FA.
      expect((await view(root, { code: "123456" })).body.code).toBe("VERIFICATION_REQUIRED");
      expect(await manageLogs()).toEqual([]);
    });

    test("the right password answers the key and writes a manage log naming the channel, not the key", async () => {
      const r = await view(root, { password: ROOT_PASSWORD });
      expect(r.body).toEqual({ success: true, message: "", data: { key: SECRET_KEY } });
      const logs = await manageLogs();
      expect(logs).toHaveLength(1);
      expect(logs[0]).toMatchObject({ type: 3, user_id: root.id, username: "root", channel_id: channelId });
      expect(logs[0].content).toContain(`#${channelId}`);
      expect(logs[0].content).toContain("prod-openai");
      expect(logs[0].content).not.toContain(SECRET_KEY);
      // Each view is its own entry; an unknown channel answers 404 and logs nothing.
      expect((await view(root, { password: ROOT_PASSWORD })).body.success).toBe(true);
      expect(
        (await ctx.request("POST", "/api/channel/999999/key", { as: root, body: { password: ROOT_PASSWORD } })).status,
      ).toBe(404);
      expect(await manageLogs()).toHaveLength(2);
      // The admin's log page shows it.
      const page = await ctx.request("GET", "/api/log/?type=3&p=1&page_size=10", { as: root });
      expect(page.body.data.items.length).toBeGreaterThanOrEqual(2);
    });

    test("with 2FA: a TOTP code in the body, or a secure verification of this session moments before", async () => {
      const setup = await ctx.request("POST", "/api/user/2fa/setup", { as: root });
      const secret = setup.body.data.secret;
      await ctx.request("POST", "/api/user/2fa/enable", { as: root, body: { code: totpCode(secret) } });
      const rootTwo = await signInWithCode(ctx, "root", ROOT_PASSWORD, totpCode(secret, Date.now() + STEP_MS));

      const badCode = await view(rootTwo, {
        code: "000000" === totpCode(secret, Date.now() - STEP_MS) ? "111111" : "000000",
      });
      expect(badCode.body.success).toBe(false);
      expect(badCode.body.data).toBeUndefined();
      // A code already spent (the sign-in's) is refused too.
      expect((await view(rootTwo, { code: totpCode(secret, Date.now() + STEP_MS) })).body.success).toBe(false);
      const before = (await manageLogs()).length;
      const setupCodes = setup.body.data.backup_codes as string[];
      const withBackup = await view(rootTwo, { code: setupCodes[0] });
      expect(withBackup.body.data.key).toBe(SECRET_KEY);

      expect((await view(rootTwo)).body.code).toBe("VERIFICATION_REQUIRED");
      const verified = await ctx.request("POST", "/api/verify", {
        as: rootTwo,
        body: { method: "2fa", code: setupCodes[1] },
      });
      expect(verified.body.data.verified).toBe(true);
      expect((await view(rootTwo)).body.data.key).toBe(SECRET_KEY);
      // Another session of the super admin is not verified by this one's check.
      const other = await view(root);
      expect([other.status, other.body.code, root.cookie === rootTwo.cookie]).toEqual([
        403,
        "VERIFICATION_REQUIRED",
        false,
      ]);
      expect((await manageLogs()).length).toBe(before + 2);
    });

    test("copying a channel happens on the server, key included; the copy's key is not sent back", async () => {
      const r = await ctx.request("POST", `/api/channel/copy/${channelId}?suffix=_copy`, { as: admin });
      expect(r.body.success).toBe(true);
      const copy = await ctx.deps.db
        .selectFrom("channels")
        .selectAll()
        .where("id", "=", r.body.data.id)
        .executeTakeFirstOrThrow();
      expect(copy).toMatchObject({ name: "prod-openai_copy", key: SECRET_KEY, models: "gpt-4o", used_quota: 0 });
      expect(JSON.stringify(r.body)).not.toContain(SECRET_KEY);
      const abilities = await ctx.deps.db
        .selectFrom("abilities")
        .selectAll()
        .where("channel_id", "=", copy.id)
        .execute();
      expect(abilities.map((a) => `${a.group}/${a.model}`)).toEqual(["default/gpt-4o"]);
      expect((await ctx.request("POST", `/api/channel/copy/${channelId}`, { as: await ctx.user(1) })).status).toBe(403);
    });
  });
}
