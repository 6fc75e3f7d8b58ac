import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { envelope, okReply } from "../../http/schema.ts";
import { ROLE } from "../../catalogue/index.ts";
import { listOptions, resetModelRatios, updateOption } from "./service.ts";
import { followOptionChanges } from "./events.ts";

/** Every option as {key, value} (secrets left out). */
const optionsReply = envelope(t.Array(t.Object({ key: t.String(), value: t.String({ description: "the value as text (JSON options too)" }) }, { additionalProperties: true })));

const putBody = t.Object({
  key: t.String({ minLength: 1, error: "key is required" }),
  value: t.Union([t.String(), t.Number(), t.Boolean()], { error: "value must be a string" }),
});

export function optionModule(deps: AppDeps) {
  // Every instance hears every other one's option writes at once (not only after SYNC_FREQUENCY).
  followOptionChanges(deps);
  return new Elysia({ prefix: "/api/option", tags: ["option"] })
    .use(authPlugin(deps))
    .get("/", () => ok(listOptions(deps)), { role: ROLE.root, detail: { summary: "Every site option (secrets left out)" }, response: optionsReply })
    .put("/", async ({ body }) => {
      await updateOption(deps, body.key, body.value);
      return ok(undefined, "saved");
    }, { role: ROLE.root, body: putBody, detail: { summary: "Set one site option" }, response: okReply })
    .post("/rest_model_ratio", async () => {
      await resetModelRatios(deps);
      return ok(undefined, "model ratios reset to defaults");
    }, { role: ROLE.root, detail: { summary: "Reset the model ratios to their defaults" }, response: okReply });
}
