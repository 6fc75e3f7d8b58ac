// The routes new-api's console calls, in new-api's shapes, on every database: token batch delete and soft-deleted
// tokens, redemption expiry and clean-up, check-in, top-up info, multi-key management, tag models, ratio
// config and sync, prefill groups, vendors and model metadata (beside the spec's GET /api/models).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, ROOT_PASSWORD, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { allowLocalFetches } from "../helpers/outbound.ts";
import { nowSeconds } from "../../db/index.ts";
import { dbTime } from "../../db/datetime.ts";
import { KEY_STATUS, parseChannelInfo, pickChannelKey } from "../../server/modules/channel/keys.ts";
import { SINGLE_KEY_CHANNEL_INFO } from "../../db/migrations/0002_newapi_rows.ts";
import { serializeChannelInfo } from "../../server/modules/channel/keys.ts";

describe("channel_info in new-api's shape", () => {
  test("a single-key channel's object is the one the repair migration writes; disabled keys are never picked", () => {
    expect(serializeChannelInfo(null)).toBe(SINGLE_KEY_CHANNEL_INFO);
    const info = {
      ...parseChannelInfo(null),
      is_multi_key: true,
      multi_key_size: 3,
      multi_key_status_list: { 1: KEY_STATUS.manuallyDisabled, 2: KEY_STATUS.autoDisabled },
    };
    for (let i = 0; i < 5; i++)
      expect(pickChannelKey({ key: "a\nb\nc", channel_info: { ...info, multi_key_polling_index: i } }, 1000).key).toBe(
        "a",
      );
    // new-api's keys are numbers in Go and strings in JSON; both read the same.
    expect(
      parseChannelInfo('{"is_multi_key":true,"multi_key_status_list":{"0":2},"multi_key_mode":"random"}')
        .multi_key_status_list,
    ).toEqual({ 0: 2 });
  });
});

