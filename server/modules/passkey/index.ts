// Passkey routes in new-api's shapes (controller/passkey.go): begin answers {options: {publicKey}}, finish
// takes the browser's credential JSON as the body.
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin, startSession } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { AppError } from "../../http/errors.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import { randomString } from "../../infra/random.ts";
import { ROLE } from "../../catalogue/index.ts";
import { publicUser } from "../user/view.ts";
import { recordSignIn } from "../user/service.ts";
import { markPasskeyReady, sessionTag } from "../twofa/secure.ts";
import { VERIFY_MSG } from "../twofa/index.ts";
import { relyingParty } from "./relying-party.ts";
import * as svc from "./service.ts";
import { envelope, loose, okReply } from "../../http/schema.ts";
import { userReply } from "../user/model.ts";

/** The browser's passkey sign-in attempt: an HttpOnly cookie naming the challenge waiting in the cache. */
const FLOW_COOKIE = "passkey_flow";
const FLOW_PATH = "/api/user/passkey/login";

const credentialBody = t.Record(t.String(), t.Any(), { error: "the body must be the passkey credential as JSON" });
const deleteQuery = t.Object(
  { id: t.Optional(t.Numeric({ minimum: 1, error: "id must be a positive integer" })) },
  { additionalProperties: true },
);
/** WebAuthn options for navigator.credentials.create()/get(), as new-api sends them. */
const optionsReply = envelope(
  loose({
    options: loose({ publicKey: loose({}) }, { description: "{publicKey: ...} for the browser's WebAuthn call" }),
  }),
);

const statusReply = envelope(
  loose({
    enabled: t.Boolean({ description: "the caller has a passkey" }),
    last_used_at: t.Union([t.String({ description: "RFC 3339" }), t.Null()]),
    passkeys: t.Array(
      loose({
        id: t.Integer(),
        attachment: t.Any(),
        backup_eligible: t.Boolean(),
        created_at: t.Any(),
        last_used_at: t.Any(),
      }),
    ),
  }),
);

const idParam = t.Object({ id: t.Numeric({ minimum: 1, error: "id must be a positive integer" }) });

export function passkeyModule(deps: AppDeps) {
  const limit = (request: Request, server: unknown) =>
    enforceLimit(deps, "critical", clientIp(request, server as any, deps.config.trustProxy));
  const tagOf = (cookie: Record<string, any>) => {
    const tag = sessionTag(cookie);
    if (!tag) throw new AppError(403, VERIFY_MSG.needsSession);
    return tag;
  };
  return new Elysia({ prefix: "/api/user", tags: ["passkey"] })
    .use(authPlugin(deps))
    .get("/passkey", async ({ user }) => ok(await svc.passkeyStatus(deps, user.id)), {
      role: ROLE.common,
      detail: { summary: "The caller's passkey" },
      response: statusReply,
    })
    .delete(
      "/passkey",
      async ({ user, query }) => {
        await svc.deletePasskeys(deps, user.id, query.id);
        return ok(undefined, "passkey removed");
      },
      { role: ROLE.common, query: deleteQuery, detail: { summary: "Remove the caller's passkey" }, response: okReply },
    )
    .post(
      "/passkey/register/begin",
      async ({ user, request }) => ok({ options: await svc.registerBegin(deps, user, relyingParty(deps, request)) }),
      { role: ROLE.common, detail: { summary: "Begin registering a passkey" }, response: optionsReply },
    )
    .post(
      "/passkey/register/finish",
      async ({ user, body, request }) => {
        await svc.registerFinish(deps, user, relyingParty(deps, request), body as any);
        return ok(undefined, "passkey registered");
      },
      {
        role: ROLE.common,
        body: credentialBody,
        detail: { summary: "Finish registering a passkey" },
        response: okReply,
      },
    )
    .post(
      "/passkey/verify/begin",
      async ({ user, cookie, request }) =>
        ok({ options: await svc.verifyBegin(deps, user, relyingParty(deps, request), tagOf(cookie)) }),
      { role: ROLE.common, detail: { summary: "Begin a passkey check (secure verification)" }, response: optionsReply },
    )
    .post(
      "/passkey/verify/finish",
      async ({ user, body, cookie, request, server }) => {
        await limit(request, server);
        const tag = tagOf(cookie);
        await svc.verifyFinish(deps, user, relyingParty(deps, request), tag, body as any);
        // As in new-api, the passkey proof becomes a secure verification through POST /api/verify {method: "passkey"}.
        await markPasskeyReady(deps, user.id, tag);
        return ok(undefined, "passkey verified");
      },
      { role: ROLE.common, body: credentialBody, detail: { summary: "Finish a passkey check" }, response: okReply },
    )
    .post(
      "/passkey/login/begin",
      async ({ cookie, request, server }) => {
        await limit(request, server);
        const flow = randomString(32);
        const options = await svc.loginBegin(deps, relyingParty(deps, request), flow);
        cookie[FLOW_COOKIE].set({
          value: flow,
          httpOnly: true,
          sameSite: "strict",
          path: FLOW_PATH,
          maxAge: svc.CEREMONY_SECONDS,
          secure: new URL(request.url).protocol === "https:",
        });
        return ok({ options });
      },
      { detail: { summary: "Begin signing in with a passkey" }, response: optionsReply },
    )
    .post(
      "/passkey/login/finish",
      async ({ body, cookie, request, server, sessionJwt }) => {
        await limit(request, server);
        const flow = cookie[FLOW_COOKIE]?.value;
        if (typeof flow !== "string" || !flow) throw new AppError(400, svc.MSG.expired);
        const user = await svc.loginFinish(deps, relyingParty(deps, request), flow, body as any);
        cookie[FLOW_COOKIE].remove();
        await recordSignIn(deps, user);
        await startSession(sessionJwt, cookie, user, new URL(request.url).protocol === "https:");
        return ok(publicUser(user));
      },
      { body: credentialBody, detail: { summary: "Finish signing in with a passkey" }, response: userReply },
    )
    .delete(
      "/:id/reset_passkey",
      async ({ user, params }) => {
        await svc.adminResetPasskeys(deps, user, params.id);
        return ok(undefined, "passkeys reset");
      },
      { role: ROLE.admin, params: idParam, detail: { summary: "Remove a user's passkeys" }, response: okReply },
    );
}
