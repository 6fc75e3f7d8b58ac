// The setup wizard holds the super admin to the same account rules as every other account.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { testContext, type TestContext } from "../helpers/app.ts";
import { PASSWORD_MAX_LENGTH, USERNAME_MAX_LENGTH } from "../../server/catalogue/index.ts";

let ctx: TestContext;
beforeAll(async () => (ctx = await testContext({ setup: false })));
afterAll(() => ctx.close());

test("the root password and username have the register limits; nothing is written on failure", async () => {
  const long = "p".repeat(PASSWORD_MAX_LENGTH + 1);
  const r = await ctx.request("POST", "/api/setup", {
    body: { username: "root", password: long, confirmPassword: long },
  });
  expect(r.body).toEqual({ success: false, message: `password length must not be more than ${PASSWORD_MAX_LENGTH}` });
  const name = "n".repeat(USERNAME_MAX_LENGTH + 1);
  const r2 = await ctx.request("POST", "/api/setup", {
    body: { username: name, password: "password1", confirmPassword: "password1" },
  });
  expect(r2.body).toEqual({ success: false, message: `username must be at most ${USERNAME_MAX_LENGTH} characters` });
  expect(await ctx.deps.db.selectFrom("users").selectAll().execute()).toHaveLength(0);
  const max = "p".repeat(PASSWORD_MAX_LENGTH);
  const ok = await ctx.request("POST", "/api/setup", {
    body: { username: "root", password: max, confirmPassword: max },
  });
  expect(ok.body.success).toBe(true);
});
