// Channel affinity: the calls of one conversation (prompt_cache_key, Claude Code's session, a Gemini context
// cache) go to the channel, and the key of a multi-key channel, that served the conversation's previous call,
// even when routing would now choose another; a failing pinned channel falls back as usual and the conversation
// moves to the channel that served it; a pin expires with its TTL, goes when its channel is disabled, and is
// off with the setting. The settings are new-api's option keys; GET/DELETE /api/option/channel_affinity_cache
// answer as new-api's. With REDIS_CONN_STRING set, two instances share the pins.
import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { startMockUpstream, type MockUpstream } from "../mocks/openai-upstream.ts";
import { startClaudeUpstream } from "../mocks/claude-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import type { MockUpstream as RecordingUpstream } from "../mocks/recorder.ts";
import { invalidateRelayCaches } from "../../server/relay/state.ts";
import { multiKeyInfo } from "../../server/modules/channel/keys.ts";
import { AFFINITY_OPTIONS, DEFAULT_AFFINITY_RULES } from "../../server/catalogue/channel-affinity.ts";
import { AffinityStore, storeOf } from "../../server/relay/affinity.ts";
import { ROLE } from "../../server/catalogue/index.ts";
import type { Session } from "../helpers/app.ts";
import { createApp } from "../../server/app.ts";
import { RedisCache } from "../../server/infra/cache.ts";
import type { AppDeps } from "../../server/deps.ts";

const GPT = "aff-gpt";
const CLAUDE = "aff-claude";
const KEYS = "aff-keys";
const GEMINI = "aff-gemini";
/** Served by channel b only: an agent's small model for side tasks. */
const MINI = "aff-mini";

let fx: RelayFixture;
let a: MockUpstream;
let b: MockUpstream;
let keyed: MockUpstream;
let claudeA: RecordingUpstream;
let claudeB: RecordingUpstream;
let geminiA: RecordingUpstream;
let geminiB: RecordingUpstream;
const ids: Record<string, number> = {};
let token = "";
let root: Session;

async function setPriority(fixture: RelayFixture, id: number, priority: number) {
  await fixture.ctx.deps.db.updateTable("channels").set({ priority }).where("id", "=", id).execute();
  await fixture.ctx.deps.db.updateTable("abilities").set({ priority }).where("channel_id", "=", id).execute();
  invalidateRelayCaches(fixture.ctx.deps);
}

async function setStatus(id: number, status: number) {
  await fx.ctx.deps.db.updateTable("channels").set({ status }).where("id", "=", id).execute();
  invalidateRelayCaches(fx.ctx.deps);
}

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  a = startMockUpstream();
  b = startMockUpstream();
  keyed = startMockUpstream();
  claudeA = startClaudeUpstream();
  claudeB = startClaudeUpstream();
  geminiA = startGeminiUpstream();
  geminiB = startGeminiUpstream();
  await fx.option("ModelRatio", JSON.stringify({ [GPT]: 1, [MINI]: 1, [CLAUDE]: 1, [KEYS]: 1, [GEMINI]: 1 }));
  await fx.option("RetryTimes", "1");
  ids.a = await fx.channel({ name: "a", key: "sk-a", base_url: a.url, models: [GPT], priority: 10 });
  ids.b = await fx.channel({ name: "b", key: "sk-b", base_url: b.url, models: [GPT, MINI], priority: 0 });
  ids.claudeA = await fx.channel({
    type: 14,
    key: "claude-key",
    base_url: claudeA.url,
    models: [CLAUDE],
    priority: 10,
  });
  ids.claudeB = await fx.channel({ type: 14, key: "claude-key", base_url: claudeB.url, models: [CLAUDE], priority: 0 });
  ids.geminiA = await fx.channel({
    type: 24,
    key: "gemini-key",
    base_url: geminiA.url,
    models: [GEMINI],
    priority: 10,
  });
  ids.geminiB = await fx.channel({ type: 24, key: "gemini-key", base_url: geminiB.url, models: [GEMINI], priority: 0 });
  ids.keyed = await fx.channel({
    key: "k1\nk2\nk3",
    base_url: keyed.url,
    models: [KEYS],
    channel_info: multiKeyInfo(3, "polling"),
  });
  token = (await fx.token((await fx.user(1_000_000_000)).id, { remain_quota: 1_000_000_000 })).key;
  root = await fx.user(0, { role: ROLE.root });
});
afterAll(async () => {
  for (const m of [a, b, keyed]) await m.stop();
  for (const m of [claudeA, claudeB, geminiA, geminiB]) m.stop();
  await fx.close();
});
afterEach(() => void setSystemTime());

