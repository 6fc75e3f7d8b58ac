// Helpers of the per-token limit tests (token-limits*.test.ts).
import type { RelayFixture } from "./fixtures.ts";
import { invalidateRelayCaches } from "../../server/relay/state.ts";

/** Sets limit columns on a token row directly and drops the relay's cached copy. */
export async function setLimits(fx: RelayFixture, tokenId: number, fields: Record<string, number | string>) {
  await fx.ctx.deps.db
    .updateTable("tokens")
    .set(fields as any)
    .where("id", "=", tokenId)
    .execute();
  invalidateRelayCaches(fx.ctx.deps);
}

/** Reads a response to its end; its status. */
export async function status(res: Response) {
  await res.arrayBuffer();
  return res.status;
}
