import { t } from "elysia";
import { loose, numberish } from "../../http/schema.ts";

/** POST /api/ratio_sync/fetch: read the price tables of other sites (upstreams) or of channels (channel_ids). */
export const fetchBody = t.Optional(
  loose({
    upstreams: t.Optional(
      t.Union(
        [
          t.Array(
            loose({
              id: t.Optional(t.Any()),
              name: t.Optional(t.Any()),
              base_url: t.Optional(t.Any({ description: "http(s) address of the other site" })),
              endpoint: t.Optional(t.Any({ description: "path to read, /api/ratio_config by default" })),
            }),
          ),
          t.Null(),
        ],
        { description: "sites to read (at most 20); overrides channel_ids" },
      ),
    ),
    channel_ids: t.Optional(t.Union([t.Array(t.Any()), t.Null()], { description: "channels whose base URL to read" })),
    timeout: t.Optional(numberish("seconds, 1 to 60 (default 10)")),
  }),
);
