// Query filters and reply shapes of the log routes.
import { t } from "elysia";
import { envelope, loose, pageOf, pagingQuery } from "../../http/schema.ts";

export const str = (description: string) => t.Optional(t.String({ description }));
/** The time range filter of logs, the dashboard and task lists. */
export const timeRange = {
  start_timestamp: str("unix seconds, from"),
  end_timestamp: str("unix seconds, to"),
};

/** The filters the console sends; username and channel count for admins only. Other keys are ignored. */
export const logQuery = loose({
  ...pagingQuery,
  type: str("log type: 1 top-up, 2 consume, 3 manage, 4 system, 5 error, 6 refund"),
  token_name: str("token name"),
  model_name: str("model name"),
  group: str("group"),
  username: str("user name (admins)"),
  channel: str("channel id (admins)"),
  request_id: str("the request id the call was answered under"),
  upstream_request_id: str("the request id the upstream gave"),
  ...timeRange,
});

/** DELETE /api/log/?target_timestamp=: logs older than it are removed. */
export const deleteQuery = loose({ target_timestamp: str("unix seconds: logs created before are removed") });

const opt = <T extends ReturnType<typeof t.Integer> | ReturnType<typeof t.String> | ReturnType<typeof t.Boolean>>(
  s: T,
) => t.Optional(s);
/** One log row (non-admins see channel 0 and no admin_info in `other`). */
export const logView = loose(
  {
    id: opt(t.Integer()),
    user_id: opt(t.Integer()),
    created_at: opt(t.Integer({ description: "unix seconds" })),
    type: opt(t.Integer()),
    content: opt(t.String()),
    username: opt(t.String()),
    token_name: opt(t.String()),
    model_name: opt(t.String()),
    quota: opt(t.Integer()),
    prompt_tokens: opt(t.Integer()),
    completion_tokens: opt(t.Integer()),
    use_time: opt(t.Integer({ description: "seconds" })),
    is_stream: opt(t.Boolean()),
    channel: opt(t.Integer()),
    channel_name: opt(t.String()),
    group: opt(t.String()),
    other: opt(t.String({ description: "JSON text: ratios, cache and fallback details" })),
    request_id: opt(t.String()),
    upstream_request_id: opt(t.String()),
  },
  { description: "a log row" },
);
export const logPage = pageOf(logView);
export const statReply = envelope(
  loose({
    quota: t.Number({ description: "consumption summed over the filters" }),
    rpm: t.Number({ description: "consumption requests in the last 60 seconds" }),
    tpm: t.Number({ description: "tokens in the last 60 seconds" }),
  }),
);
export const deletedReply = envelope(t.Integer({ description: "how many logs were removed" }));
