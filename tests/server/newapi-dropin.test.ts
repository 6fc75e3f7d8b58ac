// An operator moving from new-api: Switchyard opens a database new-api created (its tables and gorm column types,
// realistic rows, on SQLite, PostgreSQL and MySQL), signs in with the old bcrypt passwords, relays with an old
// token against a mock upstream and bills as new-api would, lists everything with one JSON shape on every
// database, and leaves every row in a form new-api can load again.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds, tempDatabase, type TempDb } from "../helpers/db.ts";
import { createKysely } from "../../db/index.ts";
import { startMockUpstream, type MockUpstream } from "../mocks/openai-upstream.ts";
import { flushRelayWrites } from "../../server/relay/state.ts";
import {
  ALICE_TOKEN,
  BOB_TOKEN,
  DELETED_TOKEN,
  GORM_CHANNEL_INFO,
  OLD_PASSWORDS,
  REDEMPTION,
  createNewApiSchema,
  newApiReadable,
  seedNewApiRows,
} from "../helpers/newapi-db.ts";
import type { Dialect } from "../../db/dialect.ts";

const bcrypt = (p: string) => Bun.password.hash(p, { algorithm: "bcrypt", cost: 4 });

/** A value's JSON type, objects and arrays described by their members (first element for arrays). */
function shape(v: unknown): unknown {
  if (v === null) return "null";
  if (Array.isArray(v)) return v.length ? [shape(v[0])] : [];
  if (typeof v === "object")
    return Object.fromEntries(
      Object.entries(v as object)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, x]) => [k, shape(x)]),
    );
  return typeof v;
}

const shapes = new Map<Dialect, Record<string, unknown>>();

async function newApiDatabase(
  kind: Dialect,
  upstream: string,
): Promise<{ tmp: TempDb; ids: Awaited<ReturnType<typeof seedNewApiRows>> }> {
  let tmp: TempDb;
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "sy-newapi-"));
    tmp = {
      kind,
      url: "",
      sqlitePath: join(dir, "one-api.db"),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  } else tmp = await tempDatabase(kind);
  const raw = createKysely({ kind, url: tmp.url, sqlitePath: tmp.sqlitePath });
  await createNewApiSchema(raw);
  const ids = await seedNewApiRows(raw, upstream, bcrypt);
  await raw.destroy();
  return { tmp, ids };
}

