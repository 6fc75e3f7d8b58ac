// Model and group lists the console's forms read.
import { Elysia, t } from "elysia";
import type { AppDeps } from "../deps.ts";
import { authPlugin } from "../http/auth.ts";
import { ok } from "../http/envelope.ts";
import { CHANNEL_TYPES, ROLE } from "../catalogue/index.ts";
import { relayState } from "./state.ts";
import { usableGroups as tokenGroups } from "../modules/token/service.ts";
import { modelMetaList } from "../modules/model-meta/index.ts";
import { listQuery as modelMetaQuery } from "../modules/model-meta/model.ts";
import { anyReply, envelope, loose } from "../http/schema.ts";

const namesReply = envelope(t.Array(t.String()), "model names, sorted");

/** Groups a user may pick for tokens and the playground (the token module decides which), with their price ratio. */
export function usableGroups(deps: AppDeps, userGroup: string): Record<string, { desc: string; ratio: number }> {
  const usable = deps.options.json<Record<string, string>>("UserUsableGroups", {});
  const ratios = deps.options.json<Record<string, number>>("GroupRatio", {});
  const out: Record<string, { desc: string; ratio: number }> = {};
  for (const g of tokenGroups(deps, { group: userGroup }))
    out[g] = { desc: String(usable[g] ?? g), ratio: ratios[g] ?? 1 };
  return out;
}

/** Every model the user can reach through some token: the union over all their usable groups. */
async function userModels(deps: AppDeps, userGroup: string): Promise<string[]> {
  const table = await relayState(deps).routing.get();
  const models = new Set<string>();
  for (const g of tokenGroups(deps, { group: userGroup }))
    for (const m of table.modelsByGroup.get(g) ?? []) models.add(m);
  return [...models].sort();
}

async function enabledModels(deps: AppDeps): Promise<string[]> {
  const rows = await deps.db.selectFrom("abilities").select("model").distinct().where("enabled", "=", true).execute();
  return rows.map((r) => r.model).sort();
}

export function listsModule(deps: AppDeps) {
  return (
    new Elysia({ prefix: "/api", tags: ["lists"] })
      .use(authPlugin(deps))
      // GET /api/models: channel type → model names (the spec); GET /api/models/ (new-api's console, trailing slash):
      // its model metadata list (server/modules/model-meta). One route answers both: Elysia treats them as one path.
      .get(
        "/models",
        async ({ request, query }) =>
          new URL(request.url).pathname.endsWith("/")
            ? ok(await modelMetaList(deps, query))
            : ok(Object.fromEntries(CHANNEL_TYPES.map((t) => [t.id, [...t.models]]))),
        {
          role: ROLE.admin,
          query: modelMetaQuery,
          response: anyReply,
          detail: {
            summary: "Default models by channel type (with a trailing slash: the model metadata list)",
            description:
              "/api/models: channel type id → its default model names. /api/models/ (trailing slash): new-api's model metadata list, one page ({items, total, page, page_size}).",
          },
        },
      )
      .get("/user/models", async ({ user }) => ok(await userModels(deps, user.group)), {
        role: ROLE.common,
        detail: { summary: "The models the caller can use" },
        response: namesReply,
      })
      .get("/user/self/groups", ({ user }) => ok(usableGroups(deps, user.group)), {
        role: ROLE.common,
        detail: { summary: "The groups the caller may put on a token" },
        response: envelope(
          loose({}, { description: "group name → {desc, ratio}: the groups the caller may put on a token" }),
        ),
      })
      .get(
        "/channel/models",
        async () => {
          const owners = new Map<string, string>();
          for (const t of CHANNEL_TYPES) for (const m of t.models) if (!owners.has(m)) owners.set(m, t.kind);
          for (const m of await enabledModels(deps)) if (!owners.has(m)) owners.set(m, "custom");
          return ok([...owners].map(([id, owned_by]) => ({ id, object: "model", created: 1626777600, owned_by })));
        },
        {
          role: ROLE.admin,
          detail: { summary: "Every model the channels know" },
          response: envelope(
            t.Array(loose({ id: t.String(), object: t.String(), created: t.Integer(), owned_by: t.String() })),
          ),
        },
      )
      .get("/channel/models_enabled", async () => ok(await enabledModels(deps)), {
        role: ROLE.admin,
        detail: { summary: "Models of enabled channels" },
        response: namesReply,
      })
  );
}
