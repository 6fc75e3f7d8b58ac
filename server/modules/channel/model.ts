import { t, type TSchema } from "elysia";
import { envelope, int, loose, pageOf, pagingQuery } from "../../http/schema.ts";
import { BIGINT_COLUMN, INT_COLUMN, within } from "../../http/numbers.ts";

const str = (field: string) => t.Optional(t.Union([t.String(), t.Null()], { error: `${field} must be a string` }));
const list = (field: string) =>
  t.Optional(
    t.Union([t.String(), t.Array(t.String()), t.Null()], {
      error: `${field} must be a comma-separated string or a list of strings`,
    }),
  );
/** Numbers arrive as numbers or numeric strings from the form (null or "" for unset); each fits its column. */
const numeric = (field: string, range = INT_COLUMN) => t.Optional(int(field, range, { blank: true }));
const priority = numeric("priority", BIGINT_COLUMN);
const weight = numeric("weight", within(BIGINT_COLUMN, 0));

const channelFields = {
  id: t.Optional(t.Integer({ minimum: 1, maximum: INT_COLUMN.max, error: "id must be a positive integer" })),
  type: numeric("type"),
  key: str("key"),
  name: str("name"),
  openai_organization: str("openai_organization"),
  test_model: str("test_model"),
  status: numeric("status"),
  weight,
  priority,
  base_url: str("base_url"),
  other: str("other"),
  models: list("models"),
  group: list("group"),
  model_mapping: str("model_mapping"),
  status_code_mapping: str("status_code_mapping"),
  auto_ban: t.Optional(
    t.Union([int("auto_ban", INT_COLUMN, { blank: true }), t.Boolean()], {
      error: "auto_ban must be 1 or 0 (or true or false)",
    }),
  ),
  tag: str("tag"),
  setting: str("setting"),
  param_override: str("param_override"),
  max_input_tokens: numeric("max_input_tokens", within(INT_COLUMN, 0)),
  mode: t.Optional(t.String({ error: "mode must be single, batch or multi_to_single" })),
  multi_key_mode: t.Optional(t.String({ error: "multi_key_mode must be polling or random" })),
  key_mode: t.Optional(t.String({ error: "key_mode must be replace or append" })),
};

/** One body for create and update (update needs id). new-api's {mode, channel: {...}} wrapper is accepted too. */
export const channelBody = t.Object(
  {
    ...channelFields,
    channel: t.Optional(t.Object(channelFields, { additionalProperties: true, error: "channel must be an object" })),
  },
  { additionalProperties: true },
);

export const listQuery = t.Object(
  {
    ...pagingQuery,
    id_sort: t.Optional(t.String({ description: "true: by id instead of priority" })),
    tag_mode: t.Optional(t.String({ description: "true: one row per tag" })),
    keyword: t.Optional(
      t.String({ description: "part of the name, base URL, tag or models, or the id (never the key)" }),
    ),
    group: t.Optional(t.String({ description: "only channels of this group" })),
    model: t.Optional(t.String({ description: "only channels serving this model" })),
    status: t.Optional(t.String({ description: "1 enabled, 2 disabled by hand, 3 disabled automatically" })),
    type: t.Optional(t.String({ description: "channel type id" })),
  },
  { additionalProperties: true },
);

export const idParam = t.Object({ id: t.Numeric({ minimum: 1, error: "id must be a positive integer" }) });

export const idsBody = t.Object({ ids: t.Optional(t.Any()) }, { additionalProperties: true });

export const batchTagBody = t.Object(
  {
    ids: t.Optional(t.Any()),
    tag: t.Optional(t.Union([t.String(), t.Null()], { error: "tag must be a string or null" })),
  },
  { additionalProperties: true },
);

export const tagBody = t.Object(
  { tag: t.Optional(t.String({ error: "tag must be a string" })) },
  { additionalProperties: true },
);

export const tagEditBody = t.Object(
  {
    tag: t.Optional(t.String({ error: "tag must be a string" })),
    new_tag: str("new_tag"),
    model_mapping: str("model_mapping"),
    groups: list("groups"),
    models: list("models"),
    priority,
    weight,
  },
  { additionalProperties: true },
);

export const testQuery = t.Object({ model: t.Optional(t.String()) }, { additionalProperties: true });
/** Progress of a test-all or update-all run: `since` skips the per-channel results already read. */
export const progressQuery = t.Object({ since: t.Optional(t.String()) }, { additionalProperties: true });

export const fetchModelsBody = t.Object(
  {
    base_url: t.Optional(t.String({ error: "base_url must be a string" })),
    type: t.Optional(t.Numeric({ error: "type must be a number" })),
    key: t.Optional(t.String({ error: "key must be a string" })),
  },
  { additionalProperties: true },
);

/** POST /api/channel/{id}/key: a fresh proof, unless the session passed POST /api/verify moments ago. */
export const keyViewBody = t.Optional(
  t.Object(
    {
      password: t.Optional(t.String({ error: "password must be a string" })),
      code: t.Optional(t.Union([t.String(), t.Number()], { error: "code must be a string" })),
    },
    { additionalProperties: true },
  ),
);

