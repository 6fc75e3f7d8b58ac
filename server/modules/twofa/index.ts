// Two-factor sign-in and secure verification routes, in new-api's shapes (controller/twofa.go,
// controller/secure_verification.go).
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { authPlugin, startSession } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { AppError, badRequest } from "../../http/errors.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import { ROLE } from "../../catalogue/index.ts";
import { publicUser } from "../user/view.ts";
import { recordSignIn } from "../user/service.ts";
import { verifyPasswordOf } from "../user/password.ts";
import { accountOfUser, throttledCheck } from "../user/signin-throttle.ts";
import * as svc from "./service.ts";
import { completePendingLogin, PENDING_LOGIN_COOKIE } from "./pending.ts";
import { consumePasskeyReady, markVerified, sessionTag, verifiedUntil } from "./secure.ts";
import { envelope, loose, okReply } from "../../http/schema.ts";
import { userReply } from "../user/model.ts";

const code = t.Optional(t.Union([t.String(), t.Number()], { error: "code must be a string" }));
const codeBody = t.Object({ code }, { additionalProperties: true });
const loginBody = t.Object(
  { code, flow_token: t.Optional(t.String({ error: "flow_token must be a string" })) },
  { additionalProperties: true },
);
const verifyBody = t.Object(
  {
    method: t.Optional(t.String({ error: "method must be 2fa, passkey or password" })),
    code,
    password: t.Optional(t.String({ error: "password must be a string" })),
  },
  { additionalProperties: true },
);
const idParam = t.Object({ id: t.Numeric({ minimum: 1, error: "id must be a positive integer" }) });

const verifyReply = envelope(
  loose({
    verified: t.Boolean(),
    expires_at: t.Optional(t.Integer({ description: "unix seconds: until then, secure operations need no new proof" })),
  }),
);
const statusReply = envelope(
  loose({
    enabled: t.Boolean(),
    locked: t.Boolean({ description: "too many wrong codes: locked for a while" }),
    backup_codes_remaining: t.Optional(t.Integer()),
  }),
);
const setupReply = envelope(
  loose(
    {
      secret: t.String({ description: "the TOTP secret (base32)" }),
      qr_code_data: t.String({ description: "the otpauth:// URI to show as a QR code" }),
      backup_codes: t.Array(t.String()),
    },
    { description: "not in force until POST /api/user/2fa/enable with a code" },
  ),
);
const statsReply = envelope(
  loose({
    total_users: t.Integer(),
    enabled_users: t.Integer(),
    enabled_rate: t.String({ description: "e.g. 12.5%" }),
  }),
);
const backupCodesReply = envelope(
  loose({ backup_codes: t.Array(t.String(), { description: "one-time codes; the old ones stop working" }) }),
);

const str = (v: unknown) => (v === undefined || v === null ? undefined : String(v));

export const VERIFY_MSG = {
  needsSession: "secure verification needs a console session (sign in in the browser)",
  badMethod: "unsupported verification method: use 2fa, passkey or password",
  passkeyFirst: "complete the passkey check first",
  wrongPassword: "the password is wrong",
  verified: "verified",
} as const;

/** POST /api/verify {method: "password"}: the account password as a fresh proof (Switchyard's addition for accounts without 2FA). */
export async function checkOwnPassword(deps: AppDeps, user: User, password: string | undefined): Promise<void> {
  if (!password) throw badRequest("enter your password");
  const row = await deps.db.selectFrom("users").select("password").where("id", "=", user.id).executeTakeFirstOrThrow();
  if (
    !(await throttledCheck(deps, accountOfUser(user.id), () =>
      verifyPasswordOf(password, row.password, deps.config.passwordHash),
    ))
  )
    throw new AppError(403, VERIFY_MSG.wrongPassword);
}

