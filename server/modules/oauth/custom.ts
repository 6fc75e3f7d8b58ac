// new-api's custom OAuth providers (an admin-defined OAuth 2 / OIDC sign-in) are not in Switchyard: these routes
// answer as new-api does with none configured, so its consoles show their empty lists instead of an error.
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { envelope } from "../../http/schema.ts";
import { ROLE } from "../../catalogue/index.ts";
import { getUser } from "../user/service.ts";
import { idParam } from "../user/model.ts";

const emptyList = envelope(t.Array(t.Any(), { maxItems: 0, description: "always empty: no custom OAuth providers" }));

export function customOAuthModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api", tags: ["oauth"] })
    .use(authPlugin(deps))
    .get("/custom-oauth-provider/", () => ok([]), {
      role: ROLE.root,
      detail: { summary: "Custom OAuth providers (none: not supported)" },
      response: emptyList,
    })
    .get("/user/oauth/bindings", () => ok([]), {
      role: ROLE.common,
      detail: { summary: "The caller's custom OAuth bindings (none)" },
      response: emptyList,
    })
    .get(
      "/user/:id/oauth/bindings",
      async ({ params }) => {
        await getUser(deps, params.id);
        return ok([]);
      },
      {
        role: ROLE.admin,
        params: idParam,
        detail: { summary: "A user's custom OAuth bindings (none)" },
        response: emptyList,
      },
    );
}
