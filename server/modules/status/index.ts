import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ok } from "../../http/envelope.ts";
import { statusObject } from "./service.ts";
import { statusReply, textReply } from "./model.ts";

export function statusModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api", tags: ["status"] })
    .get("/status", async () => ok(await statusObject(deps)), { response: statusReply })
    .get("/notice", () => ok(deps.options.get("Notice")), { response: textReply })
    .get("/about", () => ok(deps.options.get("About")), { response: textReply })
    .get("/home_page_content", () => ok(deps.options.get("HomePageContent")), { response: textReply })
    // new-api's legal texts (options legal.user_agreement, legal.privacy_policy)
    .get("/user-agreement", () => ok(deps.options.get("legal.user_agreement")), { response: textReply })
    .get("/privacy-policy", () => ok(deps.options.get("legal.privacy_policy")), { response: textReply });
}
