import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ok } from "../../http/envelope.ts";
import { statusObject } from "./service.ts";
import { statusReply, textReply } from "./model.ts";

export function statusModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api", tags: ["status"] })
    .get("/status", async () => ok(await statusObject(deps)), { detail: { summary: "Site status and settings the console loads first" }, response: statusReply })
    .get("/notice", () => ok(deps.options.get("Notice")), { detail: { summary: "The notice" }, response: textReply })
    .get("/about", () => ok(deps.options.get("About")), { detail: { summary: "The about page" }, response: textReply })
    .get("/home_page_content", () => ok(deps.options.get("HomePageContent")), { detail: { summary: "The home page content" }, response: textReply })
    // new-api's legal texts (options legal.user_agreement, legal.privacy_policy)
    .get("/user-agreement", () => ok(deps.options.get("legal.user_agreement")), { detail: { summary: "The user agreement" }, response: textReply })
    .get("/privacy-policy", () => ok(deps.options.get("legal.privacy_policy")), { detail: { summary: "The privacy policy" }, response: textReply });
}
