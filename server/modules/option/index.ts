import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { envelope, okReply } from "../../http/schema.ts";
import { ROLE } from "../../catalogue/index.ts";
import { confirmPaymentCompliance, listOptions, resetModelRatios, updateOption, updateOptions } from "./service.ts";
import { clientIp } from "../../http/ratelimit.ts";
import { followOptionChanges } from "./events.ts";
import { affinityStats, clearAffinity } from "../../relay/probe.ts";
import { badRequest } from "../../http/errors.ts";

/** Every option as {key, value} (secrets left out). */
const optionsReply = envelope(
  t.Array(
    t.Object(
      { key: t.String(), value: t.String({ description: "the value as text (JSON options too)" }) },
      { additionalProperties: true },
    ),
  ),
);

const affinityStatsReply = envelope(
  t.Object({
    enabled: t.Boolean(),
    total: t.Number(),
    unknown: t.Number({ description: "pins whose rule is unknown or unnamed" }),
    by_rule_name: t.Record(t.String(), t.Number()),
    cache_capacity: t.Number({ description: "0 with Redis" }),
    cache_algo: t.String({ description: "lru, or redis" }),
  }),
);
const affinityClearReply = envelope(t.Object({ deleted: t.Number() }));

const putBody = t.Object({
  key: t.String({ minLength: 1, error: "key is required" }),
  // new-api takes any JSON value and stores its text; a key Switchyard knows checks the value's kind itself
  value: t.Union([t.String(), t.Number(), t.Boolean(), t.Array(t.Any()), t.Record(t.String(), t.Any())], {
    error: "value must be a string",
  }),
});

export function optionModule(deps: AppDeps) {
  // Every instance hears every other one's option writes at once (not only after SYNC_FREQUENCY).
  followOptionChanges(deps);
  return (
    new Elysia({ prefix: "/api/option", tags: ["option"] })
      .use(authPlugin(deps))
      .get("/", () => ok(listOptions(deps)), {
        role: ROLE.root,
        detail: { summary: "Every site option (secrets left out)" },
        response: optionsReply,
      })
      .put(
        "/",
        async ({ body }) => {
          await updateOption(deps, body.key, body.value);
          return ok(undefined, "saved");
        },
        { role: ROLE.root, body: putBody, detail: { summary: "Set one site option" }, response: okReply },
      )
      .put(
        "/bulk",
        async ({ body }) => {
          await updateOptions(deps, body.options);
          return ok(undefined, "saved");
        },
        {
          role: ROLE.root,
          body: t.Object({
            options: t.Array(t.Object({ key: t.String({ minLength: 1, error: "key is required" }), value: t.Any() }), {
              error: "options must be a list of {key, value}",
            }),
          }),
          detail: { summary: "Set several site options at once (all checked before any is written)" },
          response: okReply,
        },
      )
      // new-api's console: the channel affinity pins per rule, and clearing all of them or one rule's.
      .get("/channel_affinity_cache", async () => ok(await affinityStats(deps)), {
        role: ROLE.root,
        detail: { summary: "Channel affinity: pins per rule, and the store's capacity" },
        response: affinityStatsReply,
      })
      .delete(
        "/channel_affinity_cache",
        async ({ query }) => {
          const all = String(query.all ?? "").trim() === "true";
          const rule = String(query.rule_name ?? "").trim();
          if (!all && !rule) throw badRequest("rule_name is required, or all=true to clear every pin");
          const out = await clearAffinity(deps, all ? null : rule);
          if ("error" in out) throw badRequest(out.error);
          return ok(out);
        },
        {
          role: ROLE.root,
          query: t.Object({ all: t.Optional(t.String()), rule_name: t.Optional(t.String()) }),
          detail: { summary: "Channel affinity: clear every pin (all=true) or one rule's (rule_name)" },
          response: affinityClearReply,
        },
      )
      .post(
        "/payment_compliance",
        async ({ user, body, request, server }) => {
          if (body.confirmed !== true) throw badRequest("confirmed must be true to confirm the payment terms");
          await confirmPaymentCompliance(deps, user.id, clientIp(request, server as any, deps.config.trustProxy));
          return ok(undefined, "");
        },
        {
          role: ROLE.root,
          body: t.Object({ confirmed: t.Optional(t.Boolean({ error: "confirmed must be a boolean" })) }),
          detail: {
            summary:
              "Confirm the payment terms (new-api's console; recorded in the payment_setting.compliance_* options)",
          },
          response: okReply,
        },
      )
      .post(
        "/rest_model_ratio",
        async () => {
          await resetModelRatios(deps);
          return ok(undefined, "model ratios reset to defaults");
        },
        { role: ROLE.root, detail: { summary: "Reset the model ratios to their defaults" }, response: okReply },
      )
  );
}
