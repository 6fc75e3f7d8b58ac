import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin, renewSession } from "../../http/auth.ts";
import { ok, paging } from "../../http/envelope.ts";
import { ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import * as m from "./model.ts";
import { publicUser } from "./view.ts";

export function userModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api" })
    .use(authPlugin(deps))
    // ---- self ----
    .get("/user/self", ({ user }) => ok(publicUser(user)), { role: ROLE.common })
    .put("/user/self", async ({ user, body, sessionJwt, cookie, request }) => {
      await svc.updateSelf(deps, user, body);
      // A new password ended every session of the account; this browser signs in again.
      if (body.password) await renewSession(deps, sessionJwt, cookie, request);
      return ok();
    }, { role: ROLE.common, body: m.updateSelfBody })
    .delete("/user/self", async ({ user, cookie }) => {
      await svc.deleteSelf(deps, user);
      cookie.session?.remove();
      return ok(undefined, "account deleted");
    }, { role: ROLE.common })
    .get("/user/token", async ({ user }) => ok(await svc.generateAccessToken(deps, user)), { role: ROLE.common })
    .get("/user/aff", async ({ user }) => ok(await svc.affCode(deps, user)), { role: ROLE.common })
    .post("/user/aff_transfer", async ({ user, body }) => {
      await svc.affTransfer(deps, user, body.quota);
      return ok(undefined, "transferred");
    }, { role: ROLE.common, body: m.affTransferBody })
    .put("/user/setting", async ({ user, body }) => ok(await svc.updateSetting(deps, user, body as any), "settings updated"), {
      role: ROLE.common, body: m.settingBody,
    })
    // ---- administration ----
    .get("/user/", ({ query }) => svc.listUsers(deps, paging(query)).then(ok), { role: ROLE.admin, query: m.listQuery })
    .get("/user/search", ({ query }) => svc.listUsers(deps, { ...paging(query), keyword: query.keyword, group: query.group }).then(ok), {
      role: ROLE.admin, query: m.listQuery,
    })
    .post("/user/", async ({ user, body }) => {
      await svc.createUser(deps, user, body as svc.CreateUserInput);
      return ok(undefined, "user created");
    }, { role: ROLE.admin, body: m.createUserBody })
    .put("/user/", async ({ user, body, sessionJwt, cookie, request }) => {
      await svc.updateUser(deps, user, body);
      // The super admin may edit their own row here; a new password must not sign out this browser.
      if (body.password && body.id === user.id) await renewSession(deps, sessionJwt, cookie, request);
      return ok();
    }, { role: ROLE.admin, body: m.updateUserBody })
    .post("/user/manage", async ({ user, body }) => ok(await svc.manageUser(deps, user, body.id, body.action)), {
      role: ROLE.admin, body: m.manageBody,
    })
    .get("/user/:id", async ({ user, params }) => ok(await svc.getUserAsAdmin(deps, user, params.id)), { role: ROLE.admin, params: m.idParam })
    .delete("/user/:id", async ({ user, params }) => ok(await svc.manageUser(deps, user, params.id, "delete")), {
      role: ROLE.admin, params: m.idParam,
    });
}
