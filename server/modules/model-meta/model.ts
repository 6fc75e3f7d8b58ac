// Request shapes of the model metadata and vendor routes. The service reads and checks every field (its
// messages name a bad one), so these schemas only describe: numbers may come as numeric strings, text as null.
import { t } from "elysia";
import { anyReply, envelope, idPathParam, loose, numberish, pageOf, pagingQuery, text } from "../../http/schema.ts";

const opt = t.Optional;

export const modelBody = t.Optional(
  loose({
    id: opt(numberish("required to update")),
    model_name: opt(text("the model name or name pattern (at most 128 characters)")),
    description: opt(text()),
    icon: opt(text()),
    tags: opt(text("comma-separated")),
    vendor_id: opt(numberish()),
    endpoints: opt(text("JSON text: the endpoint kinds it serves")),
    status: opt(numberish("1 enabled, 0 disabled")),
    sync_official: opt(numberish("1: keep in sync with the official list")),
    name_rule: opt(numberish("0 exact, 1 prefix, 2 contains, 3 suffix")),
  }),
);

export const vendorBody = t.Optional(
  loose({
    id: opt(numberish("required to update")),
    name: opt(text("at most 128 characters")),
    description: opt(text()),
    icon: opt(text()),
    status: opt(numberish("1 enabled, 0 disabled")),
  }),
);

export const listQuery = loose({
  ...pagingQuery,
  keyword: opt(t.String({ description: "search in names and descriptions" })),
  vendor: opt(t.String({ description: "vendor id or name" })),
});
export const updateQuery = loose({ status_only: opt(t.String({ description: "true: only the status changes" })) });
export const idParam = idPathParam;
export const listReply = pageOf();
export const itemReply = anyReply;
export const deletedReply = envelope(t.Null({ description: "absent" }));
