import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin, renewSession } from "../../http/auth.ts";
import { ok, paging } from "../../http/envelope.ts";
import { DEFAULT_GROUP, ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import * as m from "./model.ts";
import { publicUser } from "./view.ts";
import { withLeased } from "./balance.ts";
import { anyReply, envelope, loose, okReply } from "../../http/schema.ts";
import { usableGroups } from "../../relay/lists.ts";

export function userModule(deps: AppDeps) {
  return (
    new Elysia({ prefix: "/api", tags: ["user"] })
      .use(authPlugin(deps))
      // ---- self ----
      .get("/user/self", async ({ user }) => ok(publicUser((await withLeased(deps, [user]))[0])), {
        role: ROLE.common,
        detail: { summary: "The caller's account" },
        response: m.userReply,
      })
      .put(
        "/user/self",
        async ({ user, body, sessionJwt, cookie, request }) => {
          await svc.updateSelf(deps, user, body);
          // A new password ended every session of the account; this browser signs in again.
          if (body.password) await renewSession(deps, sessionJwt, cookie, request);
          return ok();
        },
        {
          role: ROLE.common,
          body: m.updateSelfBody,
          detail: { summary: "Update the caller's profile or password" },
          response: okReply,
        },
      )
      .delete(
        "/user/self",
        async ({ user, cookie }) => {
          await svc.deleteSelf(deps, user);
          cookie.session?.remove();
          return ok(undefined, "account deleted");
        },
        { role: ROLE.common, detail: { summary: "Delete the caller's account" }, response: okReply },
      )
      .get("/user/token", async ({ user }) => ok(await svc.generateAccessToken(deps, user)), {
        role: ROLE.common,
        detail: { summary: "Generate a new system access token" },
        response: m.stringReply("a new system access token (the previous one stops working)"),
      })
      .get("/user/aff", async ({ user }) => ok(await svc.affCode(deps, user)), {
        role: ROLE.common,
        detail: { summary: "The caller's invitation code" },
        response: m.stringReply("the caller's invitation code"),
      })
      .post(
        "/user/aff_transfer",
        async ({ user, body }) => {
          await svc.affTransfer(deps, user, body.quota);
          return ok(undefined, "transferred");
        },
        {
          role: ROLE.common,
          body: m.affTransferBody,
          detail: { summary: "Move invitation earnings to the balance" },
          response: okReply,
        },
      )
      .put(
        "/user/setting",
        async ({ user, body }) => ok(await svc.updateSetting(deps, user, body as any), "settings updated"),
        {
          role: ROLE.common,
          body: m.settingBody,
          detail: { summary: "Update the caller's notification and pricing settings" },
          response: okReply,
        },
      )
      // new-api's pricing and token pages: the groups the caller may use (a guest: those of the default group)
      .get("/user/groups", ({ viewer }) => ok(usableGroups(deps, viewer?.group ?? DEFAULT_GROUP)), {
        viewer: true,
        detail: { summary: "The groups the caller may use, with their ratio" },
        response: envelope(loose({}, { description: "group name → {desc, ratio}" })),
      })
      // ---- administration ----
      .get("/user/", async ({ query }) => ok(await svc.listUsers(deps, paging(query))), {
        role: ROLE.admin,
        query: m.listQuery,
        detail: { summary: "List users (one page)" },
        response: m.userPage,
      })
      .get(
        "/user/search",
        async ({ query }) =>
          ok(await svc.listUsers(deps, { ...paging(query), keyword: query.keyword, group: query.group })),
        {
          role: ROLE.admin,
          query: m.listQuery,
          detail: { summary: "Search users by keyword or group" },
          response: m.userPage,
        },
      )
      .post(
        "/user/",
        async ({ user, body }) => {
          await svc.createUser(deps, user, body as svc.CreateUserInput);
          return ok(undefined, "user created");
        },
        { role: ROLE.admin, body: m.createUserBody, detail: { summary: "Create a user" }, response: okReply },
      )
      .put(
        "/user/",
        async ({ user, body, sessionJwt, cookie, request }) => {
          await svc.updateUser(deps, user, body);
          // The super admin may edit their own row here; a new password must not sign out this browser.
          if (body.password && body.id === user.id) await renewSession(deps, sessionJwt, cookie, request);
          return ok();
        },
        { role: ROLE.admin, body: m.updateUserBody, detail: { summary: "Update a user" }, response: okReply },
      )
      .post("/user/manage", async ({ user, body }) => ok(await svc.manageUser(deps, user, body.id, body.action)), {
        role: ROLE.admin,
        body: m.manageBody,
        detail: { summary: "Promote, demote, disable, enable or delete a user" },
        response: anyReply,
      })
      .get("/user/:id", async ({ user, params }) => ok(await svc.getUserAsAdmin(deps, user, params.id)), {
        role: ROLE.admin,
        params: m.idParam,
        detail: { summary: "One user" },
        response: m.userReply,
      })
      .delete("/user/:id", async ({ user, params }) => ok(await svc.manageUser(deps, user, params.id, "delete")), {
        role: ROLE.admin,
        params: m.idParam,
        detail: { summary: "Delete a user" },
        response: anyReply,
      })
  );
}