for (const kind of storageKinds()) {
  describe(`a new-api database opened by Switchyard [${kind}]`, () => {
    let mock: MockUpstream;
    let tmp: TempDb;
    let ids: Awaited<ReturnType<typeof seedNewApiRows>>;
    let ctx: TestContext;
    let root: Session;
    let alice: Session;
    const found: Record<string, unknown> = {};
    beforeAll(async () => {
      mock = startMockUpstream({ usage: { prompt_tokens: 9, completion_tokens: 5 } });
      ({ tmp, ids } = await newApiDatabase(kind, mock.url));
      // Before Switchyard touches it, the checker accepts what new-api wrote (so it judges rather than rejects).
      const raw = createKysely({ kind, url: tmp.url, sqlitePath: tmp.sqlitePath });
      expect(await newApiReadable(raw)).toEqual([]);
      await raw.destroy();
      ctx = await testContext({ database: tmp, config: { batchUpdateIntervalMs: 50 } as any });
    }, 60_000);
    afterAll(async () => {
      await ctx?.close();
      await tmp?.drop();
      await mock?.stop();
    });

    const db = () => ctx.deps.db;
    const chat = (key: string, model: string) =>
      ctx.app.handle(
        new Request("http://localhost/v1/chat/completions", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
        }),
      );
    const get = async (path: string, as: Session | null) => {
      const r = await ctx.request("GET", path, { as });
      expect({ path, success: r.body.success }).toEqual({ path, success: true });
      return r.body.data;
    };

    test("opens cleanly: rows kept, setup done, Switchyard's columns and tables added", async () => {
      expect((await db().selectFrom("users").select("id").execute()).length).toBe(4);
      expect((await ctx.request("GET", "/api/setup")).body.data).toMatchObject({ status: true, root_init: true });
      const tables = new Map((await db().introspection.getTables()).map((t) => [t.name, t.columns.map((c) => c.name)]));
      expect(tables.get("users")).toContain("session_version");
      expect(tables.get("channels")).toContain("max_input_tokens");
      expect(tables.has("quota_holds")).toBe(true);
      // new-api's own later columns are left alone
      expect(tables.get("users")).toContain("stripe_customer");
    });

    test("signs in with the bcrypt passwords new-api stored; a soft-deleted user cannot", async () => {
      root = await ctx.login("root", OLD_PASSWORDS.root);
      alice = await ctx.login("alice", OLD_PASSWORDS.alice);
      expect(alice.id).toBe(ids.users.alice);
      const gone = await ctx.request("POST", "/api/user/login", { body: { username: "gone", password: "gonepass12" } });
      expect(gone.body.success).toBe(false);
      const wrong = await ctx.request("POST", "/api/user/login", {
        body: { username: "alice", password: "wrongpass1" },
      });
      expect(wrong.body.success).toBe(false);
    });

    test("new-api's created_at and last_login_at: added to an older schema, set on sign-in and on new accounts, listed", async () => {
      const before = Math.floor(Date.now() / 1000) - 1;
      const times = async (username: string) =>
        db()
          .selectFrom("users")
          .select(["created_at", "last_login_at"])
          .where("username", "=", username)
          .executeTakeFirstOrThrow();
      // Signed in above; bob never was, and his row predates the columns.
      expect(Number((await times("alice")).last_login_at)).toBeGreaterThanOrEqual(before);
      expect(await times("bob")).toEqual({ created_at: 0, last_login_at: 0 } as any);
      expect(
        (await ctx.request("POST", "/api/user/", { as: root, body: { username: "timed", password: "timed12345" } }))
          .body.success,
      ).toBe(true);
      const made = await times("timed");
      expect(Number(made.created_at)).toBeGreaterThanOrEqual(before);
      expect(Number(made.last_login_at)).toBe(0);
      await ctx.login("timed", "timed12345");
      expect(Number((await times("timed")).last_login_at)).toBeGreaterThanOrEqual(before);
      const list = await ctx.request("GET", "/api/user/?p=0&page_size=100", { as: root });
      const row = list.body.data.items.find((u: any) => u.username === "timed");
      expect(row).toMatchObject({ created_at: Number(made.created_at) });
      expect(typeof row.last_login_at).toBe("number");
      expect(row.last_login_at).toBeGreaterThanOrEqual(before);
    });

    test("the status object carries new-api's settings as its console reads them", async () => {
      const s = await get("/api/status", null);
      expect(s).toMatchObject({
        system_name: "Old New API",
        quota_display_type: "CNY",
        usd_exchange_rate: 7.2,
        display_in_currency: true,
        checkin_enabled: true,
        api_info_enabled: false,
        announcements_enabled: true,
        faq_enabled: true,
        HeaderNavModules: expect.stringContaining('"pricing"'),
      });
      expect(s.announcements).toEqual([
        { content: "维护通知", publishDate: "2025-05-01T08:00:00+08:00", type: "warning" },
      ]);
      expect(s.faq).toEqual([{ question: "怎么充值？", answer: "兑换码" }]);
      expect("api_info" in s).toBe(false);
      const opts = await get("/api/option/", root);
      const keys = new Set(opts.map((o: any) => o.key));
      expect(keys.has("AutomaticDisableStatusCodes")).toBe(true);
      expect(keys.has("StripeApiSecret")).toBe(false);
      expect(JSON.stringify(opts)).not.toContain("sk_live_old_stripe");
    });

    test("relays with an old token (stored without sk-) and bills as new-api: built-in completion ratio, group ratio", async () => {
      const before = await db()
        .selectFrom("users")
        .select(["quota", "used_quota"])
        .where("id", "=", ids.users.alice)
        .executeTakeFirstOrThrow();
      const tokenBefore = await db()
        .selectFrom("tokens")
        .select("remain_quota")
        .where("key", "=", ALICE_TOKEN)
        .executeTakeFirstOrThrow();
      const r = await chat(`sk-${ALICE_TOKEN}`, "gpt-3.5-turbo");
      expect(r.status).toBe(200);
      expect(mock.seen.at(-1)!.authorization).toBe("Bearer sk-upstream-old");
      await flushRelayWrites(ctx.deps);
      // 0.25 × (9 + 5 × 3) = 6: gpt-3.5-turbo has no CompletionRatio entry, new-api's built-in 3 applies
      const log = await db()
        .selectFrom("logs")
        .selectAll()
        .where("user_id", "=", ids.users.alice)
        .where("type", "=", 2)
        .orderBy("id", "desc")
        .executeTakeFirstOrThrow();
      expect(Number(log.quota)).toBe(6);
      expect(JSON.parse(log.other)).toMatchObject({ model_ratio: 0.25, completion_ratio: 3, group_ratio: 1 });
      const after = await db()
        .selectFrom("users")
        .select(["quota", "used_quota"])
        .where("id", "=", ids.users.alice)
        .executeTakeFirstOrThrow();
      expect(Number(before.quota) - Number(after.quota)).toBe(6);
      expect(Number(after.used_quota) - Number(before.used_quota)).toBe(6);
      const tokenAfter = await db()
        .selectFrom("tokens")
        .select("remain_quota")
        .where("key", "=", ALICE_TOKEN)
        .executeTakeFirstOrThrow();
      expect(Number(tokenBefore.remain_quota) - Number(tokenAfter.remain_quota)).toBe(6);
      // bob: vip group (GroupRatio 1.5), unlimited token; gpt-4o's built-in completion ratio 4: 1.25 × (9 + 20) × 1.5 = 54.375
      expect((await chat(BOB_TOKEN, "gpt-4o")).status).toBe(200);
      await flushRelayWrites(ctx.deps);
      const bobLog = await db()
        .selectFrom("logs")
        .selectAll()
        .where("user_id", "=", ids.users.bob)
        .orderBy("id", "desc")
        .executeTakeFirstOrThrow();
      expect(Number(bobLog.quota)).toBe(54);
      expect(bobLog.group).toBe("vip");
    });

    test("a token new-api soft-deleted no longer authenticates or lists; a key new-api disabled is never used", async () => {
      const r = await chat(`sk-${DELETED_TOKEN}`, "gpt-3.5-turbo");
      expect(r.status).toBe(401);
      const tokens = await get("/api/token/?p=1&size=10", alice);
      expect(tokens.items.map((t: any) => t.name)).toEqual(["alice-main"]);
      const seen = mock.seen.length;
      for (let i = 0; i < 4; i++) expect((await chat(`sk-${ALICE_TOKEN}`, "gpt-4o-mini")).status).toBe(200);
      expect(mock.seen.slice(seen).map((s) => s.authorization)).toEqual(Array(4).fill("Bearer sk-multi-k0"));
    });

    test("redemption codes: expired and disabled ones are refused, an unused one redeems", async () => {
      expect(
        (await ctx.request("POST", "/api/user/topup", { as: alice, body: { key: REDEMPTION.expired } })).body.message,
      ).toBe("this redemption code has expired");
      expect(
        (await ctx.request("POST", "/api/user/topup", { as: alice, body: { key: REDEMPTION.disabled } })).body.message,
      ).toBe("this redemption code has been disabled");
      expect(
        (await ctx.request("POST", "/api/user/topup", { as: alice, body: { key: REDEMPTION.used } })).body.message,
      ).toBe("redemption code already used");
      expect(
        (await ctx.request("POST", "/api/user/topup", { as: alice, body: { key: REDEMPTION.unused } })).body,
      ).toMatchObject({ success: true, data: 300_000 });
    });

    test("lists answer every field with one JSON type (the same on every database): users, tokens, channels, logs, codes, tasks, models", async () => {
      const users = await get("/api/user/?p=1&page_size=100", root);
      const a = users.items.find((u: any) => u.username === "alice");
      expect(a).toMatchObject({
        github_id: "",
        oidc_id: "",
        wechat_id: "",
        telegram_id: "",
        linux_do_id: "",
        quota: expect.any(Number),
        role: 1,
        group: "default",
      });
      found.users = a;
      const tokens = await get("/api/token/?p=1&size=10", alice);
      expect(tokens.items[0]).toMatchObject({
        unlimited_quota: false,
        model_limits_enabled: false,
        remain_quota: expect.any(Number),
        key: `sk-${ALICE_TOKEN}`,
      });
      found.tokens = tokens.items[0];
      const channels = await get("/api/channel/?p=1&page_size=10", root);
      const multi = channels.items.find((c: any) => c.name === "multi");
      expect(multi.channel_info).toMatchObject({
        is_multi_key: true,
        multi_key_size: 2,
        multi_key_status_list: { 1: 2 },
      });
      expect(typeof multi.balance).toBe("number");
      found.channels = channels.items.find((c: any) => c.name === "openai-default");
      const logs = await get("/api/log/?p=1&page_size=50&type=0", root);
      const old = logs.items.find((l: any) => l.content === "模型倍率 0.25，补全倍率 3");
      expect(old).toMatchObject({ quota: 6, prompt_tokens: 9, is_stream: false, model_name: "gpt-3.5-turbo" });
      found.logs = old;
      const codes = await get("/api/redemption/?p=1&page_size=10", root);
      const expired = codes.items.find((x: any) => x.key === REDEMPTION.expired);
      expect(expired).toMatchObject({ expired_time: expect.any(Number), status: 1 });
      found.codes = codes.items.find((x: any) => x.key === REDEMPTION.disabled);
      expect((found.codes as any).expired_time).toBe(0);
      const drawings = await get("/api/mj/?p=0&page_size=10", root);
      expect(drawings[0]).toMatchObject({
        mj_id: "1700000000123456",
        status: "SUCCESS",
        quota: 50_000,
        properties: "",
      });
      found.drawings = drawings[0];
      const tasks = await get("/api/task/?p=0&page_size=10", root);
      expect(tasks[0]).toMatchObject({
        task_id: "suno-old-1",
        properties: { input: "a song" },
        data: [{ id: "clip1", status: "complete" }],
      });
      expect("private_data" in tasks[0]).toBe(false);
      found.tasks = tasks[0];
      const mine = await get("/api/task/self?p=0&page_size=10", alice);
      expect(JSON.stringify(mine)).not.toContain("sk-upstream-old");
      found.meta = (await get("/api/models/?p=1&page_size=10", root)).items[0];
      found.vendors = (await get("/api/vendors/?p=1&page_size=10", root)).items[0];
      found.prefill = (await get("/api/prefill_group?type=model", root))[0];
      expect((found.prefill as any).items).toEqual(["gpt-4o", "gpt-4o-mini"]);
      found.checkin = await get("/api/user/checkin?month=2025-01", alice);
      expect((found.checkin as any).stats.records).toEqual([{ checkin_date: "2025-01-01", quota_awarded: 1500 }]);
      found.data = (await get("/api/data/?start_timestamp=0&end_timestamp=4102444800", root))[0];
      shapes.set(kind, Object.fromEntries(Object.entries(found).map(([k, v]) => [k, shape(v)])));
    });

    test("rows Switchyard writes are ones new-api can load again: channel_info objects, gorm datetimes, JSON columns, integers", async () => {
      const single = await ctx.request("POST", "/api/channel/", {
        as: root,
        body: { type: 1, name: "made-here", key: "sk-x", models: "gpt-4o" },
      });
      expect(single.body.success).toBe(true);
      const made = await db()
        .selectFrom("channels")
        .select("channel_info")
        .where("id", "=", single.body.data.ids[0])
        .executeTakeFirstOrThrow();
      expect(JSON.parse(String(made.channel_info))).toEqual(JSON.parse(GORM_CHANNEL_INFO));
      const multi = await ctx.request("POST", "/api/channel/", {
        as: root,
        body: {
          type: 1,
          name: "multi-here",
          key: "a1\nb2\nc3",
          models: "m",
          mode: "multi_to_single",
          multi_key_mode: "random",
        },
      });
      const multiId = multi.body.data.ids[0];
      await ctx.request("POST", "/api/channel/multi_key/manage", {
        as: root,
        body: { channel_id: multiId, action: "disable_key", key_index: 2 },
      });
      await ctx.request("PUT", "/api/channel/", { as: root, body: { id: ids.channels["old-disabled"], status: 1 } });
      await ctx.request("POST", `/api/channel/copy/${ids.channels.multi}`, { as: root });
      const tok = await ctx.request("POST", "/api/token/", {
        as: alice,
        body: { name: "new", remain_quota: 5, expired_time: Math.floor(Date.now() / 1000) + 3600 },
      });
      await ctx.request("POST", "/api/token/batch", { as: alice, body: { ids: [tok.body.data[0].id] } });
      const codes = await ctx.request("POST", "/api/redemption/", {
        as: root,
        body: { name: "later", quota: 5, count: 2, expired_time: Math.floor(Date.now() / 1000) + 3600 },
      });
      const code = await db()
        .selectFrom("redemptions")
        .select("id")
        .where("key", "=", codes.body.data[0])
        .executeTakeFirstOrThrow();
      await ctx.request("DELETE", `/api/redemption/${code.id}`, { as: root });
      await ctx.request("DELETE", "/api/redemption/invalid", { as: root });
      await ctx.request("POST", "/api/user/manage", { as: root, body: { id: ids.users.bob, action: "delete" } });
      await ctx.request("PUT", "/api/option/", {
        as: root,
        body: { key: "general_setting.quota_display_type", value: "CUSTOM" },
      });
      await ctx.request("PUT", "/api/option/", {
        as: root,
        body: { key: "console_setting.uptime_kuma_groups", value: "[]" },
      });
      expect((await ctx.request("POST", "/api/user/checkin", { as: alice })).body.success).toBe(true);
      const v = await ctx.request("POST", "/api/vendors/", { as: root, body: { name: "Anthropic" } });
      await ctx.request("DELETE", `/api/vendors/${v.body.data.id}`, { as: root });
      const m = await ctx.request("POST", "/api/models/", { as: root, body: { model_name: "claude-x", vendor_id: 1 } });
      await ctx.request("DELETE", `/api/models/${m.body.data.id}`, { as: root });
      const p = await ctx.request("POST", "/api/prefill_group/", {
        as: root,
        body: { name: "tags", type: "tag", items: ["a"] },
      });
      await ctx.request("DELETE", `/api/prefill_group/${p.body.data.id}`, { as: root });
      expect((await ctx.request("POST", "/api/user/2fa/setup", { as: alice })).body.success).toBe(true);
      expect((await ctx.request("GET", "/api/user/token", { as: alice })).body.data).toHaveLength(32);
      expect(
        (
          await ctx.request("POST", "/api/user/", {
            as: root,
            body: { username: "newbie", password: "newbie1234", display_name: "Newbie" },
          })
        ).body.success,
      ).toBe(true);
      expect((await chat(`sk-${ALICE_TOKEN}`, "gpt-3.5-turbo")).status).toBe(200);
      await flushRelayWrites(ctx.deps);
      expect(await newApiReadable(db())).toEqual([]);
      // and what those writes look like, where new-api's reading is strict
      const bob = await db()
        .selectFrom("users")
        .select("deleted_at")
        .where("id", "=", ids.users.bob)
        .executeTakeFirstOrThrow();
      expect(bob.deleted_at).not.toBeNull();
      const opt = await db()
        .selectFrom("options")
        .select("value")
        .where("key", "=", "DisplayInCurrencyEnabled")
        .executeTakeFirstOrThrow();
      expect(opt.value).toBe("true");
    }, 30_000);
  });
}