export const copyQuery = t.Object(
  { suffix: t.Optional(t.String()), reset_balance: t.Optional(t.String()) },
  { additionalProperties: true },
);

export const tagQuery = t.Object({ tag: t.Optional(t.String()) }, { additionalProperties: true });

const lenientInt = (description: string) => t.Union([t.Integer(), t.String(), t.Null()], { description });

/** POST /api/channel/multi_key/manage (new-api): one action on one key of a multi-key channel. */
export const multiKeyBody = t.Object(
  {
    channel_id: t.Optional(t.Integer({ error: "channel_id is required" })),
    action: t.Optional(
      t.String({
        description:
          "get_key_status, enable_key, disable_key, delete_key, enable_all_keys, disable_all_keys or delete_disabled_keys",
      }),
    ),
    key_index: t.Optional(t.Integer({ error: "key_index is out of range" })),
    // Read leniently by the service (a bad page is page 1, a null status is every key): any of these is accepted.
    page: t.Optional(lenientInt("page of keys, from 1 (default 1)")),
    page_size: t.Optional(lenientInt("keys per page (default 50, at most 500)")),
    status: t.Optional(
      lenientInt("only keys in this status: 1 enabled, 2 disabled by hand, 3 disabled automatically; null for all"),
    ),
  },
  { additionalProperties: true },
);

const opt = <T extends TSchema>(s: T) => t.Optional(s);
/** A channel as the admin sees it (the key left out of lists); more fields are sent. */
export const channelView = loose(
  {
    id: opt(t.Integer()),
    type: opt(t.Integer({ description: "channel type (GET /api/channel/ types: see the console's catalogue)" })),
    name: opt(t.String()),
    status: opt(t.Integer({ description: "1 enabled, 2 disabled by hand, 3 disabled automatically" })),
    base_url: opt(t.Union([t.String(), t.Null()])),
    models: opt(t.String({ description: "comma-separated" })),
    group: opt(t.String({ description: "comma-separated" })),
    priority: opt(t.Union([t.Integer(), t.Null()])),
    weight: opt(t.Union([t.Integer(), t.Null()])),
    tag: opt(t.Union([t.String(), t.Null()])),
    balance: opt(t.Number()),
    used_quota: opt(t.Integer()),
    response_time: opt(t.Integer({ description: "ms, last test" })),
    key_count: opt(t.Integer()),
  },
  { description: "a channel" },
);
export const channelPage = pageOf(channelView);
export const channelReply = envelope(channelView);
/** GET /api/channel/test/{id}: one-api's shape, time at the top level. */
export const testReply = envelope(t.Null({ description: "absent" }), "the test's outcome", {
  time: t.Optional(t.Number({ description: "seconds" })),
});
/** GET /api/channel/update_balance/{id}: one-api's balance at the top level, new-api's in data. */
export const balanceReply = envelope(loose({ balance: t.Number() }), "the channel's balance", {
  balance: t.Optional(t.Number()),
});
export const modelsReply = envelope(t.Array(t.String()), "model names");

const runFields = {
  running: t.Boolean(),
  total: t.Integer(),
  done: t.Integer(),
  failed: t.Integer(),
  started_at: t.Integer({ description: "unix seconds" }),
  finished_at: t.Integer({ description: "unix seconds, 0 while running" }),
};
/** GET /api/channel/test and /test/progress: the background run of every channel's test (null before the first). */
export const testRunReply = envelope(
  t.Union(
    [
      loose({
        ...runFields,
        succeeded: t.Integer(),
        results: t.Array(
          loose({
            id: t.Integer(),
            name: t.String(),
            success: t.Boolean(),
            message: t.String(),
            time: t.Number({ description: "seconds" }),
            response_time: t.Integer({ description: "ms" }),
            test_time: t.Integer({ description: "unix seconds" }),
            status: t.Integer({ description: "the channel's status after the test" }),
          }),
          { description: "in the order the tests finished; ?since=N leaves out the first N" },
        ),
      }),
      t.Null(),
    ],
    { description: "the run, or null before the first" },
  ),
);
/** GET /api/channel/update_balance and /update_balance/progress: the background balance refresh (null before the first). */
export const balanceRunReply = envelope(
  t.Union(
    [
      loose({
        ...runFields,
        updated: t.Integer(),
        skipped: t.Integer({ description: "channel types without a balance API" }),
        results: t.Array(
          loose({
            id: t.Integer(),
            name: t.String(),
            success: t.Boolean(),
            balance: t.Optional(t.Number()),
            skipped: t.Optional(t.Boolean()),
          }),
          {
            description: "in the order the channels were done; ?since=N leaves out the first N",
          },
        ),
      }),
      t.Null(),
    ],
    { description: "the run, or null before the first" },
  ),
);
