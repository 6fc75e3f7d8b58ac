import { t } from "elysia";

const int = t.Integer();
export const idParam = t.Object({ id: t.Numeric({ minimum: 1 }) });

export const createUserBody = t.Object({
  username: t.Optional(t.String()),
  password: t.Optional(t.String()),
  display_name: t.Optional(t.String()),
  role: t.Optional(int),
});

export const updateUserBody = t.Object({
  id: t.Integer({ minimum: 1 }),
  username: t.Optional(t.String()),
  display_name: t.Optional(t.String()),
  password: t.Optional(t.String()),
  email: t.Optional(t.String()),
  quota: t.Optional(t.Integer()),
  group: t.Optional(t.String()),
  role: t.Optional(int),
}, { additionalProperties: true });

export const updateSelfBody = t.Object({
  username: t.Optional(t.String()),
  display_name: t.Optional(t.String()),
  original_password: t.Optional(t.String()),
  password: t.Optional(t.String()),
}, { additionalProperties: true });

export const manageBody = t.Object({
  id: t.Integer({ minimum: 1 }),
  action: t.Union([t.Literal("promote"), t.Literal("demote"), t.Literal("disable"), t.Literal("enable"), t.Literal("delete")], {
    error: "action must be promote, demote, disable, enable or delete",
  }),
});

export const affTransferBody = t.Object({ quota: t.Integer({ error: "quota must be an integer" }) });

export const settingBody = t.Object({
  notify_type: t.Optional(t.String()),
  quota_warning_threshold: t.Optional(t.Number()),
  webhook_url: t.Optional(t.String()),
  webhook_secret: t.Optional(t.String()),
  notification_email: t.Optional(t.String()),
  accept_unset_model_ratio_model: t.Optional(t.Boolean()),
}, { additionalProperties: true });

export const listQuery = t.Object({
  p: t.Optional(t.String()),
  page_size: t.Optional(t.String()),
  keyword: t.Optional(t.String()),
  group: t.Optional(t.String()),
}, { additionalProperties: true });

export const registerBody = t.Object({
  username: t.Optional(t.String()),
  password: t.Optional(t.String()),
  password2: t.Optional(t.String()),
  email: t.Optional(t.String()),
  verification_code: t.Optional(t.String()),
  aff_code: t.Optional(t.String()),
}, { additionalProperties: true });

export const loginBody = t.Object({
  username: t.Optional(t.String()),
  password: t.Optional(t.String()),
}, { additionalProperties: true });
