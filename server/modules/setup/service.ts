// First-run setup (spec 000 §2.5, §7.4): create the super admin once and choose the usage mode.
import type { AppDeps } from "../../deps.ts";
import { nowSeconds } from "../../../db/index.ts";
import { VERSION } from "../../config.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import { DEFAULT_GROUP, ROLE, USER_STATUS } from "../../catalogue/index.ts";
import { hashPassword } from "../user/password.ts";
import { checkPassword, creationTimes } from "../user/service.ts";
import { chosenUsername } from "../user/username.ts";
import { randomString } from "../../infra/random.ts";

export async function setupStatus(deps: AppDeps) {
  const done = !!(await deps.db.selectFrom("setups").select("id").limit(1).executeTakeFirst());
  const root = await deps.db
    .selectFrom("users")
    .select("id")
    .where("role", ">=", ROLE.root)
    .limit(1)
    .executeTakeFirst();
  return {
    status: done,
    root_init: !!root,
    database_type: deps.config.database.kind === "postgres" ? "postgres" : deps.config.database.kind,
  };
}

export interface SetupInput {
  username?: string;
  password?: string;
  confirmPassword?: string;
  SelfUseModeEnabled?: boolean;
  DemoSiteEnabled?: boolean;
}

export async function runSetup(deps: AppDeps, input: SetupInput): Promise<void> {
  const state = await setupStatus(deps);
  if (state.status) throw new AppError(400, "the system is already initialised");
  if (input.SelfUseModeEnabled && input.DemoSiteEnabled) throw badRequest("choose one usage mode: self-use or demo");
  let rootValues: { username: string; hash: string } | null = null;
  if (!state.root_init) {
    const username = chosenUsername(input.username);
    const password = input.password ?? "";
    checkPassword(deps, password);
    if (password !== input.confirmPassword) throw badRequest("the two passwords do not match");
    rootValues = { username, hash: await hashPassword(password, deps.config.passwordHash) };
  }
  await deps.db.transaction().execute(async (trx) => {
    // A concurrent second setup loses here: the row check runs inside the transaction that writes it.
    if (await trx.selectFrom("setups").select("id").limit(1).executeTakeFirst())
      throw new AppError(400, "the system is already initialised");
    if (rootValues) {
      // The display name is what the console header shows; new-api writes a fixed label here, but the
      // column is free text it only displays, so the name chosen in the wizard is what the admin expects.
      await trx
        .insertInto("users")
        .values({
          username: rootValues.username,
          password: rootValues.hash,
          display_name: rootValues.username,
          role: ROLE.root,
          status: USER_STATUS.enabled,
          quota: 100_000_000,
          group: DEFAULT_GROUP,
          aff_code: randomString(8),
          ...creationTimes(),
          setting: "",
        })
        .execute();
    }
    await trx.insertInto("setups").values({ version: VERSION, initialized_at: nowSeconds() }).execute();
  });
  await deps.options.set("SelfUseModeEnabled", input.SelfUseModeEnabled ? "true" : "false");
  await deps.options.set("DemoSiteEnabled", input.DemoSiteEnabled ? "true" : "false");
}
