// Numbered migrations, inlined so they are compiled into the binary (no folder scan at run time).
import type { Migration } from "kysely/migration";
import * as m0001 from "./0001_init.ts";
import * as m0002 from "./0002_newapi_rows.ts";
import * as m0003 from "./0003_token_limits.ts";
import * as m0004 from "./0004_response_cache.ts";
import * as m0005 from "./0005_username_case.ts";

export const migrations: Record<string, Migration> = {
  "0001_init": m0001,
  "0002_newapi_rows": m0002,
  "0003_token_limits": m0003,
  "0004_response_cache": m0004,
  "0005_username_case": m0005,
};
