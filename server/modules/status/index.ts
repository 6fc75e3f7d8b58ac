import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ok } from "../../http/envelope.ts";
import { statusObject } from "./service.ts";

export function statusModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api" })
    .get("/status", async () => ok(await statusObject(deps)))
    .get("/notice", () => ok(deps.options.get("Notice")))
    .get("/about", () => ok(deps.options.get("About")))
    .get("/home_page_content", () => ok(deps.options.get("HomePageContent")))
    // new-api's legal texts (options legal.user_agreement, legal.privacy_policy)
    .get("/user-agreement", () => ok(deps.options.get("legal.user_agreement")))
    .get("/privacy-policy", () => ok(deps.options.get("legal.privacy_policy")));
}
