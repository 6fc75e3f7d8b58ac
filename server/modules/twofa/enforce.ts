// RootTwoFARequiredEnabled: the super admin must use two-factor sign-in. A super admin signed in without
// it (password sign-in still works, so the account is never locked out) may only set it up: every other
// management call answers 403 with code TWO_FA_SETUP_REQUIRED until it is enabled.
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { AppError } from "../../http/errors.ts";
import { ROLE } from "../../catalogue/index.ts";
import { isTwoFAEnabled } from "./service.ts";

export const ROOT_2FA_OPTION = "RootTwoFARequiredEnabled";
export const SETUP_REQUIRED_MSG = "the super admin must set up two-factor sign-in first (personal settings)";

/** What a super admin without two-factor sign-in may still call. */
const ALLOWED_WHILE_MISSING = new Set([
  "/api/user/self",
  "/api/user/2fa/status",
  "/api/user/2fa/setup",
  "/api/user/2fa/enable",
]);

export async function rootTwoFASetupNeeded(deps: AppDeps, user: Pick<User, "id" | "role">): Promise<boolean> {
  if (user.role < ROLE.root || !deps.options.bool(ROOT_2FA_OPTION)) return false;
  return !(await isTwoFAEnabled(deps, user.id));
}

/** Called by the role guard (http/auth.ts) for every signed-in management call. */
export async function enforceRootTwoFA(deps: AppDeps, user: Pick<User, "id" | "role">, path: string): Promise<void> {
  if (ALLOWED_WHILE_MISSING.has(path.replace(/\/+$/, ""))) return;
  if (await rootTwoFASetupNeeded(deps, user)) throw new AppError(403, SETUP_REQUIRED_MSG, "TWO_FA_SETUP_REQUIRED");
}
