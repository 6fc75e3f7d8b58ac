import { t } from "elysia";

const str = (field: string) => t.Optional(t.Union([t.String(), t.Null()], { error: `${field} must be a string` }));
const list = (field: string) => t.Optional(t.Union([t.String(), t.Array(t.String()), t.Null()], { error: `${field} must be a comma-separated string or a list of strings` }));
/** Numbers arrive as numbers or numeric strings from the form; the service parses and names bad ones. */
const numeric = t.Optional(t.Any());

/** One body for create and update (update needs id). new-api's {mode, channel: {...}} wrapper is accepted too. */
export const channelBody = t.Object({
  id: t.Optional(t.Integer({ minimum: 1, error: "id must be a positive integer" })),
  type: numeric,
  key: str("key"),
  name: str("name"),
  openai_organization: str("openai_organization"),
  test_model: str("test_model"),
  status: numeric,
  weight: numeric,
  priority: numeric,
  base_url: str("base_url"),
  other: str("other"),
  models: list("models"),
  group: list("group"),
  model_mapping: str("model_mapping"),
  status_code_mapping: str("status_code_mapping"),
  auto_ban: numeric,
  tag: str("tag"),
  setting: str("setting"),
  param_override: str("param_override"),
  max_input_tokens: numeric,
  mode: t.Optional(t.String({ error: "mode must be single, batch or multi_to_single" })),
  multi_key_mode: t.Optional(t.String({ error: "multi_key_mode must be polling or random" })),
  key_mode: t.Optional(t.String({ error: "key_mode must be replace or append" })),
  channel: t.Optional(t.Record(t.String(), t.Any(), { error: "channel must be an object" })),
}, { additionalProperties: true });

export const listQuery = t.Object({
  p: t.Optional(t.String()),
  page_size: t.Optional(t.String()),
  size: t.Optional(t.String()),
  id_sort: t.Optional(t.String()),
  tag_mode: t.Optional(t.String()),
  keyword: t.Optional(t.String()),
  group: t.Optional(t.String()),
  model: t.Optional(t.String()),
  status: t.Optional(t.String()),
  type: t.Optional(t.String()),
}, { additionalProperties: true });

export const idParam = t.Object({ id: t.Numeric({ minimum: 1, error: "id must be a positive integer" }) });

export const idsBody = t.Object({ ids: t.Optional(t.Any()) }, { additionalProperties: true });

export const batchTagBody = t.Object({
  ids: t.Optional(t.Any()),
  tag: t.Optional(t.Union([t.String(), t.Null()], { error: "tag must be a string or null" })),
}, { additionalProperties: true });

export const tagBody = t.Object({ tag: t.Optional(t.String({ error: "tag must be a string" })) }, { additionalProperties: true });

export const tagEditBody = t.Object({
  tag: t.Optional(t.String({ error: "tag must be a string" })),
  new_tag: str("new_tag"),
  model_mapping: str("model_mapping"),
  groups: list("groups"),
  models: list("models"),
  priority: numeric,
  weight: numeric,
}, { additionalProperties: true });

export const testQuery = t.Object({ model: t.Optional(t.String()) }, { additionalProperties: true });
/** Progress of a test-all or update-all run: `since` skips the per-channel results already read. */
export const progressQuery = t.Object({ since: t.Optional(t.String()) }, { additionalProperties: true });

export const fetchModelsBody = t.Object({
  base_url: t.Optional(t.String({ error: "base_url must be a string" })),
  type: t.Optional(t.Numeric({ error: "type must be a number" })),
  key: t.Optional(t.String({ error: "key must be a string" })),
}, { additionalProperties: true });

/** POST /api/channel/{id}/key: a fresh proof, unless the session passed POST /api/verify moments ago. */
export const keyViewBody = t.Optional(t.Object({
  password: t.Optional(t.String({ error: "password must be a string" })),
  code: t.Optional(t.Union([t.String(), t.Number()], { error: "code must be a string" })),
}, { additionalProperties: true }));

export const copyQuery = t.Object({ suffix: t.Optional(t.String()), reset_balance: t.Optional(t.String()) }, { additionalProperties: true });

export const tagQuery = t.Object({ tag: t.Optional(t.String()) }, { additionalProperties: true });
