// The public pricing table (spec 001 §2 Pricing page, §3 Pricing entry): every model some enabled channel
// serves, how it is billed, and the groups that may use it; plus the viewer's group ratios.
import type { AppDeps } from "../../deps.ts";
import { DEFAULT_GROUP } from "../../catalogue/index.ts";
import { DEFAULT_GROUP_RATIO, DEFAULT_USER_USABLE_GROUPS } from "../../catalogue/ratios.ts";

export interface PricingEntry {
  model_name: string;
  /** 1: a fixed price per request (model_price, dollars); 0: per token (model_ratio, completion_ratio). */
  quota_type: 0 | 1;
  model_ratio: number;
  model_price: number;
  completion_ratio: number;
  enable_groups: string[];
}

export async function pricing(deps: AppDeps, viewerGroup: string | null) {
  const o = deps.options;
  const modelRatio = o.json<Record<string, number>>("ModelRatio", {});
  const completionRatio = o.json<Record<string, number>>("CompletionRatio", {});
  const modelPrice = o.json<Record<string, number>>("ModelPrice", {});
  const allRatios = o.json<Record<string, number>>("GroupRatio", DEFAULT_GROUP_RATIO);
  const usable = o.json<Record<string, string>>("UserUsableGroups", DEFAULT_USER_USABLE_GROUPS);

  const abilities = await deps.db
    .selectFrom("abilities")
    .select(["model", "group"])
    .where("enabled", "=", true)
    .execute();
  const groupsOf = new Map<string, Set<string>>();
  for (const a of abilities) {
    const set = groupsOf.get(a.model) ?? new Set<string>();
    set.add(a.group);
    groupsOf.set(a.model, set);
  }
  const data: PricingEntry[] = [...groupsOf.keys()].sort().map((model) => {
    const fixed = modelPrice[model];
    const perRequest = typeof fixed === "number";
    return {
      model_name: model,
      quota_type: perRequest ? 1 : 0,
      model_ratio: perRequest ? 0 : (modelRatio[model] ?? 0),
      model_price: perRequest ? fixed : 0,
      completion_ratio: perRequest ? 0 : (completionRatio[model] ?? 1),
      enable_groups: [...groupsOf.get(model)!].sort(),
    };
  });

  // A guest sees what a new account in the default group would see.
  const group = viewerGroup || DEFAULT_GROUP;
  const usableGroup: Record<string, string> = { ...usable };
  if (!(group in usableGroup)) usableGroup[group] = group;
  const groupRatio: Record<string, number> = {};
  for (const g of Object.keys(usableGroup)) groupRatio[g] = typeof allRatios[g] === "number" ? allRatios[g] : 1;
  return { data, group_ratio: groupRatio, usable_group: usableGroup, group };
}
