// Telegram's login widget: the browser hands over the fields Telegram signed. The gateway checks the hash
// (HMAC-SHA256 over the sorted "key=value" lines, keyed with SHA-256 of the bot token) and refuses data
// older than a day, then logs in, registers or binds by the Telegram user id.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createHash, createHmac } from "node:crypto";
import { testContext, type TestContext } from "../helpers/app.ts";
import { sessionOf } from "../helpers/oauth.ts";

const BOT_TOKEN = "123456:ABC-bot-token";
let ctx: TestContext;
const set = (key: string, value: string) => ctx.deps.options.set(key, value);

beforeAll(async () => {
  ctx = await testContext();
  await set("TelegramBotToken", BOT_TOKEN);
  await set("TelegramBotName", "yard_bot");
});
afterAll(() => ctx.close());
beforeEach(() => set("TelegramOAuthEnabled", "true"));

/** What Telegram's widget produces, signed as Telegram documents it (core.telegram.org/widgets/login). */
function widget(fields: Record<string, string | number>, token = BOT_TOKEN): Record<string, string> {
  const data: Record<string, string> = {
    auth_date: String(Math.floor(Date.now() / 1000)),
    ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)])),
  };
  const check = Object.keys(data)
    .sort()
    .map((k) => `${k}=${data[k]}`)
    .join("\n");
  const hash = createHmac("sha256", createHash("sha256").update(token).digest()).update(check).digest("hex");
  return { ...data, hash };
}

const qs = (data: Record<string, string>) => "?" + new URLSearchParams(data).toString();
const tgLogin = (data: Record<string, string>) => ctx.request("GET", `/api/oauth/telegram/login${qs(data)}`);
const byTg = (id: string) => ctx.deps.db.selectFrom("users").selectAll().where("telegram_id", "=", id).execute();

describe("Telegram login", () => {
  test("good data from a new Telegram user registers telegram_<n> and logs in; the second login is the same user", async () => {
    const max = await ctx.deps.db
      .selectFrom("users")
      .select((eb) => eb.fn.max("id").as("m"))
      .executeTakeFirstOrThrow();
    const r = await tgLogin(
      widget({
        id: 7001,
        first_name: "Ada",
        last_name: "Lovelace",
        username: "ada",
        photo_url: "https://t.me/i/userpic/320/ada.jpg?x=1&y=2",
      }),
    );
    expect(r.body.success).toBe(true);
    expect(r.body.data).toMatchObject({
      username: `telegram_${Number(max.m) + 1}`,
      display_name: "Ada Lovelace",
      telegram_id: "7001",
    });
    const session = sessionOf(r)!;
    expect((await ctx.request("GET", "/api/user/self", { as: session })).body.data.telegram_id).toBe("7001");
    const again = await tgLogin(widget({ id: 7001, first_name: "Ada" }));
    expect(again.body.data.id).toBe(r.body.data.id);
    expect(await byTg("7001")).toHaveLength(1);
  });

  test("every field sent is covered by the hash, extra ones (lang) included", async () => {
    const r = await tgLogin(widget({ id: 7002, first_name: "Lin", lang: "en" }));
    expect(r.body.success).toBe(true);
  });

  test("a bad hash is refused: a changed field, another bot's signature, or no hash", async () => {
    const tampered = { ...widget({ id: 7003, first_name: "Eve" }), id: "7001" };
    const r = await tgLogin(tampered);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, message: "invalid Telegram sign-in data" });
    expect(sessionOf(r)).toBeNull();
    expect((await tgLogin(widget({ id: 7003, first_name: "Eve" }, "999:other-bot"))).body.success).toBe(false);
    const { hash: _h, ...unsigned } = widget({ id: 7003, first_name: "Eve" });
    expect((await tgLogin(unsigned)).body.success).toBe(false);
    // An added field breaks the signature too.
    expect((await tgLogin({ ...widget({ id: 7003, first_name: "Eve" }), role: "100" })).body.success).toBe(false);
    expect(await byTg("7003")).toHaveLength(0);
  });

  test("data signed more than a day ago is refused as stale; a few hours old is fine", async () => {
    const now = Math.floor(Date.now() / 1000);
    const stale = await tgLogin(widget({ id: 7004, first_name: "Old", auth_date: now - 86400 - 60 }));
    expect(stale.status).toBe(400);
    expect(stale.body).toEqual({ success: false, message: "the Telegram sign-in has expired, please sign in again" });
    expect((await tgLogin(widget({ id: 7004, first_name: "Recent", auth_date: now - 3 * 3600 }))).body.success).toBe(
      true,
    );
  });

  test("switched off, banned, or registration closed: refused", async () => {
    await set("TelegramOAuthEnabled", "false");
    const off = await tgLogin(widget({ id: 7005, first_name: "Off" }));
    expect(off.body).toEqual({ success: false, message: "the administrator has not enabled sign-in with Telegram" });
    await set("TelegramOAuthEnabled", "true");
    await ctx.deps.db
      .insertInto("users")
      .values({ username: "tg_banned", password: "", telegram_id: "7006", status: 2, aff_code: "tgbanned" } as any)
      .execute();
    const banned = await tgLogin(widget({ id: 7006, first_name: "Banned" }));
    expect(banned.body).toEqual({ success: false, message: "user has been banned" });
    await set("RegisterEnabled", "false");
    try {
      const closed = await tgLogin(widget({ id: 7007, first_name: "New" }));
      expect(closed.body).toEqual({ success: false, message: "registration is closed by the administrator" });
    } finally {
      await set("RegisterEnabled", "true");
    }
  });
});

describe("Telegram binding", () => {
  test("a logged-in user binds with good data; an id bound to someone else, bad data and guests are refused", async () => {
    const me = await ctx.user();
    const r = await ctx.request("GET", `/api/oauth/telegram/bind${qs(widget({ id: 8001, first_name: "Me" }))}`, {
      as: me,
    });
    expect(r.body).toMatchObject({ success: true, message: "bind", data: { id: me.id, telegram_id: "8001" } });
    const other = await ctx.user();
    const taken = await ctx.request("GET", `/api/oauth/telegram/bind${qs(widget({ id: 8001, first_name: "Me" }))}`, {
      as: other,
    });
    expect(taken.body).toEqual({ success: false, message: "this Telegram account is already bound to another user" });
    const forged = await ctx.request(
      "GET",
      `/api/oauth/telegram/bind${qs({ ...widget({ id: 8002 }), hash: "0".repeat(64) })}`,
      { as: other },
    );
    expect(forged.body).toEqual({ success: false, message: "invalid Telegram sign-in data" });
    // A bare cookie is not enough: the route needs the New-Api-User header a cross-site link can't send.
    const cookieOnly = await ctx.request("GET", `/api/oauth/telegram/bind${qs(widget({ id: 8003 }))}`, {
      headers: { cookie: other.cookie },
    });
    expect(cookieOnly.status).toBe(401);
    expect(await byTg("8003")).toHaveLength(0);
    expect((await byTg("8001")).map((u) => u.id)).toEqual([me.id]);
  });
});
