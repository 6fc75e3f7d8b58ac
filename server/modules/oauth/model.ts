// Shapes of the third-party sign-in routes (spec 000 §7.2) and of what a provider tells us about a person.
import { t } from "elysia";
import { envelope, loose } from "../../http/schema.ts";

/** Who the provider says signed in: id is what the users table stores in the provider's column. */
export interface ExternalIdentity {
  id: string;
  displayName: string;
  email: string;
  /** A username the provider suggests (OIDC preferred_username); used when free. */
  username?: string;
}

export const stateQuery = t.Object({ aff: t.Optional(t.String({ maxLength: 64 })) });

export const callbackQuery = t.Object(
  {
    code: t.Optional(t.String()),
    state: t.Optional(t.String()),
    error: t.Optional(t.String()),
    error_description: t.Optional(t.String()),
  },
  { additionalProperties: true },
);

export const wechatQuery = t.Object({ code: t.Optional(t.String()) });

/** Telegram's login widget: its signed fields (every one is part of the signature). */
export const telegramQuery = t.Object(
  {
    id: t.Optional(t.String()),
    first_name: t.Optional(t.String()),
    last_name: t.Optional(t.String()),
    username: t.Optional(t.String()),
    photo_url: t.Optional(t.String()),
    auth_date: t.Optional(t.String({ description: "unix seconds" })),
    hash: t.Optional(t.String({ description: "the widget's signature" })),
  },
  { additionalProperties: true },
);

export const stateReply = envelope(
  t.String({ description: "the state to send to the provider (also set as an HttpOnly cookie)" }),
);
export const authorizeReply = envelope(
  loose({
    url: t.Optional(t.String({ description: "the provider's authorisation URL to send the browser to" })),
    state: t.Optional(t.String()),
  }),
);
