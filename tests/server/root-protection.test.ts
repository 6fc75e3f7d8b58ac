// Spec 000 §6: the super admin cannot be disabled, deleted or demoted — through any route, including
// the user editor (PUT /api/user/), where the super admin may edit their own row.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { testContext, ROOT_PASSWORD, type Session, type TestContext } from "../helpers/app.ts";
import { ROLE } from "../../server/catalogue/index.ts";

let ctx: TestContext;
let root: Session;
beforeAll(async () => {
  ctx = await testContext();
  root = await ctx.login("root", ROOT_PASSWORD);
});
afterAll(() => ctx.close());

test("the user editor cannot lower the super admin's role, not even their own", async () => {
  for (const role of [ROLE.admin, ROLE.common]) {
    const r = await ctx.request("PUT", "/api/user/", { as: root, body: { id: root.id, role } });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ success: false, message: "the super admin cannot be disabled, deleted or demoted" });
  }
  const row = await ctx.deps.db.selectFrom("users").select("role").where("id", "=", root.id).executeTakeFirstOrThrow();
  expect(row.role).toBe(ROLE.root);
});

test("other edits of the super admin's own row still work", async () => {
  const r = await ctx.request("PUT", "/api/user/", {
    as: root,
    body: { id: root.id, display_name: "The Root", role: ROLE.root },
  });
  expect(r.body.success).toBe(true);
});
