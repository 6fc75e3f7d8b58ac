// Sessions are signed cookies, yet they can be ended: logout, a ban, a password or role change, or a
// deletion make every cookie issued before it useless, even a copy taken elsewhere.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, ROOT_PASSWORD, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { ROLE } from "../../server/catalogue/index.ts";

for (const kind of storageKinds()) {
  describe(`session revocation [${kind}]`, () => {
    let ctx: TestContext;
    let root: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      root = await ctx.login("root", ROOT_PASSWORD);
    });
    afterAll(() => ctx.close());

    const self = (s: Session) => ctx.request("GET", "/api/user/self", { as: s });
    const expectEnded = async (s: Session) => {
      const r = await self(s);
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ success: false, message: "the session has ended, please log in again" });
    };

    test("a copied cookie stops working once its owner logs out", async () => {
      const s = await ctx.user();
      const copy: Session = { ...s, headers: { ...s.headers } };
      expect((await self(copy)).status).toBe(200);
      expect((await ctx.request("GET", "/api/user/logout", { as: s })).body.success).toBe(true);
      await expectEnded(copy);
    });

    test("logout ends the account's other sessions too, and a new login works", async () => {
      const s = await ctx.user();
      const other = await ctx.login(s.username, s.password);
      await ctx.request("GET", "/api/user/logout", { as: s });
      await expectEnded(other);
      const again = await ctx.login(s.username, s.password);
      expect((await self(again)).status).toBe(200);
    });

    test("an ended session cannot use the playground either", async () => {
      const s = await ctx.user();
      await ctx.request("GET", "/api/user/logout", { as: s });
      const r = await ctx.request("POST", "/pg/chat/completions", {
        as: s,
        body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
      });
      expect(r.status).toBe(401);
    });

    test("a GET logout without the user-id header is refused and ends nothing", async () => {
      const s = await ctx.user();
      const r = await ctx.request("GET", "/api/user/logout", { headers: { cookie: s.cookie } });
      expect(r.status).toBe(401);
      expect((await self(s)).status).toBe(200);
    });

    test("logout with an expired or foreign cookie still succeeds", async () => {
      const r = await ctx.request("GET", "/api/user/logout", {
        headers: { cookie: "session=garbage", "New-Api-User": "1" },
      });
      expect(r.body.success).toBe(true);
    });

    test("disabling a user ends their sessions at once (401, so the console signs them out)", async () => {
      const s = await ctx.user();
      const r = await ctx.request("POST", "/api/user/manage", { as: root, body: { id: s.id, action: "disable" } });
      expect(r.body.success).toBe(true);
      await expectEnded(s);
      await ctx.request("POST", "/api/user/manage", { as: root, body: { id: s.id, action: "enable" } });
      await expectEnded(s);
      expect((await self(await ctx.login(s.username, s.password))).status).toBe(200);
    });

    test("deleting a user ends their sessions", async () => {
      const s = await ctx.user();
      await ctx.request("POST", "/api/user/manage", { as: root, body: { id: s.id, action: "delete" } });
      expect((await self(s)).status).toBe(401);
    });

    test("promote and demote end the target's sessions", async () => {
      const s = await ctx.user();
      await ctx.request("POST", "/api/user/manage", { as: root, body: { id: s.id, action: "promote" } });
      await expectEnded(s);
      const admin = await ctx.login(s.username, s.password);
      await ctx.request("POST", "/api/user/manage", { as: root, body: { id: s.id, action: "demote" } });
      await expectEnded(admin);
    });

    test("an admin changing a user's password or role ends their sessions; other edits do not", async () => {
      const s = await ctx.user();
      await ctx.request("PUT", "/api/user/", { as: root, body: { id: s.id, display_name: "Renamed", quota: 5 } });
      expect((await self(s)).status).toBe(200);
      await ctx.request("PUT", "/api/user/", { as: root, body: { id: s.id, password: "newpassword1" } });
      await expectEnded(s);
      const s2 = await ctx.login(s.username, "newpassword1");
      await ctx.request("PUT", "/api/user/", { as: root, body: { id: s.id, role: ROLE.admin } });
      await expectEnded(s2);
    });

    test("changing one's own password ends every other session but keeps the browser that did it", async () => {
      const s = await ctx.user();
      const elsewhere = await ctx.login(s.username, s.password);
      const r = await ctx.request("PUT", "/api/user/self", {
        as: s,
        body: { original_password: s.password, password: "another-pass1" },
      });
      expect(r.body.success).toBe(true);
      await expectEnded(elsewhere);
      await expectEnded(s);
      const renewed = (r.headers.get("set-cookie") ?? "").split(";")[0];
      expect(renewed).toMatch(/^session=./);
      const here: Session = { ...s, cookie: renewed, headers: { cookie: renewed, "New-Api-User": String(s.id) } };
      expect((await self(here)).status).toBe(200);
    });

    test("the super admin changing their own password in the user editor keeps the browser that did it", async () => {
      const me = await ctx.login("root", ROOT_PASSWORD);
      const elsewhere = await ctx.login("root", ROOT_PASSWORD);
      const r = await ctx.request("PUT", "/api/user/", { as: me, body: { id: me.id, password: "rootpass999" } });
      expect(r.body.success).toBe(true);
      await expectEnded(elsewhere);
      const renewed = (r.headers.get("set-cookie") ?? "").split(";")[0];
      expect(renewed).toMatch(/^session=./);
      expect(
        (await self({ ...me, cookie: renewed, headers: { cookie: renewed, "New-Api-User": String(me.id) } })).status,
      ).toBe(200);
      await ctx.request("PUT", "/api/user/", {
        as: { ...me, headers: { cookie: renewed, "New-Api-User": String(me.id) } },
        body: { id: me.id, password: ROOT_PASSWORD },
      });
      root = await ctx.login("root", ROOT_PASSWORD);
    });

    test("editing one's profile without a password change keeps the session and sets no cookie", async () => {
      const s = await ctx.user();
      const r = await ctx.request("PUT", "/api/user/self", { as: s, body: { display_name: "Still me" } });
      expect(r.body.success).toBe(true);
      expect(r.headers.get("set-cookie")).toBeNull();
      expect((await self(s)).status).toBe(200);
    });

    test("the system access token is not a session: logout does not revoke it", async () => {
      const s = await ctx.user();
      const token = (await ctx.request("GET", "/api/user/token", { as: s })).body.data;
      await ctx.request("GET", "/api/user/logout", { as: s });
      expect((await ctx.request("GET", "/api/user/self", { headers: { Authorization: token } })).status).toBe(200);
    });

    test("the session counter is not part of the user record clients see", async () => {
      const s = await ctx.user();
      expect((await self(s)).body.data).not.toHaveProperty("session_version");
    });
  });
}

describe("cookies signed before session versions existed", () => {
  test("still work for a user whose sessions were never ended, and stop once they are", async () => {
    const { SignJWT } = await import("jose");
    const ctx = await testContext();
    try {
      const s = await ctx.user();
      const legacy = await new SignJWT({ id: s.id })
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime("1h")
        .sign(new TextEncoder().encode(ctx.deps.config.sessionSecret));
      const as: Session = {
        ...s,
        cookie: `session=${legacy}`,
        headers: { cookie: `session=${legacy}`, "New-Api-User": String(s.id) },
      };
      expect((await ctx.request("GET", "/api/user/self", { as })).status).toBe(200);
      await ctx.request("GET", "/api/user/logout", { as: s });
      expect((await ctx.request("GET", "/api/user/self", { as })).status).toBe(401);
    } finally {
      await ctx.close();
    }
  });
});
