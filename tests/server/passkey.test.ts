// Passkeys end to end against a software authenticator (ES256, "none" attestation): registration by a
// signed-in user, sign-in without a username, secure verification for the channel key, and the refusals
// (disabled, replayed, wrong origin, another user's passkey, a deleted passkey).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { cookieNamed, rawPost, sessionOf } from "../helpers/twofa.ts";
import { SoftAuthenticator } from "../helpers/webauthn.ts";

for (const kind of storageKinds()) {
  describe(`passkeys [${kind}]`, () => {
    let ctx: TestContext;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      await ctx.deps.options.set("passkey.enabled", "true");
    });
    afterAll(() => ctx.close());

    /** Registers a new software passkey for the user through begin/finish. */
    const register = async (s: Session, auth = new SoftAuthenticator()) => {
      const begin = await ctx.request("POST", "/api/user/passkey/register/begin", { as: s });
      expect(begin.body.success).toBe(true);
      const finish = await ctx.request("POST", "/api/user/passkey/register/finish", {
        as: s,
        body: auth.register(begin.body.data.options.publicKey),
      });
      expect(finish.body).toEqual({ success: true, message: "passkey registered" });
      return auth;
    };
    /** The whole sign-in: begin (flow cookie), the authenticator's assertion, finish. */
    const passkeyLogin = async (auth: SoftAuthenticator, tamper: (a: any) => any = (a) => a) => {
      const begin = await rawPost(ctx, "/api/user/passkey/login/begin", {});
      const flow = cookieNamed(begin.cookies, "passkey_flow");
      return {
        begin,
        flow,
        finish: await rawPost(
          ctx,
          "/api/user/passkey/login/finish",
          tamper(auth.assert(begin.body.data.options.publicKey)),
          flow,
        ),
      };
    };

    test("registration options follow new-api: {options: {publicKey}}, discoverable, the user handle is the decimal id", async () => {
      const s = await ctx.user(1);
      const begin = await ctx.request("POST", "/api/user/passkey/register/begin", { as: s });
      const pk = begin.body.data.options.publicKey;
      expect(pk.rp).toEqual({ name: "Switchyard", id: "localhost" });
      expect(Buffer.from(pk.user.id, "base64url").toString()).toBe(String(s.id));
      expect(pk.user.name).toBe(s.username);
      expect(pk.authenticatorSelection).toMatchObject({ residentKey: "required", userVerification: "preferred" });
      expect(pk.attestation).toBe("none");
    });

    test("register, list, then sign in with the passkey alone; the row is in new-api's layout", async () => {
      const s = await ctx.user(1);
      const auth = await register(s);
      const row = await ctx.deps.db
        .selectFrom("passkey_credentials")
        .selectAll()
        .where("user_id", "=", s.id)
        .executeTakeFirstOrThrow();
      expect(row.credential_id).toBe(auth.credentialId.toString("base64"));
      expect(Buffer.from(row.public_key, "base64")[0] >> 5).toBe(5); // a CBOR map: the COSE key
      expect(row).toMatchObject({
        attestation_type: "none",
        sign_count: 0,
        transports: '["internal"]',
        attachment: "platform",
      });
      expect(Boolean(row.backup_eligible)).toBe(true);
      const status = await ctx.request("GET", "/api/user/passkey", { as: s });
      expect(status.body.data).toMatchObject({ enabled: true, last_used_at: null });
      expect(status.body.data.passkeys).toHaveLength(1);

      const { flow, finish } = await passkeyLogin(auth);
      expect(flow).toBeDefined();
      expect(finish.body).toMatchObject({ success: true, data: { id: s.id, username: s.username } });
      const session = sessionOf(finish, s.username);
      expect((await ctx.request("GET", "/api/user/self", { as: session })).body.data.id).toBe(s.id);
      const used = await ctx.deps.db
        .selectFrom("passkey_credentials")
        .selectAll()
        .where("id", "=", row.id)
        .executeTakeFirstOrThrow();
      expect(used.sign_count).toBe(1);
      expect(used.last_used_at).not.toBeNull();
      expect((await ctx.request("GET", "/api/user/passkey", { as: s })).body.data.last_used_at).not.toBeNull();
    });

    test("a challenge is used once: replaying the same assertion, or finishing without the flow cookie, is refused", async () => {
      const s = await ctx.user(1);
      const auth = await register(s);
      const begin = await rawPost(ctx, "/api/user/passkey/login/begin", {});
      const flow = cookieNamed(begin.cookies, "passkey_flow");
      const assertion = auth.assert(begin.body.data.options.publicKey);
      expect((await rawPost(ctx, "/api/user/passkey/login/finish", assertion)).body.success).toBe(false);
      expect((await rawPost(ctx, "/api/user/passkey/login/finish", assertion, flow)).body.success).toBe(true);
      const replay = await rawPost(ctx, "/api/user/passkey/login/finish", assertion, flow);
      expect(replay.body).toEqual({ success: false, message: "the passkey request has expired, start again" });
    });

    test("a signature counter that goes backwards (a cloned authenticator) is refused", async () => {
      const s = await ctx.user(1);
      const auth = await register(s);
      expect((await passkeyLogin(auth)).finish.body.success).toBe(true);
      expect((await passkeyLogin(auth)).finish.body.success).toBe(true);
      auth.counter = 0;
      const clone = await passkeyLogin(auth);
      expect(clone.finish.body.success).toBe(false);
      expect(cookieNamed(clone.finish.cookies, "session")).toBeUndefined();
    });

    test("refused: a wrong origin, a forged signature, an unknown credential, a user handle of someone else", async () => {
      const s = await ctx.user(1);
      const auth = await register(s);
      const begin = await rawPost(ctx, "/api/user/passkey/login/begin", {});
      const wrongOrigin = await rawPost(
        ctx,
        "/api/user/passkey/login/finish",
        auth.assert(begin.body.data.options.publicKey, { origin: "https://evil.example" }),
        cookieNamed(begin.cookies, "passkey_flow"),
      );
      expect(wrongOrigin.body.success).toBe(false);
      expect(wrongOrigin.body.message).toContain("the passkey could not be verified");
      const forged = await passkeyLogin(auth, (a) => ({
        ...a,
        response: { ...a.response, signature: Buffer.alloc(70, 1).toString("base64url") },
      }));
      expect(forged.finish.body.success).toBe(false);
      expect(cookieNamed(forged.finish.cookies, "session")).toBeUndefined();
      const stranger = await passkeyLogin(new SoftAuthenticator());
      expect(stranger.finish.body.message).toBe("this passkey is not registered here");
      const other = await ctx.user(1);
      const handle = await passkeyLogin(auth, (a) => ({
        ...a,
        response: { ...a.response, userHandle: Buffer.from(String(other.id)).toString("base64url") },
      }));
      expect(handle.finish.body.success).toBe(false);
    });

    test("a banned user's passkey does not sign in; a deleted passkey no longer works", async () => {
      const s = await ctx.user(1);
      const auth = await register(s);
      await ctx.deps.db.updateTable("users").set({ status: 2 }).where("id", "=", s.id).execute();
      expect((await passkeyLogin(auth)).finish.body.success).toBe(false);
      await ctx.deps.db.updateTable("users").set({ status: 1 }).where("id", "=", s.id).execute();
      const session = sessionOf((await passkeyLogin(auth)).finish, s.username);
      expect((await ctx.request("DELETE", "/api/user/passkey", { as: session })).body.success).toBe(true);
      expect((await ctx.request("GET", "/api/user/passkey", { as: session })).body.data).toMatchObject({
        enabled: false,
        passkeys: [],
      });
      expect((await passkeyLogin(auth)).finish.body.message).toBe("this passkey is not registered here");
    });

    test("the same authenticator cannot be registered twice; an admin resets a lower user's passkeys", async () => {
      const s = await ctx.user(1);
      const auth = await register(s);
      const begin = await ctx.request("POST", "/api/user/passkey/register/begin", { as: s });
      expect(begin.body.data.options.publicKey.excludeCredentials.map((c: any) => c.id)).toEqual([auth.id]);
      const again = await ctx.request("POST", "/api/user/passkey/register/finish", {
        as: s,
        body: auth.register(begin.body.data.options.publicKey),
      });
      expect(again.body.message).toBe("this passkey is already registered");
      const admin = await ctx.user(10);
      expect((await ctx.request("DELETE", `/api/user/${s.id}/reset_passkey`, { as: admin })).body.success).toBe(true);
      expect(
        (await ctx.request("DELETE", `/api/user/${admin.id}/reset_passkey`, { as: await ctx.user(10) })).status,
      ).toBe(403);
    });

    test("with passkey.enabled off, begin is refused; an http origin other than localhost needs allow_insecure_origin", async () => {
      const s = await ctx.user(1);
      await ctx.deps.options.set("passkey.enabled", "false");
      expect((await ctx.request("POST", "/api/user/passkey/register/begin", { as: s })).status).toBe(403);
      expect((await rawPost(ctx, "/api/user/passkey/login/begin", {})).body.message).toBe(
        "passkey sign-in is not enabled by the administrator",
      );
      await ctx.deps.options.set("passkey.enabled", "true");
      await ctx.deps.options.set("passkey.origins", "http://gw.example.com");
      expect((await ctx.request("POST", "/api/user/passkey/register/begin", { as: s })).body.message).toContain(
        "passkeys need HTTPS",
      );
      await ctx.deps.options.set("passkey.allow_insecure_origin", "true");
      const ok = await ctx.request("POST", "/api/user/passkey/register/begin", { as: s });
      expect(ok.body.data.options.publicKey.rp.id).toBe("gw.example.com");
      // ServerAddress names the origin when passkey.origins is empty; passkey.rp_id overrides the id.
      await ctx.deps.options.set("passkey.origins", "");
      await ctx.deps.options.set("ServerAddress", "https://console.example.org");
      await ctx.deps.options.set("passkey.rp_id", "example.org");
      const auth = new SoftAuthenticator("https://console.example.org");
      const begin = await ctx.request("POST", "/api/user/passkey/register/begin", { as: s });
      expect(begin.body.data.options.publicKey.rp.id).toBe("example.org");
      expect(
        (
          await ctx.request("POST", "/api/user/passkey/register/finish", {
            as: s,
            body: auth.register(begin.body.data.options.publicKey),
          })
        ).body.success,
      ).toBe(true);
      for (const [k, v] of [
        ["ServerAddress", ""],
        ["passkey.rp_id", ""],
        ["passkey.allow_insecure_origin", "false"],
      ])
        await ctx.deps.options.set(k, v);
    });

    test("passkey.* options are validated as new-api's console sends them", async () => {
      const root = await ctx.login("root", ROOT_PASSWORD);
      const put = (key: string, value: string) =>
        ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });
      expect((await put("passkey.user_verification", "always")).body.success).toBe(false);
      expect((await put("passkey.attachment_preference", "usb")).body.success).toBe(false);
      expect((await put("passkey.origins", "https://a.example.com/path")).body.success).toBe(false);
      expect((await put("passkey.rp_id", "https://example.com")).body.success).toBe(false);
      expect((await put("passkey.allow_insecure_origin", "yes")).body.success).toBe(false);
      expect((await put("passkey.origins", "https://a.example.com,\nhttps://b.example.com/")).body.success).toBe(true);
      expect(ctx.deps.options.get("passkey.origins")).toBe("https://a.example.com,https://b.example.com");
      expect((await put("passkey.user_verification", "required")).body.success).toBe(true);
      expect((await ctx.request("GET", "/api/status")).body.data).toMatchObject({
        passkey_login: true,
        passkey_user_verification: "required",
      });
      await put("passkey.origins", "");
      await put("passkey.user_verification", "preferred");
    });

    test("secure verification with a passkey: verify/begin → finish → /api/verify {method: passkey} opens the channel key", async () => {
      const root = await ctx.login("root", ROOT_PASSWORD);
      const auth = await register(root);
      const ch = await ctx.request("POST", "/api/channel/", {
        as: root,
        body: { type: 1, name: "pk-ch", key: "sk-pk-secret", models: "gpt-4o" },
      });
      const id = ch.body.data.ids[0];
      expect((await ctx.request("POST", "/api/verify", { as: root, body: { method: "passkey" } })).body.message).toBe(
        "complete the passkey check first",
      );
      const begin = await ctx.request("POST", "/api/user/passkey/verify/begin", { as: root });
      expect(begin.body.data.options.publicKey.allowCredentials.map((c: any) => c.id)).toEqual([auth.id]);
      // Another user's passkey does not verify the super admin.
      const other = await register(await ctx.user(1));
      expect(
        (
          await ctx.request("POST", "/api/user/passkey/verify/finish", {
            as: root,
            body: other.assert(begin.body.data.options.publicKey),
          })
        ).body.success,
      ).toBe(false);
      const again = await ctx.request("POST", "/api/user/passkey/verify/begin", { as: root });
      const finish = await ctx.request("POST", "/api/user/passkey/verify/finish", {
        as: root,
        body: auth.assert(again.body.data.options.publicKey),
      });
      expect(finish.body.success).toBe(true);
      expect((await ctx.request("POST", `/api/channel/${id}/key`, { as: root })).body.code).toBe(
        "VERIFICATION_REQUIRED",
      );
      expect(
        (await ctx.request("POST", "/api/verify", { as: root, body: { method: "passkey" } })).body.data.verified,
      ).toBe(true);
      expect((await ctx.request("POST", `/api/channel/${id}/key`, { as: root })).body.data).toEqual({
        key: "sk-pk-secret",
      });
      // The passkey mark converts once.
      expect((await ctx.request("POST", "/api/verify", { as: root, body: { method: "passkey" } })).body.success).toBe(
        false,
      );
    });
  });
}
