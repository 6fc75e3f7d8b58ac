// new-api's routes a token itself calls (an API key, not a console session): its balance and its recent calls.
// They only read, so a disabled, expired or exhausted token still sees them, as in new-api.
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import type { Token } from "../../../db/schema.ts";
import { ok } from "../../http/envelope.ts";
import { unauthorized } from "../../http/errors.ts";
import { envelope, loose } from "../../http/schema.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import { TOKEN_KEY_PREFIX } from "../../catalogue/index.ts";
import { presentedKey } from "../../relay/auth.ts";
import { readerOf } from "../../infra/sqlite-reader.ts";
import { logView } from "../log/service.ts";

/** How many of a token's calls GET /api/log/token lists, newest first (new-api's MaxRecentItems). */
export const TOKEN_LOG_LIMIT = 100;

const names = (list: string | null | undefined) =>
  Object.fromEntries(
    (list ?? "")
      .split(",")
      .map((m) => m.trim())
      .filter(Boolean)
      .map((m) => [m, true]),
  );

async function presentedToken(deps: AppDeps, request: Request): Promise<Token> {
  const raw = presentedKey(request);
  if (!raw) throw unauthorized("no token was given: send Authorization: Bearer sk-...");
  // sk-KEY-CHANNEL (an admin's pinned channel) names the same token
  const key = (raw.startsWith(TOKEN_KEY_PREFIX) ? raw.slice(TOKEN_KEY_PREFIX.length) : raw).split("-")[0]!;
  const row = await deps.db
    .selectFrom("tokens")
    .selectAll()
    .where("key", "=", key)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!row) throw unauthorized("invalid token");
  return row;
}

const usageReply = t.Object(
  {
    code: t.Boolean(),
    message: t.String(),
    data: loose({
      object: t.Literal("token_usage"),
      name: t.String(),
      total_granted: t.Number(),
      total_used: t.Number(),
      total_available: t.Number(),
      unlimited_quota: t.Boolean(),
      model_limits: t.Record(t.String(), t.Boolean()),
      model_limits_enabled: t.Boolean(),
      expires_at: t.Integer({ description: "unix seconds; 0: never" }),
    }),
  },
  { description: "new-api's shape: code (not success) beside message and data" },
);

export function tokenUsageModule(deps: AppDeps) {
  const limit = (request: Request, server: unknown) =>
    enforceLimit(deps, "critical", clientIp(request, server as any, deps.config.trustProxy));
  return new Elysia({ prefix: "/api", tags: ["token"] })
    .get(
      "/usage/token/",
      async ({ request, server }) => {
        await limit(request, server);
        const tok = await presentedToken(deps, request);
        return {
          code: true,
          message: "ok",
          data: {
            object: "token_usage" as const,
            name: tok.name,
            total_granted: tok.remain_quota + tok.used_quota,
            total_used: tok.used_quota,
            total_available: tok.remain_quota,
            unlimited_quota: Boolean(tok.unlimited_quota),
            model_limits: names(tok.model_limits),
            model_limits_enabled: Boolean(tok.model_limits_enabled),
            expires_at: tok.expired_time === -1 ? 0 : tok.expired_time,
          },
        };
      },
      { detail: { summary: "The presented token's balance (Authorization: Bearer sk-...)" }, response: usageReply },
    )
    .get(
      "/log/token",
      async ({ request, server }) => {
        await limit(request, server);
        const tok = await presentedToken(deps, request);
        const rows = await readerOf(deps.db)
          .selectFrom("logs")
          .selectAll()
          .where("token_id", "=", tok.id)
          .orderBy("id", "desc")
          .limit(TOKEN_LOG_LIMIT)
          .execute();
        return ok(rows.map((r) => logView(r, "", false)));
      },
      {
        detail: { summary: "The presented token's latest calls, newest first (Authorization: Bearer sk-...)" },
        response: envelope(t.Array(t.Any())),
      },
    );
}
