import { t } from "elysia";
import { envelope, loose } from "../../http/schema.ts";
import { str, timeRange } from "../log/model.ts";

/** GET /api/data/: time range, user and bucket size. */
export const dataQuery = loose({
  ...timeRange,
  username: str("user name (admins)"),
  granularity: str("hour, day or week"),
  default_time: str("the console's name for granularity"),
});

/** One bucket per model and time step, oldest first (new-api's quota_data rows). */
export const dataReply = envelope(
  t.Array(
    loose({
      model_name: t.String(),
      created_at: t.Integer({ description: "unix seconds: the start of the bucket" }),
      token_used: t.Integer(),
      count: t.Integer({ description: "requests" }),
      quota: t.Integer(),
    }),
  ),
);

/** GET /api/data/users: one row per user and recorded hour. */
export const dataByUserReply = envelope(
  t.Array(
    t.Object({
      username: t.String(),
      created_at: t.Integer({ description: "unix seconds, the hour's start" }),
      token_used: t.Number(),
      count: t.Number(),
      quota: t.Number(),
    }),
  ),
);

/** GET /api/data/tokens, /api/data/self/tokens: one row per token, model and hour. */
export const dataByTokenReply = envelope(
  t.Array(
    t.Object({
      user_id: t.Integer(),
      username: t.String(),
      token_id: t.Integer(),
      token_name: t.String(),
      model_name: t.String(),
      created_at: t.Integer({ description: "unix seconds, the hour's start" }),
      token_used: t.Number(),
      count: t.Number(),
      quota: t.Number(),
    }),
  ),
);
