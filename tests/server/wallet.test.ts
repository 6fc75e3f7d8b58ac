import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { epaySign } from "../../server/modules/wallet/epay.ts";

describe("Epay signature", () => {
  test("matches the published example: sorted k=v pairs joined by & with the key appended, md5 hex", () => {
    expect(epaySign({ uid: "1000", timestamp: "1548047628" }, "58b31d465652be856d7ed80977aa4ce4")).toBe(
      "15540d3398e5ed2a37533e3fc032e1a0",
    );
  });
  test("sign, sign_type and empty values do not take part", () => {
    const base = epaySign({ uid: "1000", timestamp: "1548047628" }, "k");
    expect(epaySign({ uid: "1000", timestamp: "1548047628", sign: "x", sign_type: "MD5", empty: "" }, "k")).toBe(base);
    expect(epaySign({ uid: "1001", timestamp: "1548047628" }, "k")).not.toBe(base);
    expect(epaySign({ uid: "1000", timestamp: "1548047628" }, "other")).not.toBe(base);
  });
});

const KEY = "merchant-secret-key";

for (const kind of storageKinds()) {
  describe(`wallet and Epay [${kind}]`, () => {
    let ctx: TestContext;
    let alice: Session;
    let vip: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      alice = await ctx.user(1);
      vip = await ctx.user(1, { group: "vip" });
      await ctx.deps.options.set("TopupGroupRatio", JSON.stringify({ default: 1, vip: 0.8 }));
    });
    afterAll(() => ctx.close());

    const quotaOf = async (id: number) =>
      Number(
        (await ctx.deps.db.selectFrom("users").select("quota").where("id", "=", id).executeTakeFirstOrThrow()).quota,
      );

    const configure = async () => {
      await ctx.deps.options.set("PayAddress", "https://pay.example.com/");
      await ctx.deps.options.set("EpayId", "1001");
      await ctx.deps.options.set("EpayKey", KEY);
      await ctx.deps.options.set("ServerAddress", "https://gw.example.com");
    };

    /** What the Epay platform sends back for an order, signed with the merchant key. */
    const notice = (order: { out_trade_no: string; money: string }, over: Record<string, string> = {}, key = KEY) => {
      const p: Record<string, string> = {
        pid: "1001",
        trade_no: "2024" + order.out_trade_no.slice(-6),
        out_trade_no: order.out_trade_no,
        type: "alipay",
        name: "TUC10",
        money: order.money,
        trade_status: "TRADE_SUCCESS",
        ...over,
      };
      p.sign = epaySign(p, key);
      p.sign_type = "MD5";
      return "/api/user/epay/notify?" + new URLSearchParams(p).toString();
    };

    test("amount: Price x TopupGroupRatio of the user's group, and MinTopUp", async () => {
      expect((await ctx.request("POST", "/api/user/amount", { as: alice, body: { amount: 10 } })).body).toMatchObject({
        success: true,
        data: "73.00",
      });
      expect((await ctx.request("POST", "/api/user/amount", { as: vip, body: { amount: 10 } })).body.data).toBe(
        "58.40",
      );
      await ctx.deps.options.set("MinTopUp", "5");
      expect((await ctx.request("POST", "/api/user/amount", { as: alice, body: { amount: 2 } })).body).toEqual({
        success: false,
        message: "top-up amount cannot be less than 5",
      });
      await ctx.deps.options.set("MinTopUp", "1");
      expect((await ctx.request("POST", "/api/user/amount", { as: alice, body: { amount: 0 } })).body.success).toBe(
        false,
      );
      expect((await ctx.request("POST", "/api/user/amount", { body: { amount: 10 } })).status).toBe(401);
    });

    test("amount in quota units when the site does not display currency", async () => {
      await ctx.deps.options.set("DisplayInCurrencyEnabled", "false");
      try {
        expect(
          (await ctx.request("POST", "/api/user/amount", { as: alice, body: { amount: 1_000_000 } })).body.data,
        ).toBe("14.60");
        expect(
          (await ctx.request("POST", "/api/user/amount", { as: alice, body: { amount: 750_000 } })).body.message,
        ).toBe("amount must be a multiple of 500000 quota");
      } finally {
        await ctx.deps.options.set("DisplayInCurrencyEnabled", "true");
      }
    });

    test("pay is refused until Epay is configured, and for unknown methods", async () => {
      const r = await ctx.request("POST", "/api/user/pay", { as: alice, body: { amount: 10, payment_method: "zfb" } });
      expect(r.body).toEqual({ success: false, message: "admin has not enabled online top-up" });
      expect(await ctx.deps.db.selectFrom("top_ups").select("id").execute()).toHaveLength(0);
      await configure();
      expect(
        (await ctx.request("POST", "/api/user/pay", { as: alice, body: { amount: 10, payment_method: "paypal" } })).body
          .message,
      ).toBe("unsupported payment method");
    });

    test("bad pay input is refused with a clear message and creates no order", async () => {
      await configure();
      const before = (await ctx.deps.db.selectFrom("top_ups").select("id").execute()).length;
      const noMethod = await ctx.request("POST", "/api/user/pay", { as: alice, body: { amount: 10 } });
      expect(noMethod.status).toBe(400);
      expect(noMethod.body).toEqual({ success: false, message: "payment_method is required (zfb or wx)" });
      const frac = await ctx.request("POST", "/api/user/pay", {
        as: alice,
        body: { amount: 2.5, payment_method: "zfb" },
      });
      expect(frac.body).toEqual({ success: false, message: "amount must be an integer from 1 to 9007199254740991" });
      await ctx.deps.options.set("MinTopUp", "20");
      const small = await ctx.request("POST", "/api/user/pay", {
        as: alice,
        body: { amount: 10, payment_method: "zfb" },
      });
      expect(small.body).toEqual({ success: false, message: "top-up amount cannot be less than 20" });
      await ctx.deps.options.set("MinTopUp", "1");
      expect((await ctx.deps.db.selectFrom("top_ups").select("id").execute()).length).toBe(before);
    });

    test("pay builds a signed Epay form and a pending order", async () => {
      await configure();
      const r = await ctx.request("POST", "/api/user/pay", {
        as: vip,
        body: { amount: 10, payment_method: "wx", top_up_code: "" },
      });
      expect(r.body.success).toBe(true);
      expect(r.body.url).toBe("https://pay.example.com/submit.php");
      const f = r.body.data;
      expect(f).toMatchObject({
        pid: "1001",
        type: "wxpay",
        money: "58.40",
        sign_type: "MD5",
        notify_url: "https://gw.example.com/api/user/epay/notify",
        return_url: "https://gw.example.com/log",
      });
      expect(f.sign).toBe(epaySign(f, KEY));
      const order = await ctx.deps.db
        .selectFrom("top_ups")
        .selectAll()
        .where("trade_no", "=", f.out_trade_no)
        .executeTakeFirstOrThrow();
      expect(order).toMatchObject({ user_id: vip.id, status: "pending", payment_method: "wx" });
      expect(Number(order.amount)).toBe(10);
      expect(Number(order.money)).toBe(58.4);
      await ctx.deps.options.set("CustomCallbackAddress", "https://cb.example.com");
      const r2 = await ctx.request("POST", "/api/user/pay", { as: vip, body: { amount: 10, payment_method: "zfb" } });
      expect(r2.body.data).toMatchObject({ type: "alipay", notify_url: "https://cb.example.com/api/user/epay/notify" });
      await ctx.deps.options.set("CustomCallbackAddress", "");
    });

    test("notify with a valid signature credits once; repeats are acknowledged without a second credit", async () => {
      await configure();
      const f = (await ctx.request("POST", "/api/user/pay", { as: alice, body: { amount: 3, payment_method: "zfb" } }))
        .body.data;
      const before = await quotaOf(alice.id);
      const first = await ctx.request("GET", notice(f));
      expect(first.status).toBe(200);
      expect(first.body).toBe("success");
      expect(await quotaOf(alice.id)).toBe(before + 3 * 500_000);
      const again = await ctx.request("GET", notice(f));
      expect(again.body).toBe("success");
      expect(await quotaOf(alice.id)).toBe(before + 3 * 500_000);
      const order = await ctx.deps.db
        .selectFrom("top_ups")
        .selectAll()
        .where("trade_no", "=", f.out_trade_no)
        .executeTakeFirstOrThrow();
      expect(order.status).toBe("success");
      expect(Number(order.complete_time)).toBeGreaterThan(0);
      const logs = await ctx.deps.db
        .selectFrom("logs")
        .selectAll()
        .where("user_id", "=", alice.id)
        .where("type", "=", 1)
        .where("content", "like", `%${f.out_trade_no}%`)
        .execute();
      expect(logs).toHaveLength(1);
      expect(Number(logs[0].quota)).toBe(1_500_000);
      // Language-neutral facts for the console, which words the details in the reader's language.
      expect(JSON.parse(logs[0].other!)).toEqual({
        money: Number(order.money),
        payment_method: "zfb",
        trade_no: f.out_trade_no,
      });
    });

    test("concurrent duplicate notifications credit exactly once", async () => {
      await configure();
      const f = (await ctx.request("POST", "/api/user/pay", { as: alice, body: { amount: 2, payment_method: "wx" } }))
        .body.data;
      const before = await quotaOf(alice.id);
      const replies = await Promise.all(Array.from({ length: 12 }, () => ctx.request("GET", notice(f))));
      expect(replies.every((r) => r.body === "success")).toBe(true);
      expect(await quotaOf(alice.id)).toBe(before + 1_000_000);
    });

    test("forged, tampered, foreign, underpaid and unpaid notifications credit nothing", async () => {
      await configure();
      const f = (await ctx.request("POST", "/api/user/pay", { as: alice, body: { amount: 4, payment_method: "zfb" } }))
        .body.data;
      const before = await quotaOf(alice.id);
      const forged = await ctx.request("GET", notice(f, {}, "wrong-key"));
      expect(forged.status).toBe(400);
      expect(forged.body).toBe("fail");
      const good = new URLSearchParams(notice(f).split("?")[1]);
      good.set("money", "999.00");
      expect((await ctx.request("GET", "/api/user/epay/notify?" + good.toString())).body).toBe("fail");
      expect((await ctx.request("GET", notice(f, { pid: "9999" }))).body).toBe("fail");
      expect((await ctx.request("GET", notice(f, { money: "0.01" }))).body).toBe("fail");
      expect((await ctx.request("GET", notice({ out_trade_no: "nosuchorder", money: "1.00" }))).status).toBe(404);
      const unpaid = await ctx.request("GET", notice(f, { trade_status: "WAIT_BUYER_PAY" }));
      expect(unpaid.body).toBe("success");
      expect(await quotaOf(alice.id)).toBe(before);
      const order = await ctx.deps.db
        .selectFrom("top_ups")
        .select("status")
        .where("trade_no", "=", f.out_trade_no)
        .executeTakeFirstOrThrow();
      expect(order.status).toBe("pending");
    });

    test("a form-encoded POST notification is accepted too", async () => {
      await configure();
      const f = (await ctx.request("POST", "/api/user/pay", { as: alice, body: { amount: 1, payment_method: "zfb" } }))
        .body.data;
      const before = await quotaOf(alice.id);
      const r = await ctx.request("POST", "/api/user/epay/notify", {
        raw: notice(f).split("?")[1],
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      expect(r.body).toBe("success");
      expect(await quotaOf(alice.id)).toBe(before + 500_000);
    });
  });
}