for (const kind of storageKinds()) {
  describe(`new-api console routes [${kind}]`, () => {
    let ctx: TestContext;
    let root: Session;
    let admin: Session;
    let alice: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      root = await ctx.login("root", ROOT_PASSWORD);
      admin = await ctx.user(10);
      alice = await ctx.user(1);
    });
    afterAll(() => ctx.close());

    const req = (method: string, path: string, as: Session | null, body?: unknown) =>
      ctx.request(method, path, { as, body });
    const db = () => ctx.deps.db;

    test("tokens: soft-deleted rows are gone everywhere; POST /api/token/batch deletes the caller's own; max_user_tokens; DefaultUseAutoGroup", async () => {
      const made = await req("POST", "/api/token/", alice, { name: "t", count: 3, remain_quota: 10 });
      const ids: number[] = made.body.data.map((t: any) => t.id);
      await db()
        .updateTable("tokens")
        .set({ deleted_at: dbTime(db(), Date.now()) })
        .where("id", "=", ids[0]!)
        .execute();
      const list = await req("GET", "/api/token/?p=1&size=10", alice);
      expect(list.body.data.items.map((t: any) => t.id).sort()).toEqual([ids[1], ids[2]].sort());
      expect(list.body.data.total).toBe(2);
      expect((await req("GET", `/api/token/${ids[0]}`, alice)).body.message).toBe("token not found");
      expect((await req("PUT", "/api/token/", alice, { id: ids[0], name: "x" })).body.success).toBe(false);
      const other = await req("POST", "/api/token/", admin, { name: "mine" });
      const batch = await req("POST", "/api/token/batch", alice, { ids: [ids[0], ids[1], other.body.data[0].id] });
      expect(batch.body).toEqual({ success: true, message: "", data: 1 });
      expect((await req("GET", `/api/token/${other.body.data[0].id}`, admin)).body.success).toBe(true);
      expect((await req("POST", "/api/token/batch", alice, { ids: [] })).body.success).toBe(false);
      await ctx.deps.options.set("token_setting.max_user_tokens", "2");
      expect((await req("POST", "/api/token/", alice, { name: "one-more" })).body.success).toBe(true);
      const refused = await req("POST", "/api/token/", alice, { name: "too-many" });
      expect(refused.body.message).toContain("at most 2 tokens");
      await ctx.deps.options.set("token_setting.max_user_tokens", "1000");
      await ctx.deps.options.set("UserUsableGroups", JSON.stringify({ default: "default", auto: "automatic" }));
      await ctx.deps.options.set("DefaultUseAutoGroup", "true");
      expect((await req("POST", "/api/token/", alice, { name: "auto" })).body.data[0].group).toBe("auto");
      expect((await req("POST", "/api/token/", alice, { name: "chosen", group: "default" })).body.data[0].group).toBe(
        "default",
      );
      await ctx.deps.options.set("DefaultUseAutoGroup", "false");
    });

    test('users answer "" (never null) for the account columns a new-api database may hold as NULL', async () => {
      await db()
        .updateTable("users")
        .set({
          github_id: null,
          oidc_id: null,
          telegram_id: null,
          linux_do_id: null,
          wechat_id: null,
          display_name: null,
          email: null,
          aff_code: null,
        } as any)
        .where("id", "=", alice.id)
        .execute();
      const me = (await req("GET", "/api/user/self", alice)).body.data;
      for (const k of [
        "github_id",
        "oidc_id",
        "telegram_id",
        "linux_do_id",
        "wechat_id",
        "display_name",
        "email",
        "aff_code",
      ])
        expect({ k, v: me[k] }).toEqual({ k, v: "" });
      expect(me.DeletedAt).toBeNull();
      const listed = (await req("GET", "/api/user/?p=1&page_size=100", admin)).body.data.items.find(
        (u: any) => u.id === alice.id,
      );
      expect(listed.github_id).toBe("");
      expect(typeof listed.quota).toBe("number");
    });

    test("redemption codes: expired_time is kept and enforced; DELETE /api/redemption/invalid hides used, disabled and expired codes", async () => {
      const past = await req("POST", "/api/redemption/", admin, {
        name: "old",
        quota: 100,
        count: 1,
        expired_time: nowSeconds() - 10,
      });
      expect(past.body.success).toBe(false);
      const soon = await req("POST", "/api/redemption/", admin, {
        name: "soon",
        quota: 100,
        count: 2,
        expired_time: nowSeconds() + 3600,
      });
      const [k1, k2] = soon.body.data;
      const never = await req("POST", "/api/redemption/", admin, { name: "never", quota: 100, count: 2 });
      const row = await db().selectFrom("redemptions").selectAll().where("key", "=", k1).executeTakeFirstOrThrow();
      expect(Number(row.expired_time)).toBeGreaterThan(nowSeconds());
      const view = (await req("GET", `/api/redemption/${row.id}`, admin)).body.data;
      expect(view).toMatchObject({
        id: row.id,
        key: k1,
        expired_time: Number(row.expired_time),
        quota: 100,
        status: 1,
      });
      expect(typeof view.redeemed_time).toBe("number");
      // The code expires (as if time passed): redeeming is refused, nothing credited.
      await db()
        .updateTable("redemptions")
        .set({ expired_time: nowSeconds() - 1 })
        .where("key", "=", k1)
        .execute();
      const r = await req("POST", "/api/user/topup", alice, { key: k1 });
      expect(r.body).toEqual({ success: false, message: "this redemption code has expired" });
      expect((await req("POST", "/api/user/topup", alice, { key: k2 })).body.success).toBe(true);
      const [n1, n2] = never.body.data;
      const disabled = await db()
        .selectFrom("redemptions")
        .select("id")
        .where("key", "=", n2)
        .executeTakeFirstOrThrow();
      await req("PUT", "/api/redemption/?status_only=true", admin, { id: disabled.id, status: 2 });
      const cleaned = await req("DELETE", "/api/redemption/invalid", admin);
      expect(cleaned.body.success).toBe(true);
      expect(cleaned.body.data).toBeGreaterThanOrEqual(3);
      const left = new Set(
        (await db().selectFrom("redemptions").select("key").where("deleted_at", "is", null).execute()).map(
          (x) => x.key,
        ),
      );
      expect([left.has(k1), left.has(k2), left.has(n1), left.has(n2)]).toEqual([false, false, true, false]);
      expect((await req("DELETE", "/api/redemption/invalid", alice)).status).toBe(403);
    });

    test("check-in: off refuses; on awards min..max once per day, also when many arrive at once; the month's record", async () => {
      expect((await req("GET", "/api/user/checkin", alice)).body).toEqual({
        success: false,
        message: "check-in is not enabled",
      });
      await ctx.deps.options.set("checkin_setting.enabled", "true");
      await ctx.deps.options.set("checkin_setting.min_quota", "500");
      await ctx.deps.options.set("checkin_setting.max_quota", "700");
      const before = Number(
        (await db().selectFrom("users").select("quota").where("id", "=", alice.id).executeTakeFirstOrThrow()).quota,
      );
      const all = await Promise.all(Array.from({ length: 5 }, () => req("POST", "/api/user/checkin", alice)));
      const won = all.filter((r) => r.body.success);
      expect(won.length).toBe(1);
      for (const r of all.filter((x) => !x.body.success))
        expect(r.body.message).toBe("you have already checked in today");
      const award = won[0]!.body.data.quota_awarded;
      expect(award).toBeGreaterThanOrEqual(500);
      expect(award).toBeLessThanOrEqual(700);
      const after = Number(
        (await db().selectFrom("users").select("quota").where("id", "=", alice.id).executeTakeFirstOrThrow()).quota,
      );
      expect(after - before).toBe(award);
      const status = (await req("GET", "/api/user/checkin", alice)).body.data;
      expect(status).toMatchObject({
        enabled: true,
        min_quota: 500,
        max_quota: 700,
        stats: { total_quota: award, total_checkins: 1, checkin_count: 1, checked_in_today: true },
      });
      expect(status.stats.records).toEqual([{ checkin_date: won[0]!.body.data.checkin_date, quota_awarded: award }]);
      expect((await req("GET", "/api/user/checkin?month=2001-01", alice)).body.data.stats.checkin_count).toBe(0);
      expect((await req("GET", "/api/user/checkin?month=bad", alice)).body.message).toBe("month must be YYYY-MM");
      const log = await db()
        .selectFrom("logs")
        .selectAll()
        .where("user_id", "=", alice.id)
        .where("type", "=", 4)
        .orderBy("id", "desc")
        .executeTakeFirstOrThrow();
      expect(Number(log.quota)).toBe(award);
      await ctx.deps.options.set("checkin_setting.enabled", "false");
    });

    test("GET /api/user/topup/info in new-api's shape; new-api's Epay method names are accepted", async () => {
      const info = (await req("GET", "/api/user/topup/info", alice)).body.data;
      expect(info).toMatchObject({
        enable_online_topup: false,
        enable_stripe_topup: false,
        enable_creem_topup: false,
        min_topup: 1,
        stripe_min_topup: 1,
        amount_options: [],
        discount: {},
      });
      expect(info.pay_methods.map((m: any) => m.type)).toEqual(["zfb", "wx"]);
      await ctx.deps.options.set("PayMethods", JSON.stringify([{ name: "支付宝", color: "blue", type: "alipay" }]));
      await ctx.deps.options.set("payment_setting.amount_options", "[10,20,50]");
      await ctx.deps.options.set("PayAddress", "https://pay.example.com");
      await ctx.deps.options.set("EpayId", "1001");
      await ctx.deps.options.set("EpayKey", "k");
      const on = (await req("GET", "/api/user/topup/info", alice)).body.data;
      expect(on).toMatchObject({
        enable_online_topup: true,
        pay_methods: [{ type: "alipay" }],
        amount_options: [10, 20, 50],
      });
      const pay = await req("POST", "/api/user/pay", alice, { amount: 10, payment_method: "alipay" });
      expect(pay.body.success).toBe(true);
      expect(pay.body.data.type).toBe("alipay");
      expect(
        (
          await db()
            .selectFrom("top_ups")
            .select("payment_method")
            .where("user_id", "=", alice.id)
            .executeTakeFirstOrThrow()
        ).payment_method,
      ).toBe("zfb");
      await ctx.deps.options.set("PayAddress", "");
      await ctx.deps.options.set("PayMethods", "");
    });

    test("multi-key management: key states in new-api's shape, the channel follows its keys, deletes keep states with their keys", async () => {
      const made = await req("POST", "/api/channel/", admin, {
        type: 1,
        name: "multi",
        key: "k-aaaaaaaaaaaa\nk-bbbbbbbbbbbb\nk-cccccccccccc",
        models: "m1",
        mode: "multi_to_single",
      });
      const id = made.body.data.ids[0];
      const manage = (body: Record<string, unknown>) =>
        req("POST", "/api/channel/multi_key/manage", admin, { channel_id: id, ...body });
      let st = (await manage({ action: "get_key_status" })).body.data;
      expect(st).toMatchObject({
        total: 3,
        page: 1,
        page_size: 50,
        total_pages: 1,
        enabled_count: 3,
        manual_disabled_count: 0,
        auto_disabled_count: 0,
      });
      expect(st.keys[0]).toEqual({ index: 0, status: 1, key_preview: "k-aaaaaaaa..." });
      expect((await manage({ action: "disable_key", key_index: 1 })).body).toEqual({
        success: true,
        message: "key disabled",
      });
      const stored = JSON.parse(
        (await db().selectFrom("channels").select("channel_info").where("id", "=", id).executeTakeFirstOrThrow())
          .channel_info,
      );
      expect(stored).toMatchObject({
        is_multi_key: true,
        multi_key_size: 3,
        multi_key_status_list: { 1: 2 },
        multi_key_mode: "polling",
      });
      st = (await manage({ action: "get_key_status", status: 2 })).body.data;
      expect(st.keys.map((k: any) => k.index)).toEqual([1]);
      expect(st.manual_disabled_count).toBe(1);
      await manage({ action: "disable_all_keys" });
      let ch = await db().selectFrom("channels").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
      expect(ch.status).toBe(2);
      expect(
        (await db().selectFrom("abilities").select("enabled").where("channel_id", "=", id).execute()).every(
          (a) => !a.enabled,
        ),
      ).toBe(true);
      expect((await manage({ action: "enable_all_keys" })).body.message).toBe("3 keys enabled");
      ch = await db().selectFrom("channels").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
      expect(ch.status).toBe(1);
      // An automatically disabled key (as new-api or the relay marks them) is deleted with delete_disabled_keys.
      const info = parseChannelInfo(ch.channel_info);
      info.multi_key_status_list = { 0: 3, 2: 2 };
      await db()
        .updateTable("channels")
        .set({ channel_info: serializeChannelInfo(info) })
        .where("id", "=", id)
        .execute();
      expect((await manage({ action: "delete_disabled_keys" })).body).toEqual({
        success: true,
        message: "1 automatically disabled keys deleted",
        data: 1,
      });
      ch = await db().selectFrom("channels").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
      expect(ch.key).toBe("k-bbbbbbbbbbbb\nk-cccccccccccc");
      expect(parseChannelInfo(ch.channel_info).multi_key_status_list).toEqual({ 1: 2 });
      expect((await manage({ action: "delete_key", key_index: 0 })).body.success).toBe(true);
      expect((await manage({ action: "delete_key", key_index: 0 })).body.message).toBe(
        "the last key cannot be deleted",
      );
      expect((await manage({ action: "nope" })).body.success).toBe(false);
      expect(
        (await req("POST", "/api/channel/multi_key/manage", alice, { channel_id: id, action: "get_key_status" }))
          .status,
      ).toBe(403);
    });

    test("GET /api/channel/tag/models: the longest model list among the tag's channels", async () => {
      await req("POST", "/api/channel/", admin, { type: 1, name: "t1", key: "k", models: "a,b", tag: "team" });
      await req("POST", "/api/channel/", admin, { type: 1, name: "t2", key: "k", models: "a,b,c", tag: "team" });
      expect((await req("GET", "/api/channel/tag/models?tag=team", admin)).body).toEqual({
        success: true,
        message: "",
        data: "a,b,c",
      });
      expect((await req("GET", "/api/channel/tag/models?tag=none", admin)).body.data).toBe("");
    });

    test("GET /api/ratio_config only while ExposeRatioEnabled; POST /api/ratio_sync/fetch compares another site's tables", async () => {
      expect((await req("GET", "/api/ratio_config", null)).status).toBe(403);
      await ctx.deps.options.set("ExposeRatioEnabled", "true");
      await ctx.deps.options.set("ModelRatio", JSON.stringify({ "gpt-4o": 1.25, "only-here": 1 }));
      await ctx.deps.options.set("CompletionRatio", JSON.stringify({ "gpt-4o": 4 }));
      const cfg = await req("GET", "/api/ratio_config", null);
      expect(cfg.body.data).toMatchObject({
        model_ratio: { "gpt-4o": 1.25 },
        completion_ratio: { "gpt-4o": 4 },
        cache_ratio: {},
        model_price: expect.any(Object),
      });
      const other = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch(r) {
          const p = new URL(r.url).pathname;
          if (p === "/api/ratio_config")
            return Response.json({
              success: true,
              data: { model_ratio: { "gpt-4o": 2, "only-there": 3 }, completion_ratio: { "gpt-4o": 4 } },
            });
          if (p === "/api/pricing")
            return Response.json({
              success: true,
              data: [
                { model_name: "gpt-4o", quota_type: 0, model_ratio: 1.25, completion_ratio: 4 },
                { model_name: "dall-e-9", quota_type: 1, model_price: 0.5 },
              ],
            });
          return new Response("no", { status: 404 });
        },
      });
      try {
        await allowLocalFetches(ctx.deps.options);
        const base = `http://127.0.0.1:${other.port}`;
        const sync = await req("POST", "/api/ratio_sync/fetch", root, {
          upstreams: [
            { name: "peer", base_url: base, endpoint: "/api/ratio_config" },
            { name: "list", base_url: base },
            { name: "dead", base_url: "http://127.0.0.1:9" },
          ],
        });
        expect(sync.body.success).toBe(true);
        const { differences, test_results } = sync.body.data;
        expect(test_results.map((t: any) => [t.name, t.status])).toEqual([
          ["peer", "success"],
          ["list", "success"],
          ["dead", "error"],
        ]);
        expect(differences["gpt-4o"].model_ratio).toEqual({
          current: 1.25,
          upstreams: { peer: 2, list: "same" },
          confidence: { peer: true, list: true },
        });
        expect(differences["only-there"].model_ratio.current).toBeNull();
        expect(differences["dall-e-9"].model_price.upstreams.list).toBe(0.5);
        expect(differences["gpt-4o"].completion_ratio).toBeUndefined();
        expect((await req("POST", "/api/ratio_sync/fetch", admin, { upstreams: [] })).status).toBe(403);
        const chans = await req("GET", "/api/ratio_sync/channels", root);
        expect(Array.isArray(chans.body.data)).toBe(true);
      } finally {
        other.stop(true);
        await ctx.deps.options.set("ExposeRatioEnabled", "false");
      }
    });

    test("prefill groups: create, list by type, update, delete; names unique among live groups", async () => {
      const made = await req("POST", "/api/prefill_group/", admin, {
        name: "openai",
        type: "model",
        items: ["gpt-4o", "gpt-4o-mini"],
        description: "d",
      });
      expect(made.body.data).toMatchObject({
        name: "openai",
        type: "model",
        items: ["gpt-4o", "gpt-4o-mini"],
        description: "d",
      });
      expect(
        (await req("POST", "/api/prefill_group/", admin, { name: "openai", type: "tag", items: [] })).body.message,
      ).toContain("already exists");
      expect(
        (await req("POST", "/api/prefill_group/", admin, { name: "x", type: "bogus", items: [] })).body.success,
      ).toBe(false);
      await req("POST", "/api/prefill_group/", admin, { name: "tags", type: "tag", items: ["a"] });
      expect((await req("GET", "/api/prefill_group?type=model", admin)).body.data.map((g: any) => g.name)).toEqual([
        "openai",
      ]);
      const upd = await req("PUT", "/api/prefill_group/", admin, {
        id: made.body.data.id,
        name: "openai",
        type: "model",
        items: ["o3"],
      });
      expect(upd.body.data.items).toEqual(["o3"]);
      expect((await req("DELETE", `/api/prefill_group/${made.body.data.id}`, admin)).body.success).toBe(true);
      expect((await req("GET", "/api/prefill_group?type=model", admin)).body.data).toEqual([]);
      expect((await req("GET", "/api/prefill_group", alice)).status).toBe(403);
    });

    test("vendors and model metadata; GET /api/models/ is the metadata list while GET /api/models stays the spec's channel-type map", async () => {
      const v = await req("POST", "/api/vendors/", admin, { name: "OpenAI", icon: "OpenAI", description: "gpt" });
      expect(v.body.data).toMatchObject({ name: "OpenAI", icon: "OpenAI", status: 1 });
      const m = await req("POST", "/api/models/", admin, {
        model_name: "gpt-4o",
        vendor_id: v.body.data.id,
        tags: "chat",
        description: "omni",
      });
      expect(m.body.data).toMatchObject({ model_name: "gpt-4o", vendor_id: v.body.data.id, status: 1, name_rule: 0 });
      expect((await req("POST", "/api/models/", admin, { model_name: "gpt-4o" })).body.message).toContain(
        "already exists",
      );
      await req("POST", "/api/channel/", admin, { type: 1, name: "meta", key: "k", models: "gpt-4o,unlisted-model" });
      const list = await req("GET", "/api/models/?p=1&page_size=10", admin);
      expect(list.body.data).toMatchObject({
        total: 1,
        page: 1,
        page_size: 10,
        vendor_counts: { [v.body.data.id]: 1 },
      });
      expect(list.body.data.items[0]).toMatchObject({
        model_name: "gpt-4o",
        enable_groups: ["default"],
        bound_channels: [{ name: "meta", type: 1 }],
      });
      const spec = await req("GET", "/api/models", admin);
      expect(spec.body.data["1"]).toEqual(expect.arrayContaining(["gpt-4o"]));
      expect((await req("GET", "/api/models/search?keyword=omni", admin)).body.data.items.length).toBe(1);
      expect((await req("GET", "/api/models/search?vendor=OpenAI", admin)).body.data.total).toBe(1);
      expect((await req("GET", "/api/models/missing", admin)).body.data).toContain("unlisted-model");
      const vendors = await req("GET", "/api/vendors/?p=1&page_size=10", admin);
      expect(vendors.body.data.items[0]).toMatchObject({ name: "OpenAI", model_count: 1 });
      const off = await req("PUT", "/api/models/?status_only=true", admin, { id: m.body.data.id, status: 0 });
      expect(off.body.data.status).toBe(0);
      expect((await req("DELETE", `/api/models/${m.body.data.id}`, admin)).body.success).toBe(true);
      expect((await req("GET", `/api/models/${m.body.data.id}`, admin)).status).toBe(404);
      expect((await req("POST", "/api/models/", admin, { model_name: "gpt-4o" })).body.success).toBe(true);
      expect((await req("DELETE", `/api/vendors/${v.body.data.id}`, admin)).body.success).toBe(true);
      expect((await req("GET", "/api/vendors/", alice)).status).toBe(403);
    });
  });
}
