import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { envelope } from "../../http/schema.ts";
import { ROLE } from "../../catalogue/index.ts";
import { groups } from "../user/service.ts";

export function groupModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api", tags: ["group"] })
    .use(authPlugin(deps))
    .get("/group/", async () => ok(await groups(deps)), {
      role: ROLE.admin,
      detail: { summary: "Group names" },
      response: envelope(t.Array(t.String(), { description: "group names" })),
    });
}
