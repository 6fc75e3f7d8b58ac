import { t } from "elysia";
import { envelope, loose } from "../../http/schema.ts";

/** GET /api/status: what the console reads before anything else (the main fields; there are more). */
export const statusReply = envelope(
  loose(
    {
      version: t.String(),
      start_time: t.Integer({ description: "unix seconds" }),
      system_name: t.String(),
      logo: t.String(),
      server_address: t.String(),
      quota_per_unit: t.Number({ description: "quota units per 1 USD" }),
      display_in_currency: t.Boolean(),
      quota_display_type: t.String({ description: "USD, CNY, TOKENS or CUSTOM" }),
      register_enabled: t.Boolean(),
      password_login_enabled: t.Boolean(),
      turnstile_check: t.Boolean(),
      setup: t.Boolean({ description: "true once the setup wizard has run" }),
    },
    { description: "site settings the console needs; fields not listed here are sent too" },
  ),
);

/** Notice, about page, home page content, legal texts: an option's text (Markdown, HTML or a URL). */
export const textReply = envelope(t.String({ description: "the text; empty when unset" }));

/** GET /api/status/test: new-api's shape, the statistics beside the envelope's fields. */
export const statusTestReply = loose({
  success: t.Boolean(),
  message: t.String(),
  http_stats: t.Object({ active_connections: t.Integer({ description: "requests being answered now" }) }),
});
