import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ok } from "../../http/envelope.ts";
import { envelope, loose, okReply } from "../../http/schema.ts";
import { setupStatus, runSetup } from "./service.ts";

const setupReply = envelope(
  loose({
    status: t.Boolean({ description: "true once the wizard has run" }),
    root_init: t.Boolean({ description: "a super admin exists (an imported database may have one)" }),
    database_type: t.String({ description: "sqlite, postgres or mysql" }),
  }),
);

const setupBody = t.Object(
  {
    username: t.Optional(t.String()),
    password: t.Optional(t.String()),
    confirmPassword: t.Optional(t.String()),
    SelfUseModeEnabled: t.Optional(t.Boolean()),
    DemoSiteEnabled: t.Optional(t.Boolean()),
  },
  { additionalProperties: true },
);

export function setupModule(deps: AppDeps, onDone: () => void) {
  return new Elysia({ prefix: "/api/setup", tags: ["setup"] })
    .get("", async () => ok(await setupStatus(deps)), {
      detail: { summary: "Whether the setup wizard has run" },
      response: setupReply,
    })
    .post(
      "",
      async ({ body }) => {
        await runSetup(deps, body);
        onDone();
        return ok(undefined, "system initialised");
      },
      { body: setupBody, detail: { summary: "Run the setup wizard: create the super admin" }, response: okReply },
    );
}
