import { t, type TSchema } from "elysia";
import { envelope, int, loose, num, pageOf, pagingQuery } from "../../http/schema.ts";
import { BIGINT_COLUMN, INT_COLUMN, within } from "../../http/numbers.ts";

const role = int("role", INT_COLUMN, { description: "1 user, 10 admin, 100 super admin" });
export const idParam = t.Object({ id: t.Numeric({ minimum: 1 }) });

export const createUserBody = t.Object({
  username: t.Optional(t.String()),
  password: t.Optional(t.String()),
  display_name: t.Optional(t.String()),
  role: t.Optional(role),
});

export const updateUserBody = t.Object(
  {
    id: t.Integer({ minimum: 1 }),
    username: t.Optional(t.String()),
    display_name: t.Optional(t.String()),
    password: t.Optional(t.String()),
    email: t.Optional(t.String()),
    quota: t.Optional(int("quota", BIGINT_COLUMN, { description: "the balance to set" })),
    group: t.Optional(t.String()),
    role: t.Optional(role),
  },
  { additionalProperties: true },
);

export const updateSelfBody = t.Object(
  {
    username: t.Optional(t.String()),
    display_name: t.Optional(t.String()),
    original_password: t.Optional(t.String()),
    password: t.Optional(t.String()),
  },
  { additionalProperties: true },
);

export const manageBody = t.Object({
  id: t.Integer({ minimum: 1 }),
  action: t.Union(
    [t.Literal("promote"), t.Literal("demote"), t.Literal("disable"), t.Literal("enable"), t.Literal("delete")],
    {
      error: "action must be promote, demote, disable, enable or delete",
    },
  ),
});

export const affTransferBody = t.Object({ quota: int("quota", within(BIGINT_COLUMN, 1)) });

export const settingBody = t.Object(
  {
    notify_type: t.Optional(t.String()),
    quota_warning_threshold: t.Optional(num("quota_warning_threshold", within(BIGINT_COLUMN, 0))),
    webhook_url: t.Optional(t.String()),
    webhook_secret: t.Optional(t.String()),
    notification_email: t.Optional(t.String()),
    accept_unset_model_ratio_model: t.Optional(t.Boolean()),
    record_ip_log: t.Optional(t.Boolean()),
  },
  { additionalProperties: true },
);

export const listQuery = t.Object(
  {
    ...pagingQuery,
    keyword: t.Optional(t.String({ description: "part of the user name, display name or email, or the id" })),
    group: t.Optional(t.String({ description: "only users of this group" })),
  },
  { additionalProperties: true },
);

export const registerBody = t.Object(
  {
    username: t.Optional(t.String()),
    password: t.Optional(t.String()),
    password2: t.Optional(t.String()),
    email: t.Optional(t.String()),
    verification_code: t.Optional(t.String()),
    aff_code: t.Optional(t.String()),
  },
  { additionalProperties: true },
);

export const loginBody = t.Object(
  {
    username: t.Optional(t.String()),
    password: t.Optional(t.String()),
  },
  { additionalProperties: true },
);

/** ?turnstile= : the Cloudflare Turnstile answer, when the site turned the check on. */
export const turnstileQuery = t.Object(
  { turnstile: t.Optional(t.String({ description: "Turnstile token (when TurnstileCheckEnabled)" })) },
  { additionalProperties: true },
);

const opt = <T extends TSchema>(s: T) => t.Optional(s);
const userFields = {
  id: opt(t.Integer()),
  username: opt(t.String()),
  display_name: opt(t.String()),
  role: opt(t.Integer({ description: "1 user, 10 admin, 100 super admin" })),
  status: opt(t.Integer({ description: "1 enabled, 2 banned" })),
  email: opt(t.String()),
  group: opt(t.String()),
  quota: opt(t.Integer({ description: "remaining quota (500000 = 1 USD by default)" })),
  used_quota: opt(t.Integer()),
  request_count: opt(t.Integer()),
  aff_code: opt(t.String()),
  setting: opt(t.String({ description: "JSON text of the user's notification settings" })),
};
/** A user record as clients see it (never the password hash or the access token); more fields are sent. */
export const userView = loose(userFields, { description: "a user" });
export const userReply = envelope(userView);
/** A first-factor sign-in: the user (and a session cookie), or, with two-factor sign-in on, the pending step. */
export const signInResult = envelope(
  loose(
    {
      ...userFields,
      require_2fa: opt(t.Boolean({ description: "true: POST /api/user/login/2fa with the code and flow_token" })),
      flow_token: opt(t.String()),
      expires_at: opt(t.Integer()),
      require_2fa_setup: opt(t.Boolean({ description: "a super admin who must set up two-factor sign-in first" })),
    },
    { description: "the user, or the two-factor step" },
  ),
);
export const userPage = pageOf(userView);
export const stringReply = (description: string) => envelope(t.String({ description }));
