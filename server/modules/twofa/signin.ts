// The answer to a first-factor sign-in (password, or a third-party account): a session, or, for a user with
// two-factor sign-in on, new-api's {require_2fa, flow_token, expires_at} and no session until
// POST /api/user/login/2fa. A super admin who must set it up (RootTwoFARequiredEnabled) is told so.
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { startSession } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { publicUser } from "../user/view.ts";
import { recordSignIn } from "../user/service.ts";
import { isTwoFAEnabled } from "./service.ts";
import { PENDING_LOGIN_COOKIE, PENDING_LOGIN_TTL_SECONDS, startPendingLogin } from "./pending.ts";
import { rootTwoFASetupNeeded } from "./enforce.ts";

export const TWO_FA_CODE_NEEDED = "enter the code from your authenticator app";

interface SignInContext {
  sessionJwt: any;
  cookie: Record<string, any>;
  request: Request;
}

export async function signInReply(deps: AppDeps, ctx: SignInContext, user: User, message = "") {
  const secure = new URL(ctx.request.url).protocol === "https:";
  if (await isTwoFAEnabled(deps, user.id)) {
    const pending = await startPendingLogin(deps, user);
    // The second step is POST /api/user/login/2fa: the cookie goes only there.
    ctx.cookie[PENDING_LOGIN_COOKIE].set({
      value: pending.flow_token,
      httpOnly: true,
      sameSite: "lax",
      path: "/api/user/login",
      maxAge: PENDING_LOGIN_TTL_SECONDS,
      secure,
    });
    return ok({ require_2fa: true, ...pending }, TWO_FA_CODE_NEEDED);
  }
  await recordSignIn(deps, user);
  await startSession(ctx.sessionJwt, ctx.cookie, user, secure);
  const setupNeeded = await rootTwoFASetupNeeded(deps, user);
  return ok(setupNeeded ? { ...publicUser(user), require_2fa_setup: true } : publicUser(user), message);
}
