import { t } from "elysia";
import { envelope, idPathParam, loose, numberish, text } from "../../http/schema.ts";

/** A prefill group: a named list of models, tags or endpoints the console's forms offer. */
export const prefillBody = t.Optional(
  loose({
    id: t.Optional(numberish("required to update")),
    name: t.Optional(text()),
    type: t.Optional(text("model, tag or endpoint")),
    items: t.Optional(t.Any({ description: "the list: a JSON array (or its text)" })),
    description: t.Optional(text()),
  }),
);
export const listQuery = loose({
  type: t.Optional(t.String({ description: "model, tag or endpoint; all when absent" })),
});
export const idParam = idPathParam;

const group = loose(
  {
    id: t.Integer(),
    name: t.String(),
    type: t.String(),
    items: t.Any(),
    description: t.String(),
    created_time: t.Integer(),
    updated_time: t.Integer(),
  },
  { description: "a prefill group" },
);
export const groupsReply = envelope(t.Array(group));
export const groupReply = envelope(t.Any({ description: "the saved group" }));
export const deletedReply = envelope(t.Null({ description: "absent" }));
