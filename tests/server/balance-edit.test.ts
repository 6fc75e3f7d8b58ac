// An admin's absolute edit of a user's balance stays what the admin set while leases are given back around it
// (PostgreSQL and MySQL pay calls from leases: quota moved out of the rows ahead of the calls), and the balance an
// admin sees counts what leases hold, so saving a user without touching the quota changes nothing. Calls held
// before the edit are still paid, and no new call is given from the old leases.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { relayState } from "../../server/relay/state.ts";

for (const kind of storageKinds()) {
  describe(`absolute balance edits (${kind})`, () => {
    let ctx: TestContext;
    let root: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      root = await ctx.login("root", ROOT_PASSWORD);
    }, 30_000);
    afterAll(() => ctx.close());

    const quotaInDb = async (id: number) =>
      Number(
        (await ctx.deps.db.selectFrom("users").select("quota").where("id", "=", id).executeTakeFirstOrThrow()).quota,
      );
    const holdsOf = async (id: number) =>
      (await ctx.deps.db.selectFrom("quota_holds").select("amount").where("user_id", "=", id).execute()).reduce(
        (s, r) => s + Number(r.amount),
        0,
      );
    const shown = async (id: number) =>
      (await ctx.request("GET", `/api/user/${id}`, { as: root })).body.data.quota as number;

    /** A user with a limited token and, on PostgreSQL and MySQL, a lease topped up from both balances. */
    async function leasedUser(quota: number) {
      const s = await ctx.user(1, { quota });
      await ctx.request("POST", "/api/token/", { as: s, body: { name: "t", remain_quota: 1000 } });
      const token = await ctx.deps.db
        .selectFrom("tokens")
        .select("id")
        .where("user_id", "=", s.id)
        .executeTakeFirstOrThrow();
      const { ledger } = relayState(ctx.deps);
      const payer = { userId: s.id, tokenId: token.id, unlimited: false };
      const hold = await ledger.take(payer, 10);
      await ledger.giveBack(hold);
      const playground = await ledger.take({ userId: s.id, tokenId: 0, unlimited: false }, 10);
      await ledger.giveBack(playground);
      return { s, tokenId: token.id, payer, ledger };
    }

    test("an edit to -5 reads back -5 at once and after every lease is given back", async () => {
      const { s, tokenId, ledger } = await leasedUser(3000);
      if (kind !== "sqlite") expect(await holdsOf(s.id)).toBeGreaterThan(0);
      // What the admin sees is the balance, leases included.
      expect(await shown(s.id)).toBe(3000);
      const edit = await ctx.request("PUT", "/api/user/", { as: root, body: { id: s.id, quota: -5 } });
      expect(edit.body.success).toBe(true);
      expect(await shown(s.id)).toBe(-5);
      await ledger.returnLeases?.();
      expect(await shown(s.id)).toBe(-5);
      expect(await quotaInDb(s.id)).toBe(-5);
      expect(await holdsOf(s.id)).toBe(0);
      // The token's share of the leases went back to the token.
      expect(
        Number(
          (
            await ctx.deps.db
              .selectFrom("tokens")
              .select("remain_quota")
              .where("id", "=", tokenId)
              .executeTakeFirstOrThrow()
          ).remain_quota,
        ),
      ).toBe(1000);
    });

    test("give-backs running at the same moment as the edit do not land on top of it", async () => {
      for (let round = 0; round < 5; round++) {
        const { s, ledger } = await leasedUser(3000);
        const [edit] = await Promise.all([
          ctx.request("PUT", "/api/user/", { as: root, body: { id: s.id, quota: -5 } }),
          ledger.returnLeases?.(),
          ledger.returnLeases?.(),
        ]);
        expect(edit.body.success).toBe(true);
        await ledger.returnLeases?.();
        expect(await quotaInDb(s.id)).toBe(-5);
      }
    }, 30_000);

    test("no new call is given from the leases the edit replaced", async () => {
      const { s, payer, ledger } = await leasedUser(3000);
      expect((await ctx.request("PUT", "/api/user/", { as: root, body: { id: s.id, quota: 0 } })).body.success).toBe(
        true,
      );
      await expect(ledger.take(payer, 10)).rejects.toThrow();
      expect(await quotaInDb(s.id)).toBe(0);
    });

    test("a call held before the edit is still paid, on top of the new balance", async () => {
      const { s, payer, ledger } = await leasedUser(3000);
      const hold = await ledger.take(payer, 50);
      expect((await ctx.request("PUT", "/api/user/", { as: root, body: { id: s.id, quota: 500 } })).body.success).toBe(
        true,
      );
      expect(await shown(s.id)).toBe(500);
      // The call was not served after all: what it held goes back, and the balance is still what the admin set.
      await ledger.giveBack(hold);
      await ledger.returnLeases?.();
      expect(await shown(s.id)).toBe(500);
    });

    test("a token's remaining quota set by its owner stays set while its leases go back; saved unchanged, it changes nothing", async () => {
      const { s, tokenId, ledger } = await leasedUser(3000);
      const remain = async () =>
        (await ctx.request("GET", `/api/token/${tokenId}`, { as: s })).body.data.remain_quota as number;
      expect(await remain()).toBe(1000);
      const userBefore = await shown(s.id);
      expect(
        (await ctx.request("PUT", "/api/token/", { as: s, body: { id: tokenId, name: "t", remain_quota: 7 } })).body
          .success,
      ).toBe(true);
      expect(await remain()).toBe(7);
      await ledger.returnLeases?.();
      expect(await remain()).toBe(7);
      expect(await shown(s.id)).toBe(userBefore);
      // A fresh lease, then a save of the token as shown: nothing moves.
      const hold = await ledger.take({ userId: s.id, tokenId, unlimited: false }, 1);
      await ledger.giveBack(hold);
      expect(
        (
          await ctx.request("PUT", "/api/token/", {
            as: s,
            body: { id: tokenId, name: "renamed", remain_quota: await remain() },
          })
        ).body.success,
      ).toBe(true);
      await ledger.returnLeases?.();
      expect(await remain()).toBe(7);
      expect(await shown(s.id)).toBe(userBefore);
    });

    test("saving a user with the balance as shown changes nothing, leases and all", async () => {
      const { s, ledger } = await leasedUser(3000);
      const before = await shown(s.id);
      const save = await ctx.request("PUT", "/api/user/", {
        as: root,
        body: { id: s.id, quota: before, display_name: "renamed" },
      });
      expect(save.body.success).toBe(true);
      await ledger.returnLeases?.();
      expect(await shown(s.id)).toBe(3000);
      expect(await quotaInDb(s.id)).toBe(3000);
    });
  });
}