/** Which OpenAI channel served a call ("both": one failed and the other answered). */
async function chat(extra: Record<string, unknown> = {}, model = GPT): Promise<string> {
  const res = await fx.call("/v1/chat/completions", token, {
    model,
    messages: [{ role: "user", content: "hi" }],
    ...extra,
  });
  expect(res.status).toBe(200);
  await res.text();
  return lastServed();
}
let seenA = 0;
let seenB = 0;
/** The channel whose upstream got requests since the last look: "a", "b", or "both". */
function lastServed(): string {
  const out =
    a.seen.length > seenA && b.seen.length === seenB
      ? "a"
      : b.seen.length > seenB && a.seen.length === seenA
        ? "b"
        : "both";
  seenA = a.seen.length;
  seenB = b.seen.length;
  return out;
}

async function reset() {
  await fx.ctx.request("DELETE", "/api/option/channel_affinity_cache?all=true", { as: root });
  await setPriority(fx, ids.a!, 10);
  await setPriority(fx, ids.b!, 0);
  lastServed();
}

describe("a conversation stays on its channel", () => {
  test("the second call of a prompt_cache_key conversation lands on the first's channel, though routing now prefers another", async () => {
    await reset();
    expect(await chat({ prompt_cache_key: "conv-1" })).toBe("a");
    await setPriority(fx, ids.b!, 20);
    expect(await chat({ prompt_cache_key: "conv-1" })).toBe("a");
    expect(await chat()).toBe("b");
    expect(await chat({ prompt_cache_key: "conv-2" })).toBe("b");
    expect(await chat({ prompt_cache_key: "conv-2" })).toBe("b");
    expect(await chat({ prompt_cache_key: "conv-1" })).toBe("a");
  });

  test("a session that also asks a small model (served elsewhere) keeps a pin per model", async () => {
    await reset();
    expect(await chat({ prompt_cache_key: "conv-models" })).toBe("a");
    expect(await chat({ prompt_cache_key: "conv-models" }, MINI)).toBe("b");
    expect(await chat({ prompt_cache_key: "conv-models" })).toBe("a");
    await setPriority(fx, ids.b!, 20);
    expect(await chat({ prompt_cache_key: "conv-models" })).toBe("a");
    expect(await chat({ prompt_cache_key: "conv-models" }, MINI)).toBe("b");
  });

  test("a Responses call (Codex CLI's) by its prompt_cache_key", async () => {
    await reset();
    const responses = async (key?: string) => {
      const res = await fx.call("/v1/responses", token, {
        model: GPT,
        input: "hi",
        ...(key ? { prompt_cache_key: key } : {}),
      });
      expect(res.status).toBe(200);
      await res.text();
      return lastServed();
    };
    expect(await responses("codex-thread")).toBe("a");
    await setPriority(fx, ids.b!, 20);
    expect(await responses("codex-thread")).toBe("a");
    expect(await responses()).toBe("b");
  });

  test("the pinned call's log names the rule in admin_info (new-api's channel_affinity)", async () => {
    await reset();
    const user = await fx.user(10_000_000);
    const own = (await fx.token(user.id)).key;
    const call = () =>
      fx.call("/v1/chat/completions", own, {
        model: GPT,
        prompt_cache_key: "logged-conversation",
        messages: [{ role: "user", content: "hi" }],
      });
    await (await call()).text();
    await (await call()).text();
    await fx.flush();
    const logs = await fx.ctx.deps.db
      .selectFrom("logs")
      .select("other")
      .where("user_id", "=", user.id)
      .orderBy("id")
      .execute();
    expect(JSON.parse(logs[0]!.other).admin_info.channel_affinity).toBeUndefined();
    expect(JSON.parse(logs[1]!.other).admin_info.channel_affinity).toEqual({
      rule_name: "prompt cache key",
      using_group: "default",
      channel_id: ids.a,
      key_source: "gjson",
      key_hint: "logg...tion",
    });
  });

  test("the pinned channel failing: the call falls back, and the conversation moves to the channel that served it", async () => {
    await reset();
    expect(await chat({ prompt_cache_key: "conv-3" })).toBe("a");
    await setPriority(fx, ids.b!, 20);
    a.options.failStatus = 500;
    try {
      expect(await chat({ prompt_cache_key: "conv-3" })).toBe("both");
    } finally {
      a.options.failStatus = undefined;
    }
    expect(await chat({ prompt_cache_key: "conv-3" })).toBe("b");
    await setPriority(fx, ids.b!, 0);
    expect(await chat({ prompt_cache_key: "conv-3" })).toBe("b");
  });

  test("a pin expires with its TTL", async () => {
    await reset();
    expect(await chat({ prompt_cache_key: "conv-4" })).toBe("a");
    await setPriority(fx, ids.b!, 20);
    setSystemTime(new Date(Date.now() + 3599_000));
    expect(await chat({ prompt_cache_key: "conv-4" })).toBe("a");
    // Each served call extends the pin: an hour after the last call it is gone.
    setSystemTime(new Date(Date.now() + 3601_000));
    invalidateRelayCaches(fx.ctx.deps);
    expect(await chat({ prompt_cache_key: "conv-4" })).toBe("b");
  });

  test("a disabled pinned channel: the call goes elsewhere and the pin is gone", async () => {
    await reset();
    expect(await chat({ prompt_cache_key: "conv-5" })).toBe("a");
    await setStatus(ids.a!, 2);
    try {
      expect(await chat({ prompt_cache_key: "conv-5" })).toBe("b");
    } finally {
      await setStatus(ids.a!, 1);
    }
    expect(await chat({ prompt_cache_key: "conv-5" })).toBe("b");
  });

  test("turned off, calls route as if they carried no key", async () => {
    await reset();
    expect(await chat({ prompt_cache_key: "conv-6" })).toBe("a");
    await setPriority(fx, ids.b!, 20);
    await fx.option(AFFINITY_OPTIONS.enabled, "false");
    try {
      expect(await chat({ prompt_cache_key: "conv-6" })).toBe("b");
    } finally {
      await fx.option(AFFINITY_OPTIONS.enabled, "true");
    }
    expect(await chat({ prompt_cache_key: "conv-6" })).toBe("a");
  });

  test("Claude Code's session header, and metadata.user_id without it", async () => {
    await reset();
    const claude = async (headers: Record<string, string>, metadata?: Record<string, string>) => {
      const before = [claudeA.requests.length, claudeB.requests.length];
      const res = await fx.call(
        "/v1/messages",
        token,
        {
          model: CLAUDE,
          max_tokens: 16,
          messages: [{ role: "user", content: "hi" }],
          ...(metadata ? { metadata } : {}),
        },
        headers,
      );
      expect(res.status).toBe(200);
      await res.text();
      return claudeA.requests.length > before[0]! ? "a" : claudeB.requests.length > before[1]! ? "b" : "none";
    };
    await setPriority(fx, ids.claudeA!, 10);
    await setPriority(fx, ids.claudeB!, 0);
    expect(await claude({ "x-claude-code-session-id": "session-1" })).toBe("a");
    expect(await claude({}, { user_id: "user_abc_account_def_session_ghi" })).toBe("a");
    await setPriority(fx, ids.claudeB!, 20);
    expect(await claude({ "x-claude-code-session-id": "session-1" })).toBe("a");
    expect(await claude({}, { user_id: "user_abc_account_def_session_ghi" })).toBe("a");
    expect(await claude({})).toBe("b");
    expect(await claude({ "x-claude-code-session-id": "session-2" })).toBe("b");
  });

  test("a Gemini call naming a context cache stays with the channel (and key) that holds it", async () => {
    await reset();
    const gemini = async (cachedContent?: string) => {
      const before = [geminiA.requests.length, geminiB.requests.length];
      const res = await fx.call(`/v1beta/models/${GEMINI}:generateContent`, token, {
        contents: [{ role: "user", parts: [{ text: "hi" }] }],
        ...(cachedContent ? { cachedContent } : {}),
      });
      expect(res.status).toBe(200);
      await res.text();
      return geminiA.requests.length > before[0]! ? "a" : geminiB.requests.length > before[1]! ? "b" : "none";
    };
    expect(await gemini("cachedContents/abc")).toBe("a");
    await setPriority(fx, ids.geminiB!, 20);
    expect(await gemini("cachedContents/abc")).toBe("a");
    expect(await gemini()).toBe("b");
  });

  test("a multi-key channel: the conversation keeps its key while polling moves on for other calls", async () => {
    await reset();
    const keyOf = async (extra: Record<string, unknown>) => {
      const res = await fx.call("/v1/chat/completions", token, {
        model: KEYS,
        messages: [{ role: "user", content: "hi" }],
        ...extra,
      });
      expect(res.status).toBe(200);
      await res.text();
      return keyed.seen.at(-1)!.authorization;
    };
    const first = await keyOf({ prompt_cache_key: "conv-keys" });
    const others = [await keyOf({}), await keyOf({})];
    expect(new Set([first, ...others]).size).toBe(3);
    expect(await keyOf({ prompt_cache_key: "conv-keys" })).toBe(first);
    expect(await keyOf({ prompt_cache_key: "conv-keys" })).toBe(first);
  });
});

