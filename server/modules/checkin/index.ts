// new-api's check-in routes: GET /api/user/checkin?month=YYYY-MM (status and the month's days), POST to check in.
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok } from "../../http/envelope.ts";
import { ROLE } from "../../catalogue/index.ts";
import { checkIn, checkinStatus } from "./service.ts";
import { envelope, loose } from "../../http/schema.ts";

const statusReply = envelope(
  loose({
    enabled: t.Boolean(),
    min_quota: t.Integer({ description: "smallest award" }),
    max_quota: t.Integer({ description: "largest award" }),
    stats: loose({
      total_quota: t.Integer(),
      total_checkins: t.Integer(),
      checkin_count: t.Integer({ description: "in the month asked for" }),
      checked_in_today: t.Boolean(),
      records: t.Array(loose({ checkin_date: t.String({ description: "YYYY-MM-DD" }), quota_awarded: t.Integer() })),
    }),
  }),
);
const checkInReply = envelope(
  loose({ quota_awarded: t.Integer(), checkin_date: t.String({ description: "YYYY-MM-DD" }) }),
);

export function checkinModule(deps: AppDeps) {
  return new Elysia({ prefix: "/api/user", tags: ["checkin"] })
    .use(authPlugin(deps))
    .get("/checkin", async ({ user, query }) => ok(await checkinStatus(deps, user.id, query.month)), {
      role: ROLE.common,
      query: t.Object({ month: t.Optional(t.String({ description: "YYYY-MM" })) }, { additionalProperties: true }),
      detail: { summary: "Check-in status and the month's check-ins" },
      response: statusReply,
    })
    .post("/checkin", async ({ user }) => ok(await checkIn(deps, user), "checked in"), {
      role: ROLE.common,
      detail: { summary: "Check in for today" },
      response: checkInReply,
    });
}
