// new-api's /api/prefill_group routes (admin): list (?type=model|tag|endpoint), create, update, delete.
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { badRequest } from "../../http/errors.ts";
import { ROLE } from "../../catalogue/index.ts";
import { deletePrefillGroup, listPrefillGroups, savePrefillGroup, type PrefillInput } from "./service.ts";
import * as m from "./model.ts";

export function prefillModule(deps: AppDeps) {
  const admin = { role: ROLE.admin };
  return new Elysia({ prefix: "/api/prefill_group", tags: ["prefill"] })
    .use(authPlugin(deps))
    .get("/", async ({ query }) => ok(await listPrefillGroups(deps, query.type || undefined)), {
      ...admin,
      query: m.listQuery,
      detail: { summary: "Prefill groups (of models, tags or endpoints)" },
      response: m.groupsReply,
    })
    .post("/", async ({ body }) => ok(await savePrefillGroup(deps, (body ?? {}) as PrefillInput, false)), {
      ...admin,
      body: m.prefillBody,
      detail: { summary: "Create a prefill group" },
      response: m.groupReply,
    })
    .put("/", async ({ body }) => ok(await savePrefillGroup(deps, (body ?? {}) as PrefillInput, true)), {
      ...admin,
      body: m.prefillBody,
      detail: { summary: "Update a prefill group" },
      response: m.groupReply,
    })
    .delete(
      "/:id",
      async ({ params }) => {
        const id = Number(params.id);
        if (!Number.isInteger(id) || id < 1) throw badRequest("id must be a positive integer");
        await deletePrefillGroup(deps, id);
        return ok();
      },
      { ...admin, params: m.idParam, detail: { summary: "Delete a prefill group" }, response: m.deletedReply },
    );
}