describe("a shared cache that does not answer", () => {
  test("a conversation's lookup gives up and the call is routed as any other; pins are still kept in memory", async () => {
    const hung = {
      kind: "redis" as const,
      get: () => new Promise<string | null>(() => {}),
      set: async () => {},
      del: async () => {},
      keys: async () => [],
      publish: async () => {},
      subscribe: async () => async () => {},
    };
    const store = new AffinityStore({ ...fx.ctx.deps, cache: hung as any, shutdownHooks: [] });
    expect(await store.lookup("conv", 3600)).toBeNull();
    store.record("conv", { channel: 7, key: -1 }, 3600, 10);
    expect(store.lookup("conv", 3600)).toEqual({ channel: 7, key: -1 });
    await store.stop();
  });
});

describe("settings and the cache route (new-api's)", () => {
  test("the options are new-api's keys, with its defaults' shape; a bad rule is refused naming the field", async () => {
    const all = await fx.ctx.request("GET", "/api/option/", { as: root });
    const options = Object.fromEntries(
      (all.body.data as { key: string; value: string }[]).map((o) => [o.key, o.value]),
    );
    expect(options[AFFINITY_OPTIONS.enabled]).toBe("true");
    expect(options[AFFINITY_OPTIONS.defaultTtlSeconds]).toBe("3600");
    expect(JSON.parse(options[AFFINITY_OPTIONS.rules]!)).toEqual(DEFAULT_AFFINITY_RULES);
    const bad = await fx.ctx.request("PUT", "/api/option/", {
      as: root,
      body: {
        key: AFFINITY_OPTIONS.rules,
        value: JSON.stringify([{ name: "x", model_regex: ["("], key_sources: [{ type: "gjson", path: "a" }] }]),
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("rules[0].model_regex");
    const noSource = await fx.ctx.request("PUT", "/api/option/", {
      as: root,
      body: {
        key: AFFINITY_OPTIONS.rules,
        value: JSON.stringify([{ name: "x", model_regex: [".*"], key_sources: [] }]),
      },
    });
    expect(noSource.body.message).toContain("rules[0].key_sources");
    expect(
      (
        await fx.ctx.request("PUT", "/api/option/", {
          as: root,
          body: { key: AFFINITY_OPTIONS.maxEntries, value: "0" },
        })
      ).status,
    ).toBe(400);
  });

  test("a rule of the operator's: a header source, its own TTL, a value pattern", async () => {
    await reset();
    const rules = [
      {
        name: "team",
        model_regex: ["^aff-"],
        path_regex: ["/v1/chat/completions"],
        key_sources: [{ type: "request_header", key: "X-Team" }],
        value_regex: "^t-",
        ttl_seconds: 60,
        skip_retry_on_failure: false,
        include_using_group: true,
        include_model_name: true,
        include_rule_name: true,
      },
    ];
    expect(
      (
        await fx.ctx.request("PUT", "/api/option/", {
          as: root,
          body: { key: AFFINITY_OPTIONS.rules, value: JSON.stringify(rules) },
        })
      ).body.success,
    ).toBe(true);
    try {
      const teamCall = async (team: string) => {
        const res = await fx.call(
          "/v1/chat/completions",
          token,
          { model: GPT, messages: [{ role: "user", content: "hi" }] },
          { "x-team": team },
        );
        await res.text();
        return lastServed();
      };
      expect(await teamCall("t-red")).toBe("a");
      await setPriority(fx, ids.b!, 20);
      expect(await teamCall("t-red")).toBe("a");
      expect(await teamCall("blue")).toBe("b");
      setSystemTime(new Date(Date.now() + 61_000));
      invalidateRelayCaches(fx.ctx.deps);
      expect(await teamCall("t-red")).toBe("b");
      const stats = await fx.ctx.request("GET", "/api/option/channel_affinity_cache", { as: root });
      expect(stats.body.data.by_rule_name).toEqual({ team: 1 });
      expect([...(await storeOf(fx.ctx.deps).keys())]).toEqual([`team:${GPT}:default:t-red`]);
    } finally {
      await fx.option(AFFINITY_OPTIONS.rules, JSON.stringify(DEFAULT_AFFINITY_RULES));
    }
  });

  test("memory keeps at most max_entries pins, the least recently pinned going first", async () => {
    await reset();
    await fx.option(AFFINITY_OPTIONS.maxEntries, "2");
    try {
      for (const k of ["m-1", "m-2", "m-3"]) await chat({ prompt_cache_key: k });
      expect((await storeOf(fx.ctx.deps).keys()).sort()).toEqual([
        `prompt cache key:${GPT}:default:m-2`,
        `prompt cache key:${GPT}:default:m-3`,
      ]);
      await setPriority(fx, ids.b!, 20);
      expect(await chat({ prompt_cache_key: "m-1" })).toBe("b");
      expect(await chat({ prompt_cache_key: "m-3" })).toBe("a");
    } finally {
      await fx.option(AFFINITY_OPTIONS.maxEntries, "100000");
    }
  });

  test("GET and DELETE /api/option/channel_affinity_cache answer as new-api's", async () => {
    await reset();
    await chat({ prompt_cache_key: "stats-1" });
    await chat({ prompt_cache_key: "stats-2" });
    const stats = await fx.ctx.request("GET", "/api/option/channel_affinity_cache", { as: root });
    expect(stats.body).toEqual({
      success: true,
      message: "",
      data: {
        enabled: true,
        total: 2,
        unknown: 0,
        by_rule_name: { "prompt cache key": 2, "claude cli trace": 0, "gemini context cache": 0 },
        cache_capacity: 100000,
        cache_algo: "lru",
      },
    });
    const missing = await fx.ctx.request("DELETE", "/api/option/channel_affinity_cache", { as: root });
    expect(missing.status).toBe(400);
    expect(missing.body.success).toBe(false);
    expect(
      (await fx.ctx.request("DELETE", "/api/option/channel_affinity_cache?rule_name=nope", { as: root })).body.message,
    ).toContain("nope");
    const one = await fx.ctx.request(
      "DELETE",
      `/api/option/channel_affinity_cache?rule_name=${encodeURIComponent("prompt cache key")}`,
      { as: root },
    );
    expect(one.body).toEqual({ success: true, message: "", data: { deleted: 2 } });
    await chat({ prompt_cache_key: "stats-3" });
    expect(
      (await fx.ctx.request("DELETE", "/api/option/channel_affinity_cache?all=true", { as: root })).body.data,
    ).toEqual({ deleted: 1 });
    expect((await fx.ctx.request("GET", "/api/option/channel_affinity_cache", { as: root })).body.data.total).toBe(0);
    const user = await fx.user(0);
    expect((await fx.ctx.request("GET", "/api/option/channel_affinity_cache", { as: user })).body.success).toBe(false);
  });
});

const REDIS = process.env.REDIS_CONN_STRING;
if (REDIS) {
  describe("two instances sharing Redis", () => {
    let shared: RelayFixture;
    let one: MockUpstream;
    let two: MockUpstream;
    let second: { deps: AppDeps; call(body: unknown): Promise<Response>; close(): Promise<void> };
    const sharedIds: number[] = [];
    let sharedToken = "";
    beforeAll(async () => {
      shared = await relayFixture("sqlite", {}, {}, true);
      one = startMockUpstream();
      two = startMockUpstream();
      await shared.option("ModelRatio", JSON.stringify({ [GPT]: 1 }));
      await shared.option("RetryTimes", "1");
      sharedIds.push(await shared.channel({ key: "sk-one", base_url: one.url, models: [GPT], priority: 10 }));
      sharedIds.push(await shared.channel({ key: "sk-two", base_url: two.url, models: [GPT], priority: 0 }));
      sharedToken = (await shared.token((await shared.user(1_000_000_000)).id, { remain_quota: 1_000_000_000 })).key;
      const first = shared.ctx.deps;
      const cache = new RedisCache(REDIS, (first.cache as RedisCache).prefix);
      await cache.connect();
      const deps: AppDeps = {
        ...first,
        cache,
        config: { ...first.config, instanceId: `${first.config.instanceId}-b` },
        shutdownHooks: [],
      };
      const app = createApp(deps);
      await storeOf(deps).listening;
      await storeOf(first).listening;
      second = {
        deps,
        call: (body) =>
          app.handle(
            new Request("http://localhost/v1/chat/completions", {
              method: "POST",
              headers: { authorization: `Bearer ${sharedToken}`, "content-type": "application/json" },
              body: JSON.stringify(body),
            }),
          ),
        async close() {
          for (const hook of deps.shutdownHooks) await hook();
          await cache.close();
        },
      };
    });
    afterAll(async () => {
      // The pins live in the shared Redis: this test's go with it.
      await storeOf(shared.ctx.deps).clear(null);
      await second.close();
      await one.stop();
      await two.stop();
      await shared.close();
    });

    const body = { model: GPT, prompt_cache_key: "shared-conv", messages: [{ role: "user", content: "hi" }] };
    const servedBy = async (res: Promise<Response>, before: [number, number]) => {
      const r = await res;
      expect(r.status).toBe(200);
      await r.text();
      return one.seen.length > before[0] && two.seen.length === before[1]
        ? "one"
        : two.seen.length > before[1] && one.seen.length === before[0]
          ? "two"
          : "both";
    };
    const counts = (): [number, number] => [one.seen.length, two.seen.length];
    const bothPriorities = async (id: number, p: number) => {
      await setPriority(shared, id, p);
      invalidateRelayCaches(second.deps);
    };

    test("a pin made on one instance routes the other's call; a move on the other reaches the first", async () => {
      expect(await servedBy(shared.call("/v1/chat/completions", sharedToken, body), counts())).toBe("one");
      await bothPriorities(sharedIds[1]!, 20);
      // The second instance holds no pin of its own: Redis has the first's.
      const key = `prompt cache key:${GPT}:default:shared-conv`;
      expect(await servedBy(second.call(body), counts())).toBe("one");
      // The pinned channel fails on the second instance: it falls back to "two" and moves the conversation there.
      one.options.failStatus = 500;
      try {
        expect(await servedBy(second.call(body), counts())).toBe("both");
      } finally {
        one.options.failStatus = undefined;
      }
      await bothPriorities(sharedIds[1]!, 0);
      // The first instance's own copy said "one"; the announcement replaces it.
      const store = storeOf(shared.ctx.deps);
      for (let i = 0; i < 200; i++) {
        const pin = await store.lookup(key, 3600);
        if (pin && pin.channel === sharedIds[1]) break;
        await Bun.sleep(10);
      }
      expect(await servedBy(shared.call("/v1/chat/completions", sharedToken, body), counts())).toBe("two");
      const stats = await shared.ctx.request("GET", "/api/option/channel_affinity_cache", {
        as: await shared.user(0, { role: ROLE.root }),
      });
      expect(stats.body.data).toMatchObject({ total: 1, cache_algo: "redis", cache_capacity: 0 });
    });
  });
}
