import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { pricing } from "./service.ts";
import { pricingReply } from "./model.ts";

export function pricingModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api", tags: ["pricing"] }).use(authPlugin(deps)).get(
    "/pricing",
    async ({ viewer }) => {
      const { data, group_ratio, usable_group } = await pricing(deps, viewer?.group ?? null);
      return { success: true, message: "", data, group_ratio, usable_group };
    },
    {
      viewer: true,
      detail: { summary: "Model prices and the group ratios the caller may use" },
      response: pricingReply,
    },
  );
}
