import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { nowSeconds } from "../../db/index.ts";
import { DEFAULT_COMPLETION_RATIO, DEFAULT_MODEL_PRICE, DEFAULT_MODEL_RATIO } from "../../server/catalogue/ratios.ts";

for (const kind of storageKinds()) {
  describe(`pricing [${kind}]`, () => {
    let ctx: TestContext;
    let root: Session;
    let vip: Session;
    let odd: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      root = await ctx.login("root", "rootpass123");
      vip = await ctx.user(1, { group: "vip" });
      odd = await ctx.user(1, { group: "special" });
      await ctx.deps.db
        .insertInto("channels")
        .values({ name: "c1", key: "k", created_time: nowSeconds(), type: 1 })
        .execute();
      const ability = (group: string, model: string, enabled = true) => ({
        group,
        model,
        channel_id: 1,
        enabled,
        priority: 0,
        weight: 0,
      });
      await ctx.deps.db
        .insertInto("abilities")
        .values([
          ability("default", "gpt-4o"),
          ability("vip", "gpt-4o"),
          ability("vip", "pricey-image"),
          ability("default", "off-model", false),
        ])
        .execute();
      const put = (key: string, value: string) =>
        ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });
      await put("ModelRatio", JSON.stringify({ "gpt-4o": 1.25 }));
      await put("CompletionRatio", JSON.stringify({ "gpt-4o": 4 }));
      await put("ModelPrice", JSON.stringify({ "pricey-image": 0.04 }));
      await put("GroupRatio", JSON.stringify({ default: 1, vip: 0.8, svip: 0.5, special: 2 }));
      await put("UserUsableGroups", JSON.stringify({ default: "default group", vip: "vip group" }));
    });
    afterAll(() => ctx.close());

    test("guests see every enabled model with billing type, ratios, price and groups, at the default group's view", async () => {
      const r = await ctx.request("GET", "/api/pricing");
      expect(r.status).toBe(200);
      expect(r.body.success).toBe(true);
      expect(r.body.data).toEqual([
        {
          model_name: "gpt-4o",
          quota_type: 0,
          model_ratio: 1.25,
          model_price: 0,
          completion_ratio: 4,
          enable_groups: ["default", "vip"],
        },
        {
          model_name: "pricey-image",
          quota_type: 1,
          model_ratio: 0,
          model_price: 0.04,
          completion_ratio: 0,
          enable_groups: ["vip"],
        },
      ]);
      expect(r.body.group_ratio).toEqual({ default: 1, vip: 0.8 });
      expect(r.body.usable_group).toEqual({ default: "default group", vip: "vip group" });
    });

    test("a logged-in viewer in a group outside UserUsableGroups also sees its own group", async () => {
      const r = await ctx.request("GET", "/api/pricing", { as: odd });
      expect(r.body.usable_group).toEqual({ default: "default group", vip: "vip group", special: "special" });
      expect(r.body.group_ratio).toEqual({ default: 1, vip: 0.8, special: 2 });
      expect((await ctx.request("GET", "/api/pricing", { as: vip })).body.group_ratio).toEqual({
        default: 1,
        vip: 0.8,
      });
    });

    test("a broken session is treated as a guest, not an error", async () => {
      const r = await ctx.request("GET", "/api/pricing", {
        headers: { cookie: "session=garbage", "New-Api-User": "1" },
      });
      expect(r.body.success).toBe(true);
      expect(r.body.group_ratio).toEqual({ default: 1, vip: 0.8 });
      const t = await ctx.request("GET", "/api/pricing", { headers: { authorization: "Bearer not-a-token" } });
      expect(t.body.success).toBe(true);
    });

    test("rest_model_ratio restores the default ratio and price tables (root only)", async () => {
      expect((await ctx.request("POST", "/api/option/rest_model_ratio", { as: vip })).status).toBe(403);
      const r = await ctx.request("POST", "/api/option/rest_model_ratio", { as: root });
      expect(r.body.success).toBe(true);
      expect(ctx.deps.options.json("ModelRatio", {})).toEqual(DEFAULT_MODEL_RATIO);
      expect(ctx.deps.options.json("CompletionRatio", {})).toEqual(DEFAULT_COMPLETION_RATIO);
      expect(ctx.deps.options.json("ModelPrice", {})).toEqual(DEFAULT_MODEL_PRICE);
      const stored = await ctx.deps.db
        .selectFrom("options")
        .select("value")
        .where("key", "=", "ModelRatio")
        .executeTakeFirstOrThrow();
      expect(JSON.parse(stored.value)).toEqual(DEFAULT_MODEL_RATIO);
      const p = (await ctx.request("GET", "/api/pricing")).body.data;
      expect(p.find((x: any) => x.model_name === "gpt-4o").model_ratio).toBe(DEFAULT_MODEL_RATIO["gpt-4o"]);
      // a model without any ratio is listed as per-token with ratio 0 (the operator has not priced it)
      expect(p.find((x: any) => x.model_name === "pricey-image")).toMatchObject({
        quota_type: 0,
        model_ratio: 0,
        model_price: 0,
        completion_ratio: 1,
      });
    });

    test("GroupRatio, UserUsableGroups and TopupGroupRatio must be valid JSON of the right shape; failures change nothing", async () => {
      const cases: [string, string, string][] = [
        ["GroupRatio", "{", "GroupRatio is not a valid JSON string"],
        ["GroupRatio", '{"vip":-1}', 'GroupRatio: the value of "vip" must be a number >= 0'],
        ["GroupRatio", '{"vip":"cheap"}', 'GroupRatio: the value of "vip" must be a number >= 0'],
        ["UserUsableGroups", "nope", "UserUsableGroups is not a valid JSON string"],
        ["UserUsableGroups", '["default"]', "UserUsableGroups must be a JSON object"],
        ["UserUsableGroups", '{"vip":1}', 'UserUsableGroups: the description of group "vip" must be a string'],
        ["TopupGroupRatio", "{bad", "top-up group ratio is not a valid JSON string"],
        ["TopupGroupRatio", '{"vip":null}', 'TopupGroupRatio: the value of "vip" must be a number >= 0'],
      ];
      for (const [key, value, message] of cases) {
        const before = ctx.deps.options.get(key);
        const r = await ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });
        expect({ key, value, body: r.body }).toEqual({ key, value, body: { success: false, message } });
        expect(ctx.deps.options.get(key)).toBe(before);
      }
      const good = await ctx.request("PUT", "/api/option/", {
        as: root,
        body: { key: "UserUsableGroups", value: '{"default":"d","svip":"s"}' },
      });
      expect(good.body.success).toBe(true);
      expect((await ctx.request("GET", "/api/pricing")).body.usable_group).toEqual({ default: "d", svip: "s" });
    });
  });
}
