import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ok } from "../../http/envelope.ts";
import { anyReply, okReply } from "../../http/schema.ts";
import { setupStatus, runSetup } from "./service.ts";

const setupBody = t.Object({
  username: t.Optional(t.String()),
  password: t.Optional(t.String()),
  confirmPassword: t.Optional(t.String()),
  SelfUseModeEnabled: t.Optional(t.Boolean()),
  DemoSiteEnabled: t.Optional(t.Boolean()),
}, { additionalProperties: true });

export function setupModule(deps: AppDeps, onDone: () => void) {
  return new Elysia({ prefix: "/api/setup", tags: ["setup"] })
    .get("", async () => ok(await setupStatus(deps)), { detail: { summary: "Whether the setup wizard has run" }, response: anyReply })
    .post("", async ({ body }) => {
      await runSetup(deps, body);
      onDone();
      return ok(undefined, "system initialised");
    }, { body: setupBody, detail: { summary: "Run the setup wizard: create the super admin" }, response: okReply });
}
