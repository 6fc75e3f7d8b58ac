import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { storageKinds } from "../helpers/db.ts";
import { onChannelsChanged } from "../../server/modules/channel/events.ts";

const base = { type: 1, name: "ch", key: "sk-aaa", models: "gpt-4o,gpt-4o-mini", group: "default,vip" };

for (const kind of storageKinds()) {
  describe(`channels [${kind}]`, () => {
    let ctx: TestContext;
    let admin: Session;
    let user: Session;
    beforeAll(async () => {
      ctx = await testContext({ kind });
      admin = await ctx.user(10);
      user = await ctx.user(1);
    });
    afterAll(() => ctx.close());

    const create = (body: Record<string, unknown>) => ctx.request("POST", "/api/channel/", { as: admin, body });
    const abilities = (id: number) =>
      ctx.deps.db
        .selectFrom("abilities")
        .selectAll()
        .where("channel_id", "=", id)
        .orderBy("group")
        .orderBy("model")
        .execute();
    const channelRow = (id: number) =>
      ctx.deps.db.selectFrom("channels").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

    test("every channel route refuses an ordinary user and a guest", async () => {
      const routes: [string, string, unknown?][] = [
        ["GET", "/api/channel/"],
        ["GET", "/api/channel/search?keyword=x"],
        ["GET", "/api/channel/1"],
        ["POST", "/api/channel/", base],
        ["PUT", "/api/channel/", { id: 1, name: "x" }],
        ["DELETE", "/api/channel/1/"],
        ["DELETE", "/api/channel/disabled"],
        ["POST", "/api/channel/batch", { ids: [1] }],
        ["POST", "/api/channel/batch/tag", { ids: [1], tag: "t" }],
        ["POST", "/api/channel/fix"],
        ["PUT", "/api/channel/tag", { tag: "t", priority: 1 }],
        ["POST", "/api/channel/tag/enabled", { tag: "t" }],
        ["POST", "/api/channel/tag/disabled", { tag: "t" }],
        ["GET", "/api/channel/test"],
        ["GET", "/api/channel/test/progress"],
        ["GET", "/api/channel/test/1"],
        ["GET", "/api/channel/update_balance"],
        ["GET", "/api/channel/update_balance/1/"],
        ["GET", "/api/channel/fetch_models/1"],
        ["POST", "/api/channel/fetch_models", { key: "k" }],
      ];
      for (const [method, path, body] of routes) {
        const asUser = await ctx.request(method, path, { as: user, body });
        expect([path, asUser.status, asUser.body.success]).toEqual([path, 403, false]);
        const guest = await ctx.request(method, path, { body });
        expect([path, guest.status]).toEqual([path, 401]);
      }
      expect(await ctx.deps.db.selectFrom("channels").select("id").execute()).toEqual([]);
    });

    test("create validation messages; bad input creates nothing", async () => {
      const msg = async (body: Record<string, unknown>) => (await create(body)).body.message;
      expect(await msg({ ...base, name: "" })).toBe("please fill in channel name and key");
      expect(await msg({ ...base, key: "  " })).toBe("please fill in channel name and key");
      expect(await msg({ ...base, models: "" })).toBe("select at least one model");
      expect(await msg({ ...base, models: " , " })).toBe("select at least one model");
      expect(await msg({ ...base, model_mapping: "{nope" })).toBe("model mapping must be valid JSON");
      expect(await msg({ ...base, model_mapping: "[1]" })).toBe("model mapping must be valid JSON");
      expect(await msg({ ...base, status_code_mapping: "x" })).toBe("status code mapping must be valid JSON");
      expect(await msg({ ...base, priority: "1.5" })).toBe(
        "priority must be an integer from -9007199254740991 to 9007199254740991",
      );
      expect(await msg({ ...base, priority: "high" })).toBe(
        "priority must be an integer from -9007199254740991 to 9007199254740991",
      );
      expect(await msg({ ...base, weight: -1 })).toBe("weight must be an integer from 0 to 9007199254740991");
      expect(await msg({ ...base, type: 999 })).toBe("unknown channel type 999");
      expect(await msg({ ...base, base_url: "ftp://x" })).toBe("base URL must start with http:// or https://");
      expect(await msg({ ...base, mode: "weird" })).toBe("mode must be single, batch or multi_to_single");
      expect(await ctx.deps.db.selectFrom("channels").select("id").execute()).toEqual([]);
      expect(await ctx.deps.db.selectFrom("abilities").select("channel_id").execute()).toEqual([]);
    });

    test("create: defaults, numeric strings, trailing slash stripped, abilities = groups × models", async () => {
      let heard = 0;
      const sub = onChannelsChanged(ctx.deps, () => heard++);
      const r = await create({
        ...base,
        base_url: "https://up.example.com/",
        priority: "5",
        weight: "3",
        models: "gpt-4o, gpt-4o-mini,gpt-4o",
      });
      await sub.unsubscribe();
      expect(r.body.success).toBe(true);
      const id = r.body.data.ids[0];
      const row = await channelRow(id);
      expect(row).toMatchObject({
        base_url: "https://up.example.com",
        priority: 5,
        weight: 3,
        status: 1,
        auto_ban: 1,
        models: "gpt-4o,gpt-4o-mini",
        group: "default,vip",
      });
      const ab = await abilities(id);
      expect(ab.map((a) => `${a.group}/${a.model}/${Boolean(a.enabled)}/${a.priority}/${a.weight}`)).toEqual([
        "default/gpt-4o/true/5/3",
        "default/gpt-4o-mini/true/5/3",
        "vip/gpt-4o/true/5/3",
        "vip/gpt-4o-mini/true/5/3",
      ]);
      expect(heard).toBe(1);
    });

    test("type 18 with empty other defaults to v2.1; an empty group means default", async () => {
      const r = await create({ ...base, type: 18, other: "", group: "" });
      const row = await channelRow(r.body.data.ids[0]);
      expect(row.other).toBe("v2.1");
      expect(row.group).toBe("default");
      const kept = await create({ ...base, type: 18, other: "v3.5" });
      expect((await channelRow(kept.body.data.ids[0])).other).toBe("v3.5");
    });

    test("batch mode makes one channel per key line; neither get (empty key) nor lists return the key", async () => {
      const r = await create({ ...base, name: "batchy", key: "k-one\nk-two\n\nk-three\n" });
      expect(r.body.data.ids).toHaveLength(3);
      const keys = await Promise.all(r.body.data.ids.map(async (id: number) => (await channelRow(id)).key));
      expect(keys).toEqual(["k-one", "k-two", "k-three"]);
      const got = await ctx.request("GET", `/api/channel/${r.body.data.ids[1]}`, { as: admin });
      expect(got.body.data.key).toBe("");
      expect(JSON.stringify(got.body)).not.toContain("k-two");
      const list = await ctx.request("GET", "/api/channel/?p=1&page_size=100", { as: admin });
      expect(list.body.data.items.length).toBeGreaterThanOrEqual(3);
      expect(list.body.data.items.every((c: any) => !("key" in c))).toBe(true);
      expect(JSON.stringify(list.body)).not.toContain("k-two");
      const search = await ctx.request("GET", "/api/channel/search?keyword=k-two", { as: admin });
      expect(search.body.data.total).toBe(0);
      expect((await ctx.request("GET", "/api/channel/999999", { as: admin })).body).toEqual({
        success: false,
        message: "channel not found, refresh and retry",
      });
    });

    test("multi-key mode keeps one channel with the key list and rotation state", async () => {
      const r = await create({
        ...base,
        name: "multi",
        key: "m1\nm2\nm3",
        mode: "multi_to_single",
        multi_key_mode: "random",
      });
      expect(r.body.data.ids).toHaveLength(1);
      const row = await channelRow(r.body.data.ids[0]);
      expect(row.key).toBe("m1\nm2\nm3");
      expect(JSON.parse(row.channel_info)).toMatchObject({
        is_multi_key: true,
        multi_key_size: 3,
        multi_key_mode: "random",
      });
      const got = await ctx.request("GET", `/api/channel/${row.id}`, { as: admin });
      expect(got.body.data.key_count).toBe(3);
      const appended = await ctx.request("PUT", "/api/channel/", {
        as: admin,
        body: { id: row.id, key: "m3\nm4", key_mode: "append" },
      });
      expect(appended.body.data.key_count).toBe(4);
      expect((await channelRow(row.id)).key).toBe("m1\nm2\nm3\nm4");
      await ctx.request("PUT", "/api/channel/", { as: admin, body: { id: row.id, key: "z1\nz2" } });
      expect(JSON.parse((await channelRow(row.id)).channel_info).multi_key_size).toBe(2);
      // The rotation mode changes with the channel; anything but polling or random is refused.
      await ctx.request("PUT", "/api/channel/", { as: admin, body: { id: row.id, multi_key_mode: "polling" } });
      expect(JSON.parse((await channelRow(row.id)).channel_info)).toMatchObject({
        multi_key_mode: "polling",
        multi_key_size: 2,
      });
      const bad = await ctx.request("PUT", "/api/channel/", {
        as: admin,
        body: { id: row.id, multi_key_mode: "sideways" },
      });
      expect(bad.body).toMatchObject({ success: false, message: "multi_key_mode must be polling or random" });
    });

    test("new-api's {mode, channel} wrapper is accepted", async () => {
      const r = await create({ mode: "single", channel: { ...base, name: "wrapped" } });
      expect((await channelRow(r.body.data.ids[0])).name).toBe("wrapped");
    });

    test("update: partial status/priority/weight and full edits keep abilities in step", async () => {
      const id = (await create({ ...base, name: "upd" })).body.data.ids[0];
      const st = await ctx.request("PUT", "/api/channel/", { as: admin, body: { id, status: 2 } });
      expect(st.body.data.status).toBe(2);
      expect((await abilities(id)).every((a) => !a.enabled)).toBe(true);
      await ctx.request("PUT", "/api/channel/", { as: admin, body: { id, priority: 9, weight: 4 } });
      expect((await abilities(id)).every((a) => a.priority === 9 && a.weight === 4)).toBe(true);
      const full = await ctx.request("PUT", "/api/channel/", {
        as: admin,
        body: {
          id,
          name: "upd2",
          models: "claude-x",
          group: "svip",
          status: 1,
          model_mapping: '{"claude-x":"claude-y"}',
          base_url: "http://h:1///",
        },
      });
      expect(full.body.data).toMatchObject({
        name: "upd2",
        models: "claude-x",
        group: "svip",
        status: 1,
        base_url: "http://h:1",
      });
      expect(full.body.data.key).toBeUndefined();
      expect((await abilities(id)).map((a) => `${a.group}/${a.model}/${Boolean(a.enabled)}`)).toEqual([
        "svip/claude-x/true",
      ]);
      expect((await channelRow(id)).key).toBe("sk-aaa");
      const bad = await ctx.request("PUT", "/api/channel/", { as: admin, body: { id, models: "", name: "zzz" } });
      expect(bad.body.message).toBe("select at least one model");
      expect((await channelRow(id)).name).toBe("upd2");
      expect((await ctx.request("PUT", "/api/channel/", { as: admin, body: { id, status: 3 } })).body.message).toBe(
        "status must be 1 (enabled) or 2 (disabled)",
      );
      expect((await ctx.request("PUT", "/api/channel/", { as: admin, body: { id, weight: -2 } })).body.message).toBe(
        "weight must be an integer from 0 to 9007199254740991",
      );
      expect((await ctx.request("PUT", "/api/channel/", { as: admin, body: { id: 999999, name: "x" } })).status).toBe(
        404,
      );
    });

    test("manual enable clears the automation's reason", async () => {
      const id = (await create({ ...base, name: "auto" })).body.data.ids[0];
      await ctx.deps.db
        .updateTable("channels")
        .set({ status: 3, other_info: JSON.stringify({ status_reason: "bad key", status_time: 1 }) })
        .where("id", "=", id)
        .execute();
      await ctx.request("PUT", "/api/channel/", { as: admin, body: { id, status: 1 } });
      const info = JSON.parse((await channelRow(id)).other_info);
      expect(info.status_reason).toBe("");
      expect(info.status_time).toBeGreaterThan(1);
    });

    test("list: paging, priority order by default, id order with id_sort; search by group and model", async () => {
      const ctx2 = await testContext({ kind });
      try {
        const a2 = await ctx2.user(10);
        const mk = (body: Record<string, unknown>) =>
          ctx2.request("POST", "/api/channel/", { as: a2, body: { ...base, ...body } });
        const low = (await mk({ name: "low", priority: 0, group: "default", models: "m-a" })).body.data.ids[0];
        const high = (await mk({ name: "high", priority: 10, group: "vip,default", models: "m-b,m-ab" })).body.data
          .ids[0];
        const mid = (
          await mk({
            name: "mid",
            priority: 5,
            group: "vipplus",
            models: "m-a,m-c",
            base_url: "https://mirror.example.org",
          })
        ).body.data.ids[0];
        const byPriority = await ctx2.request("GET", "/api/channel/?p=1&page_size=2", { as: a2 });
        expect(byPriority.body.data.items.map((c: any) => c.id)).toEqual([high, mid]);
        expect(byPriority.body.data.total).toBe(3);
        const page2 = await ctx2.request("GET", "/api/channel/?p=2&page_size=2", { as: a2 });
        expect(page2.body.data.items.map((c: any) => c.id)).toEqual([low]);
        const byId = await ctx2.request("GET", "/api/channel/?p=1&page_size=10&id_sort=true", { as: a2 });
        expect(byId.body.data.items.map((c: any) => c.id)).toEqual([mid, high, low]);
        const vip = await ctx2.request("GET", "/api/channel/search?group=vip", { as: a2 });
        expect(vip.body.data.items.map((c: any) => c.id)).toEqual([high]);
        const modelA = await ctx2.request("GET", "/api/channel/search?model=m-a&id_sort=true", { as: a2 });
        expect(modelA.body.data.items.map((c: any) => c.id)).toEqual([mid, low]);
        const kw = await ctx2.request("GET", "/api/channel/search?keyword=mirror", { as: a2 });
        expect(kw.body.data.items.map((c: any) => c.id)).toEqual([mid]);
        const byIdKw = await ctx2.request("GET", `/api/channel/search?keyword=${low}`, { as: a2 });
        expect(byIdKw.body.data.items.map((c: any) => c.id)).toContain(low);
      } finally {
        await ctx2.close();
      }
    });

    test("tag mode groups tagged channels into aggregate rows", async () => {
      const ctx2 = await testContext({ kind });
      try {
        const a2 = await ctx2.user(10);
        const mk = (body: Record<string, unknown>) =>
          ctx2.request("POST", "/api/channel/", { as: a2, body: { ...base, ...body } });
        const t1 = (await mk({ name: "t1", tag: "team", models: "m1", used_quota: 0 })).body.data.ids[0];
        const solo = (await mk({ name: "solo" })).body.data.ids[0];
        const t2 = (await mk({ name: "t2", tag: "team", models: "m2", status: 2, group: "vip" })).body.data.ids[0];
        const r = await ctx2.request("GET", "/api/channel/?tag_mode=true&id_sort=true&p=1&page_size=10", { as: a2 });
        expect(r.body.data.total).toBe(2);
        const [first, second] = r.body.data.items;
        expect(first).toMatchObject({
          is_tag: true,
          tag: "team",
          channel_count: 2,
          enabled_count: 1,
          status: 1,
          models: "m2,m1",
          group: "vip,default",
        });
        expect(first.children.map((c: any) => c.id)).toEqual([t2, t1]);
        expect(second.id).toBe(solo);
        expect(JSON.stringify(r.body)).not.toContain("sk-aaa");
      } finally {
        await ctx2.close();
      }
    });

    test("tags: batch tag, tag edit, tag enable/disable keep abilities in step", async () => {
      const ids = [
        (await create({ ...base, name: "tg1" })).body.data.ids[0],
        (await create({ ...base, name: "tg2" })).body.data.ids[0],
      ];
      expect(
        (await ctx.request("POST", "/api/channel/batch/tag", { as: admin, body: { ids: [], tag: "x" } })).body.message,
      ).toBe("select channels to tag first");
      expect(
        (await ctx.request("POST", "/api/channel/batch/tag", { as: admin, body: { ids, tag: " " } })).body.message,
      ).toBe("tag cannot be empty");
      const tagged = await ctx.request("POST", "/api/channel/batch/tag", { as: admin, body: { ids, tag: "grp" } });
      expect(tagged.body.data).toBe(2);
      for (const id of ids) expect((await abilities(id)).every((a) => a.tag === "grp")).toBe(true);

      expect((await ctx.request("PUT", "/api/channel/tag", { as: admin, body: { tag: "grp" } })).body.message).toBe(
        "no changes",
      );
      expect(
        (await ctx.request("PUT", "/api/channel/tag", { as: admin, body: { tag: "grp", model_mapping: "{x" } })).body
          .message,
      ).toBe("model mapping must be valid JSON");
      expect(
        (await ctx.request("PUT", "/api/channel/tag", { as: admin, body: { tag: "grp", weight: -1 } })).body.message,
      ).toBe("weight must be an integer from 0 to 9007199254740991");
      expect(
        (await ctx.request("PUT", "/api/channel/tag", { as: admin, body: { tag: "grp", priority: "x" } })).body.message,
      ).toBe("priority must be an integer from -9007199254740991 to 9007199254740991");
      expect(
        (await ctx.request("PUT", "/api/channel/tag", { as: admin, body: { tag: "nosuchtag", priority: 1 } })).status,
      ).toBe(404);
      const edit = await ctx.request("PUT", "/api/channel/tag", {
        as: admin,
        body: {
          tag: "grp",
          new_tag: "grp2",
          models: "n1,n2",
          groups: "g1",
          priority: 7,
          weight: 2,
          model_mapping: '{"n1":"up1"}',
        },
      });
      expect(edit.body.data).toBe(2);
      for (const id of ids) {
        const row = await channelRow(id);
        expect(row).toMatchObject({
          tag: "grp2",
          models: "n1,n2",
          group: "g1",
          priority: 7,
          weight: 2,
          model_mapping: '{"n1":"up1"}',
        });
        expect((await abilities(id)).map((a) => `${a.group}/${a.model}/${a.priority}/${a.weight}/${a.tag}`)).toEqual([
          "g1/n1/7/2/grp2",
          "g1/n2/7/2/grp2",
        ]);
      }
      expect(
        (await ctx.request("POST", "/api/channel/tag/disabled", { as: admin, body: { tag: "grp2" } })).body.data,
      ).toBe(2);
      for (const id of ids) {
        expect((await channelRow(id)).status).toBe(2);
        expect((await abilities(id)).every((a) => !a.enabled)).toBe(true);
      }
      await ctx.deps.db
        .updateTable("channels")
        .set({ status: 3, other_info: JSON.stringify({ status_reason: "key revoked", status_time: 1 }) })
        .where("id", "=", ids[0])
        .execute();
      await ctx.request("POST", "/api/channel/tag/enabled", { as: admin, body: { tag: "grp2" } });
      for (const id of ids) expect((await abilities(id)).every((a) => Boolean(a.enabled))).toBe(true);
      expect(JSON.parse((await channelRow(ids[0])).other_info).status_reason).toBe("");
      expect(
        (await ctx.request("POST", "/api/channel/tag/enabled", { as: admin, body: { tag: "" } })).body.message,
      ).toBe("tag cannot be empty");
      const cleared = await ctx.request("POST", "/api/channel/batch/tag", { as: admin, body: { ids, tag: null } });
      expect(cleared.body.data).toBe(2);
      expect((await abilities(ids[0])).every((a) => a.tag === null)).toBe(true);
    });

    test("delete one, batch delete, delete disabled remove abilities too", async () => {
      const one = (await create({ ...base, name: "del1" })).body.data.ids[0];
      expect((await ctx.request("DELETE", `/api/channel/${one}/`, { as: admin })).body).toEqual({
        success: true,
        message: "channel deleted",
      });
      expect(await abilities(one)).toEqual([]);
      expect((await ctx.request("DELETE", `/api/channel/${one}`, { as: admin })).status).toBe(404);
      const pair = [
        (await create({ ...base, name: "del2" })).body.data.ids[0],
        (await create({ ...base, name: "del3" })).body.data.ids[0],
      ];
      expect((await ctx.request("POST", "/api/channel/batch", { as: admin, body: { ids: [] } })).body.message).toBe(
        "select channels to delete first",
      );
      expect(
        (await ctx.request("POST", "/api/channel/batch", { as: admin, body: { ids: [...pair, 999999] } })).body.data,
      ).toBe(2);
      for (const id of pair) expect(await abilities(id)).toEqual([]);
      const off1 = (await create({ ...base, name: "off1", status: 2 })).body.data.ids[0];
      const off2 = (await create({ ...base, name: "off2" })).body.data.ids[0];
      await ctx.deps.db.updateTable("channels").set({ status: 3 }).where("id", "=", off2).execute();
      const on = (await create({ ...base, name: "on" })).body.data.ids[0];
      const before = await ctx.deps.db.selectFrom("channels").select("id").where("status", "!=", 1).execute();
      const r = await ctx.request("DELETE", "/api/channel/disabled", { as: admin });
      expect(r.body.data).toBe(before.length);
      expect(await ctx.deps.db.selectFrom("channels").select("id").where("id", "in", [off1, off2]).execute()).toEqual(
        [],
      );
      expect((await channelRow(on)).status).toBe(1);
    });

    test("fix rebuilds abilities from the channels and answers the channel count", async () => {
      const id = (await create({ ...base, name: "fixme" })).body.data.ids[0];
      await ctx.deps.db.deleteFrom("abilities").execute();
      await ctx.deps.db
        .insertInto("abilities")
        .values({
          group: "ghost",
          model: "ghost",
          channel_id: 424242,
          enabled: true,
          priority: 0,
          weight: 0,
          tag: null,
        })
        .execute();
      const total = (await ctx.deps.db.selectFrom("channels").select("id").execute()).length;
      const r = await ctx.request("POST", "/api/channel/fix", { as: admin });
      expect(r.body.data).toBe(total);
      expect((await abilities(id)).length).toBe(4);
      expect(await abilities(424242)).toEqual([]);
    });
  });
}
