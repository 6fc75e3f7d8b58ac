// Per-token limits and budgets: rpm_limit, tpm_limit, concurrency_limit, budget_quota,
// budget_period, budget_used and budget_reset_at on tokens, all 0 / '' (no limit) on existing rows. The columns
// are defined with the table in tables.ts; this adds them to databases made before, new-api's included (its
// gorm leaves columns it does not know alone). Idempotent: several instances may start at once.
import type { Kysely } from "kysely";
import { up as reconcileSchema } from "./0001_init.ts";

export const TOKEN_LIMIT_COLUMNS = [
  "rpm_limit",
  "tpm_limit",
  "concurrency_limit",
  "budget_quota",
  "budget_period",
  "budget_used",
  "budget_reset_at",
];

export async function up(db: Kysely<any>): Promise<void> {
  const tokens = (await db.introspection.getTables()).find((t) => t.name === "tokens");
  if (!tokens || TOKEN_LIMIT_COLUMNS.some((c) => !tokens.columns.some((have) => have.name === c)))
    await reconcileSchema(db);
}

export async function down(): Promise<void> {}
