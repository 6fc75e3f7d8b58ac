import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ok } from "../../http/envelope.ts";
import { sql } from "kysely";
import { authPlugin } from "../../http/auth.ts";
import { ROLE } from "../../catalogue/index.ts";
import { statusObject } from "./service.ts";
import { statusReply, statusTestReply, textReply } from "./model.ts";

export function statusModule(deps: AppDeps) {
  return (
    new Elysia({ prefix: "/api", tags: ["status"] })
      .get("/status", async () => ok(await statusObject(deps)), {
        detail: { summary: "Site status and settings the console loads first" },
        response: statusReply,
      })
      .get("/notice", () => ok(deps.options.get("Notice")), { detail: { summary: "The notice" }, response: textReply })
      .get("/about", () => ok(deps.options.get("About")), {
        detail: { summary: "The about page" },
        response: textReply,
      })
      .get("/home_page_content", () => ok(deps.options.get("HomePageContent")), {
        detail: { summary: "The home page content" },
        response: textReply,
      })
      // new-api's legal texts (options legal.user_agreement, legal.privacy_policy)
      .get("/user-agreement", () => ok(deps.options.get("legal.user_agreement")), {
        detail: { summary: "The user agreement" },
        response: textReply,
      })
      .get("/privacy-policy", () => ok(deps.options.get("legal.privacy_policy")), {
        detail: { summary: "The privacy policy" },
        response: textReply,
      })
      // new-api's health check for admins: the database answers (a failure is the usual 503), and the requests in flight
      .use(authPlugin(deps))
      .get(
        "/status/test",
        async ({ server }) => {
          await sql`select 1`.execute(deps.db);
          return {
            success: true,
            message: "Server is running",
            http_stats: { active_connections: server?.pendingRequests ?? 0 },
          };
        },
        {
          role: ROLE.admin,
          detail: { summary: "Health check: the database answers; requests in flight" },
          response: statusTestReply,
        },
      )
  );
}
