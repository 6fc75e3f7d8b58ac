// new-api's model metadata and vendor routes (admin). GET /api/models/ (trailing slash) is answered through the
// console list module's GET /api/models, which keeps the spec's channel-type map for the path without it.
// Paths are written without a trailing slash (each also answers with one): Elysia loses the other modules'
// GET /api/models when one module registers "/models/".
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok, paging } from "../../http/envelope.ts";
import { badRequest } from "../../http/errors.ts";
import { ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import * as m from "./model.ts";

const id = (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw badRequest("id must be a positive integer");
  return n;
};

export function modelMetaModule(deps: AppDeps) {
  // Per app: Elysia keeps what it resolves for a route on its hook object, so one shared object would carry
  // the first app's session lookup into every other app of the process.
  const admin = { role: ROLE.admin };
  return new Elysia({ prefix: "/api", tags: ["model-meta"] })
    .use(authPlugin(deps))
    .get(
      "/models/search",
      async ({ query }) =>
        ok(await svc.listModels(deps, { ...paging(query), keyword: query.keyword, vendor: query.vendor })),
      {
        ...admin,
        query: m.listQuery,
        detail: { summary: "List and search model metadata" },
        response: m.listReply,
      },
    )
    .get("/models/missing", async () => ok(await svc.missingModels(deps)), {
      ...admin,
      detail: { summary: "Models used by channels but without metadata" },
      response: m.itemReply,
    })
    .get("/models/:id", async ({ params }) => ok(await svc.getModel(deps, id(params.id))), {
      ...admin,
      params: m.idParam,
      detail: { summary: "One model's metadata" },
      response: m.itemReply,
    })
    .post("/models", async ({ body }) => ok(await svc.saveModel(deps, (body ?? {}) as svc.ModelInput, false)), {
      ...admin,
      body: m.modelBody,
      detail: { summary: "Create model metadata" },
      response: m.itemReply,
    })
    .put(
      "/models",
      async ({ body, query }) =>
        ok(await svc.saveModel(deps, (body ?? {}) as svc.ModelInput, true, query.status_only === "true")),
      {
        ...admin,
        body: m.modelBody,
        query: m.updateQuery,
        detail: { summary: "Update model metadata (or only its status)" },
        response: m.itemReply,
      },
    )
    .delete(
      "/models/:id",
      async ({ params }) => {
        await svc.deleteModel(deps, id(params.id));
        return ok();
      },
      { ...admin, params: m.idParam, detail: { summary: "Delete model metadata" }, response: m.deletedReply },
    )
    .get("/vendors", async ({ query }) => ok(await svc.listVendors(deps, paging(query))), {
      ...admin,
      query: m.listQuery,
      detail: { summary: "List vendors" },
      response: m.listReply,
    })
    .get(
      "/vendors/search",
      async ({ query }) => ok(await svc.listVendors(deps, { ...paging(query), keyword: query.keyword })),
      {
        ...admin,
        query: m.listQuery,
        detail: { summary: "Search vendors" },
        response: m.listReply,
      },
    )
    .get("/vendors/:id", async ({ params }) => ok(svc.vendorView(await svc.getVendor(deps, id(params.id)))), {
      ...admin,
      params: m.idParam,
      detail: { summary: "One vendor" },
      response: m.itemReply,
    })
    .post("/vendors", async ({ body }) => ok(await svc.saveVendor(deps, (body ?? {}) as svc.VendorInput, false)), {
      ...admin,
      body: m.vendorBody,
      detail: { summary: "Create a vendor" },
      response: m.itemReply,
    })
    .put("/vendors", async ({ body }) => ok(await svc.saveVendor(deps, (body ?? {}) as svc.VendorInput, true)), {
      ...admin,
      body: m.vendorBody,
      detail: { summary: "Update a vendor" },
      response: m.itemReply,
    })
    .delete(
      "/vendors/:id",
      async ({ params }) => {
        await svc.deleteVendor(deps, id(params.id));
        return ok();
      },
      { ...admin, params: m.idParam, detail: { summary: "Delete a vendor" }, response: m.deletedReply },
    );
}

/** GET /api/models/ with the trailing slash: new-api's metadata list (the lists module hands it over). */
export const modelMetaList = (deps: AppDeps, query: Record<string, string | undefined>) =>
  svc.listModels(deps, { ...paging(query), vendor: query.vendor });
