// new-api's pricing exchange routes: GET /api/ratio_config (public while ExposeRatioEnabled is on) and the super
// admin's GET /api/ratio_sync/channels, POST /api/ratio_sync/fetch.
import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { ROLE } from "../../catalogue/index.ts";
import { fetchUpstreamRatios, ratioConfig, syncableChannels, type SyncRequest } from "./service.ts";
import { anyReply } from "../../http/schema.ts";
import { fetchBody } from "./model.ts";

export function ratioSyncModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api", tags: ["ratio-sync"] })
    .use(authPlugin(deps))
    .get("/ratio_config", () => ok(ratioConfig(deps)), {
      detail: { summary: "This site's price ratios (when ExposeRatioEnabled)" },
      response: anyReply,
    })
    .get("/ratio_sync/channels", async () => ok(await syncableChannels(deps)), {
      role: ROLE.root,
      detail: { summary: "Channels whose site's ratios can be read" },
      response: anyReply,
    })
    .post("/ratio_sync/fetch", async ({ body }) => ok(await fetchUpstreamRatios(deps, (body ?? {}) as SyncRequest)), {
      role: ROLE.root,
      body: fetchBody,
      detail: { summary: "Read the price ratios of other sites or channels" },
      response: anyReply,
    });
}