describe("the new-api readability check", () => {
  test("flags what new-api could not load: '' or a JSON string in channel_info, text in a datetime or integer column, a bad bool", async () => {
    const raw = createKysely({ kind: "sqlite", url: "", sqlitePath: ":memory:" });
    await createNewApiSchema(raw);
    await seedNewApiRows(raw, "http://127.0.0.1:1", bcrypt);
    expect(await newApiReadable(raw)).toEqual([]);
    await raw.updateTable("channels").set({ channel_info: "" }).where("name", "=", "openai-default").execute();
    await raw.updateTable("channels").set({ channel_info: '""' }).where("name", "=", "multi").execute();
    await raw
      .updateTable("tokens")
      .set({ deleted_at: "yesterday", remain_quota: "12 units" as any })
      .where("name", "=", "alice-main")
      .execute();
    await raw
      .updateTable("abilities")
      .set({ enabled: 7 as any })
      .where("model", "=", "gpt-4o-mini")
      .execute();
    await raw.updateTable("tasks").set({ data: "not json" }).execute();
    const problems = await newApiReadable(raw);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^channels\[\d\]\.channel_info: not JSON: ""$/),
        expect.stringMatching(/^channels\[\d\]\.channel_info: not an object/),
        expect.stringMatching(/^tokens\[0\]\.deleted_at: datetime text/),
        expect.stringMatching(/^tokens\[0\]\.remain_quota: not an integer/),
        expect.stringMatching(/^abilities\[\d\]\.enabled: not a bool/),
        expect.stringMatching(/^tasks\[0\]\.data: not JSON/),
        expect.stringMatching(/^channels\[\d\]\.channel_info: text where new-api writes and reads a blob$/),
        "tasks[0].data: text where new-api writes and reads a blob",
      ]),
    );
    expect(problems.length).toBe(9);
    // Valid JSON is not enough on SQLite: new-api's channel query fails on a TEXT channel_info.
    await raw
      .updateTable("channels")
      .set({ channel_info: GORM_CHANNEL_INFO })
      .where("name", "=", "old-disabled")
      .execute();
    expect(await newApiReadable(raw)).toContain("channels[2].channel_info: text where new-api writes and reads a blob");
    await raw.destroy();
  });
});

describe("the same JSON types on every database", () => {
  test("each list's field types match SQLite's on PostgreSQL and MySQL", () => {
    const base = shapes.get("sqlite");
    expect(base).toBeDefined();
    for (const [kind, s] of shapes) expect({ kind, s }).toEqual({ kind, s: base! });
  });
});
