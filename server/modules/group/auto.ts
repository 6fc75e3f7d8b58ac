// new-api's group options: auto groups (AutoGroups, DefaultUseAutoGroup) and group × group ratios (GroupGroupRatio).
// A token of group "auto" is routed in the first group of AutoGroups, in that order, that the user may use and
// that has a channel for the model; the call is then priced and logged in that group. GroupGroupRatio
// {"<user group>": {"<group used>": ratio}} replaces GroupRatio for users of one group calling in another.
import type { OptionStore } from "../option/store.ts";
import type { User } from "../../../db/schema.ts";

export const AUTO_GROUP = "auto";

/** The groups an "auto" call may land in for a user, in AutoGroups order. */
export function autoGroupsFor(
  options: OptionStore,
  usable: (user: Pick<User, "group">) => string[],
  userGroup: string,
): string[] {
  const allowed = new Set(usable({ group: userGroup }));
  return options
    .json<unknown[]>("AutoGroups", [])
    .filter((g): g is string => typeof g === "string" && g !== AUTO_GROUP && allowed.has(g));
}

/** The first auto group that serves the model (`serves(group)`), or null when none does. */
export function pickAutoGroup(
  options: OptionStore,
  usable: (user: Pick<User, "group">) => string[],
  userGroup: string,
  serves: (group: string) => boolean,
): string | null {
  return autoGroupsFor(options, usable, userGroup).find(serves) ?? null;
}

/** The ratio a user of `userGroup` pays for a call in `group`: GroupGroupRatio when it has the pair, else GroupRatio (1 when unset). */
export function groupRatioFor(options: OptionStore, group: string, userGroup?: string): number {
  const ok = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
  if (userGroup) {
    const special = options.json<Record<string, Record<string, unknown>>>("GroupGroupRatio", {})[userGroup]?.[group];
    if (ok(special)) return special;
  }
  const ratio = options.json<Record<string, unknown>>("GroupRatio", {})[group];
  return ok(ratio) ? ratio : 1;
}
