// Shapes of the third-party sign-in routes (spec 000 §7.2) and of what a provider tells us about a person.
import { t } from "elysia";

/** Who the provider says signed in: id is what the users table stores in the provider's column. */
export interface ExternalIdentity {
  id: string;
  displayName: string;
  email: string;
  /** A username the provider suggests (OIDC preferred_username); used when free. */
  username?: string;
}

export const stateQuery = t.Object({ aff: t.Optional(t.String({ maxLength: 64 })) });

export const callbackQuery = t.Object({
  code: t.Optional(t.String()),
  state: t.Optional(t.String()),
  error: t.Optional(t.String()),
  error_description: t.Optional(t.String()),
}, { additionalProperties: true });

export const wechatQuery = t.Object({ code: t.Optional(t.String()) });
