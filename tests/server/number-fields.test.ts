// Every quota, price and count field of the management API takes integers that fit its column and JavaScript's
// safe range, and refuses the rest (1e21, 9.2e18, 2^53 + 1, fractions, words) with a 400 naming the field,
// storing nothing, on every database. The largest value a field allows is stored and read back exactly.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";

const MAX = Number.MAX_SAFE_INTEGER;
/** JSON texts for the values no field takes: past a bigint, past the safe range, the first unsafe integer, a fraction, a word. */
const UNSAFE = ["1e21", "9.2e18", "9007199254740993", "1.5", '"lots"'];

for (const kind of storageKinds()) {
  describe(`number fields (${kind})`, () => {
    let ctx: TestContext;
    let root: Session;
    let tokenId: number;
    let redemptionId: number;
    let channelId: number;
    let userId: number;

    /** Sends `template` with `value` (JSON text) in place of the placeholder, raw, so 2^53 + 1 is not rounded before it leaves. */
    const send = (method: string, path: string, template: string, value: string) =>
      ctx.request(method, path, {
        as: root,
        raw: template.replace("<v>", value),
        headers: { "content-type": "application/json" },
      });

    beforeAll(async () => {
      ctx = await testContext({ kind });
      root = await ctx.login("root", ROOT_PASSWORD);
      await ctx.request("POST", "/api/token/", { as: root, body: { name: "t", remain_quota: 10 } });
      tokenId = (await ctx.deps.db.selectFrom("tokens").select("id").executeTakeFirstOrThrow()).id;
      await ctx.request("POST", "/api/redemption/", { as: root, body: { name: "r", quota: 10 } });
      redemptionId = (await ctx.deps.db.selectFrom("redemptions").select("id").executeTakeFirstOrThrow()).id;
      await ctx.request("POST", "/api/channel/", {
        as: root,
        body: { type: 1, name: "c", key: "sk-x", models: "gpt-4o", group: "default" },
      });
      channelId = (await ctx.deps.db.selectFrom("channels").select("id").executeTakeFirstOrThrow()).id;
      userId = (await ctx.user(1)).id;
    }, 30_000);
    afterAll(() => ctx.close());

    const snapshot = async () =>
      JSON.stringify(
        await Promise.all([
          ctx.deps.db.selectFrom("tokens").selectAll().orderBy("id").execute(),
          ctx.deps.db.selectFrom("redemptions").selectAll().orderBy("id").execute(),
          ctx.deps.db
            .selectFrom("channels")
            .select(["id", "weight", "priority", "max_input_tokens", "type", "status"])
            .orderBy("id")
            .execute(),
          ctx.deps.db.selectFrom("users").select(["id", "quota", "aff_quota", "role"]).orderBy("id").execute(),
          ctx.deps.db.selectFrom("options").selectAll().orderBy("key").execute(),
          ctx.deps.db.selectFrom("top_ups").selectAll().execute(),
        ]),
      );

    const CASES: [string, string, string, string][] = [
      ["POST", "/api/token/", '{"name":"n","remain_quota":<v>}', "remain_quota"],
      ["PUT", "/api/token/", '{"id":<id:token>,"name":"t","remain_quota":<v>}', "remain_quota"],
      ["POST", "/api/token/", '{"name":"n","tpm_limit":<v>}', "tpm_limit"],
      ["POST", "/api/token/", '{"name":"n","budget_quota":<v>,"budget_period":"daily"}', "budget_quota"],
      ["POST", "/api/token/", '{"name":"n","expired_time":<v>}', "expired_time"],
      ["POST", "/api/redemption/", '{"name":"n","quota":<v>}', "quota"],
      ["PUT", "/api/redemption/", '{"id":<id:redemption>,"quota":<v>}', "quota"],
      ["PUT", "/api/user/", '{"id":<id:user>,"quota":<v>}', "quota"],
      ["POST", "/api/user/aff_transfer", '{"quota":<v>}', "quota"],
      ["POST", "/api/user/amount", '{"amount":<v>}', "amount"],
      ["POST", "/api/channel/", '{"type":1,"name":"n","key":"k","models":"m","weight":<v>}', "weight"],
      [
        "POST",
        "/api/channel/",
        '{"mode":"single","channel":{"type":1,"name":"n","key":"k","models":"m","priority":<v>}}',
        "priority",
      ],
      ["PUT", "/api/channel/", '{"id":<id:channel>,"priority":<v>}', "priority"],
      ["PUT", "/api/channel/tag", '{"tag":"x","weight":<v>}', "weight"],
    ];
    const fill = (template: string) =>
      template
        .replace("<id:token>", String(tokenId))
        .replace("<id:redemption>", String(redemptionId))
        .replace("<id:channel>", String(channelId))
        .replace("<id:user>", String(userId));

    test("each big, unsafe, fractional or non-numeric value is refused with the field named, and nothing is stored", async () => {
      const before = await snapshot();
      for (const [method, path, template, field] of CASES) {
        for (const value of UNSAFE) {
          const r = await send(method, path, fill(template), value);
          const seen = {
            call: `${method} ${path} ${field}=${value}`,
            status: r.status,
            success: r.body.success,
            names: String(r.body.message).startsWith(`${field} must be`),
          };
          expect(seen).toEqual({ call: seen.call, status: 400, success: false, names: true });
        }
      }
      expect(await snapshot()).toBe(before);
    });

    test("32-bit columns refuse what does not fit them", async () => {
      const before = await snapshot();
      for (const [path, template, field] of [
        ["/api/token/", '{"name":"n","rpm_limit":<v>}', "rpm_limit"],
        ["/api/token/", '{"name":"n","concurrency_limit":<v>}', "concurrency_limit"],
        ["/api/channel/", '{"type":1,"name":"n","key":"k","models":"m","max_input_tokens":<v>}', "max_input_tokens"],
      ] as const) {
        const r = await send("POST", path, template, "2147483648");
        expect({ field, status: r.status, message: r.body.message }).toEqual({
          field,
          status: 400,
          message: `${field} must be an integer from 0 to 2147483647`,
        });
      }
      expect(await snapshot()).toBe(before);
    });

    test("a channel's auto_ban takes 1 or 0 as a number, its text or a boolean, and nothing else", async () => {
      for (const [value, stored] of [
        [0, 0],
        ["1", 1],
        [false, 0],
        [true, 1],
      ] as const) {
        expect(
          (await ctx.request("PUT", "/api/channel/", { as: root, body: { id: channelId, auto_ban: value } })).body
            .success,
        ).toBe(true);
        expect(
          Number(
            (
              await ctx.deps.db
                .selectFrom("channels")
                .select("auto_ban")
                .where("id", "=", channelId)
                .executeTakeFirstOrThrow()
            ).auto_ban,
          ),
        ).toBe(stored);
      }
      const r = await ctx.request("PUT", "/api/channel/", { as: root, body: { id: channelId, auto_ban: "often" } });
      expect(r.body).toEqual({ success: false, message: "auto_ban must be 1 or 0 (or true or false)" });
    });

    test("numeric options refuse values past the safe range, and integer ones unsafe integers", async () => {
      const before = await snapshot();
      for (const [key, value] of [
        ["QuotaForNewUser", "1e21"],
        ["QuotaForNewUser", "9007199254740993"],
        ["PreConsumedQuota", "9.2e18"],
        ["ModelRatio", '{"gpt-4o":1e300}'],
      ]) {
        const r = await ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });
        expect({ key, value, status: r.status, named: String(r.body.message).startsWith(key) }).toEqual({
          key,
          value,
          status: 400,
          named: true,
        });
      }
      expect(await snapshot()).toBe(before);
    });

    test("the largest value each bigint field allows is stored and read back exactly", async () => {
      const r = await ctx.request("PUT", "/api/token/", {
        as: root,
        body: { id: tokenId, name: "t", remain_quota: MAX },
      });
      expect(r.body.success).toBe(true);
      const token = await ctx.request("GET", `/api/token/${tokenId}`, { as: root });
      expect(token.body.data.remain_quota).toBe(MAX);
      expect(
        (await ctx.request("PUT", "/api/redemption/", { as: root, body: { id: redemptionId, quota: MAX } })).body
          .success,
      ).toBe(true);
      expect(
        Number(
          (
            await ctx.deps.db
              .selectFrom("redemptions")
              .select("quota")
              .where("id", "=", redemptionId)
              .executeTakeFirstOrThrow()
          ).quota,
        ),
      ).toBe(MAX);
      expect(
        (await ctx.request("PUT", "/api/user/", { as: root, body: { id: userId, quota: -MAX } })).body.success,
      ).toBe(true);
      expect((await ctx.request("GET", `/api/user/${userId}`, { as: root })).body.data.quota).toBe(-MAX);
      expect(
        (
          await ctx.request("PUT", "/api/channel/", {
            as: root,
            body: { id: channelId, priority: String(MAX), weight: MAX },
          })
        ).body.success,
      ).toBe(true);
      const ch = await ctx.deps.db
        .selectFrom("channels")
        .select(["priority", "weight"])
        .where("id", "=", channelId)
        .executeTakeFirstOrThrow();
      expect([Number(ch.priority), Number(ch.weight)]).toEqual([MAX, MAX]);
    });
  });
}
