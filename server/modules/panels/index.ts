// The dashboard's Uptime Kuma panel (new-api's route; its console calls it on every page load, signed in or not).
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ok } from "../../http/envelope.ts";
import { uptimeStatus } from "./uptime.ts";
import { anyReply } from "../../http/schema.ts";

export function panelsModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api", tags: ["panels"] }).get(
    "/uptime/status",
    async () => ok(await uptimeStatus(deps.options.get("console_setting.uptime_kuma_groups"))),
    { detail: { summary: "Uptime Kuma status of the dashboard's monitors" }, response: anyReply },
  );
}
