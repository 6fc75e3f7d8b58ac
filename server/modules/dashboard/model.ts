import { loose } from "../../http/schema.ts";
import { str, timeRange } from "../log/model.ts";

/** GET /api/data/: time range, user and bucket size. */
export const dataQuery = loose({
  ...timeRange,
  username: str("user name (admins)"),
  granularity: str("hour, day or week"),
  default_time: str("the console's name for granularity"),
});