export function twoFAModule(deps: AppDeps) {
  const limit = (request: Request, server: unknown) =>
    enforceLimit(deps, "critical", clientIp(request, server as any, deps.config.trustProxy));
  return (
    new Elysia({ prefix: "/api", tags: ["twofa"] })
      .use(authPlugin(deps))
      .get("/user/2fa/status", async ({ user }) => ok(await svc.twoFAStatus(deps, user.id)), {
        role: ROLE.common,
        detail: { summary: "Whether two-factor sign-in is on" },
        response: statusReply,
      })
      .post(
        "/user/2fa/setup",
        async ({ user }) =>
          ok(
            await svc.setupTwoFA(deps, user),
            "scan the QR code with your authenticator app, then enter its code to finish",
          ),
        {
          role: ROLE.common,
          detail: { summary: "Start setting up two-factor sign-in (secret, QR code, backup codes)" },
          response: setupReply,
        },
      )
      .post(
        "/user/2fa/enable",
        async ({ user, body, request, server }) => {
          await limit(request, server);
          await svc.enableTwoFA(deps, user, str(body.code));
          return ok(undefined, "two-factor sign-in is enabled");
        },
        { role: ROLE.common, body: codeBody, detail: { summary: "Turn two-factor sign-in on" }, response: okReply },
      )
      .post(
        "/user/2fa/disable",
        async ({ user, body, request, server }) => {
          await limit(request, server);
          await svc.disableTwoFA(deps, user, str(body.code));
          return ok(undefined, "two-factor sign-in is disabled");
        },
        { role: ROLE.common, body: codeBody, detail: { summary: "Turn two-factor sign-in off" }, response: okReply },
      )
      .post(
        "/user/2fa/backup_codes",
        async ({ user, body, request, server }) => {
          await limit(request, server);
          return ok(
            { backup_codes: await svc.regenerateBackupCodes(deps, user, str(body.code)) },
            "new backup codes generated",
          );
        },
        { role: ROLE.common, body: codeBody, detail: { summary: "New backup codes" }, response: backupCodesReply },
      )
      .get("/user/2fa/stats", async () => ok(await svc.twoFAStats(deps)), {
        role: ROLE.admin,
        detail: { summary: "How many users use two-factor sign-in" },
        response: statsReply,
      })
      .delete(
        "/user/:id/2fa",
        async ({ user, params }) => {
          await svc.adminDisableTwoFA(deps, user, params.id);
          return ok(undefined, "two-factor sign-in of the user is disabled");
        },
        {
          role: ROLE.admin,
          params: idParam,
          detail: { summary: "Turn a user's two-factor sign-in off" },
          response: okReply,
        },
      )
      // The second step of a password sign-in (POST /api/user/login answered require_2fa).
      .post(
        "/user/login/2fa",
        async ({ body, cookie, request, server, sessionJwt }) => {
          await limit(request, server);
          const token = body.flow_token || cookie[PENDING_LOGIN_COOKIE]?.value;
          const user = await completePendingLogin(deps, typeof token === "string" ? token : undefined, str(body.code));
          cookie[PENDING_LOGIN_COOKIE]?.remove();
          await recordSignIn(deps, user);
          await startSession(sessionJwt, cookie, user, new URL(request.url).protocol === "https:");
          return ok(publicUser(user));
        },
        { body: loginBody, detail: { summary: "Second step of a sign-in: the code" }, response: userReply },
      )
      .post(
        "/verify",
        async ({ user, body, cookie, request, server }) => {
          await limit(request, server);
          const tag = sessionTag(cookie);
          if (!tag) throw new AppError(403, VERIFY_MSG.needsSession);
          const method = body.method ?? "2fa";
          if (method === "2fa") await svc.verifySecondFactor(deps, user.id, str(body.code));
          else if (method === "passkey") {
            if (!(await consumePasskeyReady(deps, user.id, tag))) throw badRequest(VERIFY_MSG.passkeyFirst);
          } else if (method === "password") await checkOwnPassword(deps, user, body.password ?? str(body.code));
          else throw badRequest(VERIFY_MSG.badMethod);
          const expires_at = await markVerified(deps, user.id, tag, method);
          return ok({ verified: true, expires_at }, VERIFY_MSG.verified);
        },
        {
          role: ROLE.common,
          body: verifyBody,
          detail: { summary: "Secure verification (2FA code, passkey or password)" },
          response: verifyReply,
        },
      )
      .get(
        "/verify/status",
        async ({ user, cookie }) => {
          const until = await verifiedUntil(deps, user.id, sessionTag(cookie));
          return ok(until ? { verified: true, expires_at: until } : { verified: false });
        },
        { role: ROLE.common, detail: { summary: "Whether the session is freshly verified" }, response: verifyReply },
      )
  );
}
