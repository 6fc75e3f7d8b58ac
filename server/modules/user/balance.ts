// An absolute edit of a balance (an admin setting a user's quota, an owner setting a token's remaining quota) that
// no lease undoes. On PostgreSQL and MySQL an instance pays calls from leases: quota it moved out of the user's
// and token's rows into quota_holds rows ahead of the calls (server/relay/core/ledger.ts). Setting the row's
// quota to V while a lease held some would let the lease's give-back land on top of V (an edit to -5 read back
// as 2,995). So the edit first gives every lease of that balance back, in the same transaction, as the ledger's
// own refund does (the row deleted, its amount added back to the token and the user), then writes V. The balance
// is then V at once and stays V. Calls the leases had already served, or were serving, are still charged: the
// write-behind finds their row gone and charges the balances directly (jobs/writebehind.ts leaseSpend), and
// every instance hears the change and stops giving new calls from the old leases. On SQLite calls are reserved
// in this process's memory and nothing is held in the rows, so the write is all there is.
//
// Locks follow the ledger's order (tokens by id, then the user, then lease rows), so an edit cannot deadlock with
// top-ups, settlements or give-backs.
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { Database } from "../../../db/index.ts";
import { dialectOf } from "../../../db/dialect.ts";

/** Leases of a user (every token), or of one token only. */
export interface BalanceOwner {
  userId: number;
  tokenId?: number;
}

class LeaseAppeared extends Error {}

export async function editBalance(
  deps: AppDeps,
  owner: BalanceOwner,
  write: (trx: Database) => Promise<unknown>,
): Promise<void> {
  if (dialectOf(deps.db) === "sqlite") {
    await write(deps.db);
    return;
  }
  // A top-up for a token not locked yet may commit between the first read and the locks: look again.
  for (let attempt = 0; ; attempt++) {
    try {
      await deps.db.transaction().execute(async (trx) => {
        const holdsOf = (q = trx.selectFrom("quota_holds").where("user_id", "=", owner.userId)) =>
          owner.tokenId === undefined ? q : q.where("token_id", "=", owner.tokenId);
        const seen = await holdsOf().select("token_id").execute();
        const tokens = [
          ...new Set([...seen.map((r) => Number(r.token_id)), owner.tokenId ?? 0].filter((id) => id > 0)),
        ].sort((a, b) => a - b);
        if (tokens.length)
          await trx.selectFrom("tokens").select("id").where("id", "in", tokens).orderBy("id").forUpdate().execute();
        await trx.selectFrom("users").select("id").where("id", "=", owner.userId).forUpdate().execute();
        const rows = await holdsOf().select(["id", "token_id", "amount"]).orderBy("id").forUpdate().execute();
        if (rows.some((r) => Number(r.token_id) > 0 && !tokens.includes(Number(r.token_id)))) throw new LeaseAppeared();
        if (rows.length) {
          await trx
            .deleteFrom("quota_holds")
            .where(
              "id",
              "in",
              rows.map((r) => r.id),
            )
            .execute();
          const perToken = new Map<number, number>();
          let total = 0;
          for (const r of rows) {
            const amount = Number(r.amount);
            total += amount;
            if (Number(r.token_id) > 0)
              perToken.set(Number(r.token_id), (perToken.get(Number(r.token_id)) ?? 0) + amount);
          }
          for (const [id, amount] of [...perToken].sort(([a], [b]) => a - b)) {
            if (amount)
              await trx
                .updateTable("tokens")
                .set({ remain_quota: sql`remain_quota + ${amount}` })
                .where("id", "=", id)
                .execute();
          }
          if (total)
            await trx
              .updateTable("users")
              .set({ quota: sql`quota + ${total}` })
              .where("id", "=", owner.userId)
              .execute();
        }
        await write(trx);
      });
      return;
    } catch (e) {
      if (!(e instanceof LeaseAppeared) || attempt >= 4) throw e;
    }
  }
}

/** What leases hold of each user's balance (PostgreSQL, MySQL): the user's although not in users.quota. */
export async function leasedOfUsers(deps: AppDeps, ids: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (ids.length === 0 || dialectOf(deps.db) === "sqlite") return out;
  const rows = await deps.db
    .selectFrom("quota_holds")
    .select((eb) => ["user_id", eb.fn.sum<number>("amount").as("n")])
    .where("user_id", "in", ids)
    .groupBy("user_id")
    .execute();
  for (const r of rows) out.set(Number(r.user_id), Number(r.n));
  return out;
}

/** Users with their balance as it is (quota plus what leases hold of it): what an admin sees and edits. */
export async function withLeased<U extends { id: number; quota: number }>(deps: AppDeps, users: U[]): Promise<U[]> {
  const leased = await leasedOfUsers(
    deps,
    users.map((u) => u.id),
  );
  return leased.size
    ? users.map((u) => (leased.has(u.id) ? { ...u, quota: Number(u.quota) + leased.get(u.id)! } : u))
    : users;
}

/** Tokens with their remaining quota as it is (plus what leases hold of it): what the owner sees and edits. */
export async function withLeasedTokens<T extends { id: number; remain_quota: number }>(
  deps: AppDeps,
  tokens: T[],
): Promise<T[]> {
  if (tokens.length === 0 || dialectOf(deps.db) === "sqlite") return tokens;
  const rows = await deps.db
    .selectFrom("quota_holds")
    .select((eb) => ["token_id", eb.fn.sum<number>("amount").as("n")])
    .where(
      "token_id",
      "in",
      tokens.map((t) => t.id),
    )
    .groupBy("token_id")
    .execute();
  const leased = new Map(rows.map((r) => [Number(r.token_id), Number(r.n)]));
  return leased.size
    ? tokens.map((t) => (leased.has(t.id) ? { ...t, remain_quota: Number(t.remain_quota) + leased.get(t.id)! } : t))
    : tokens;
}
