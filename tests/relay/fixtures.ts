// Relay test fixtures: channels, abilities and tokens inserted directly (the management modules are
// tested elsewhere), plus a mock upstream and helpers to call the relay and wait for write-behind.
import { afterAll, beforeAll } from "bun:test";
import { testContext, type TestContext, type Session } from "../helpers/app.ts";
import type { Dialect } from "../../db/index.ts";
import type { TempDb } from "../helpers/db.ts";
import type { Cache } from "../../server/infra/cache.ts";
import { nowSeconds } from "../../db/index.ts";
import { randomString } from "../../server/infra/random.ts";
import { flushRelayWrites, invalidateRelayCaches } from "../../server/relay/state.ts";
import { startMockUpstream, type MockOptions, type MockUpstream } from "../mocks/openai-upstream.ts";

export interface ChannelSpec {
  type?: number;
  name?: string;
  key?: string;
  base_url: string;
  models: string[];
  groups?: string[];
  priority?: number;
  weight?: number;
  status?: number;
  model_mapping?: Record<string, string>;
  status_code_mapping?: Record<string, string>;
  param_override?: Record<string, unknown>;
  /** A multi-key channel's rotation state (see server/modules/channel/keys.ts). */
  channel_info?: unknown;
  /** The channel's `other` field (API version, account ID, knowledge base ...). */
  other?: string;
  /** The channel's `setting` JSON (proxy, system prompt, ...). */
  setting?: Record<string, unknown>;
}

export interface TokenSpec {
  remain_quota?: number;
  unlimited_quota?: boolean;
  status?: number;
  expired_time?: number;
  model_limits?: string[];
  allow_ips?: string;
  group?: string;
  name?: string;
}

export interface RelayFixture {
  ctx: TestContext;
  mock: MockUpstream;
  channel(spec: ChannelSpec): Promise<number>;
  /** A token for the user; returns the full "sk-..." key. */
  token(userId: number, spec?: TokenSpec): Promise<{ id: number; key: string }>;
  /** A user with the given quota (and role), returned with a session. */
  user(quota: number, fields?: Record<string, unknown>): Promise<Session>;
  option(key: string, value: string): Promise<void>;
  call(path: string, key: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  flush(): Promise<void>;
  close(): Promise<void>;
}

export async function relayFixture(
  kind: Dialect = "sqlite",
  mockOptions: MockOptions = {},
  config: Record<string, unknown> = {},
  redis = false,
  database?: TempDb,
  cache?: Cache,
): Promise<RelayFixture> {
  const ctx = await testContext({
    kind,
    redis,
    database,
    cache,
    config: { batchUpdateIntervalMs: 50, ...config } as any,
  });
  const mock = startMockUpstream(mockOptions);
  const db = ctx.deps.db;
  const fx: RelayFixture = {
    ctx,
    mock,
    async channel(spec) {
      const values = {
        type: spec.type ?? 1,
        name: spec.name ?? "mock",
        key: spec.key ?? "sk-channel-key",
        base_url: spec.base_url,
        status: spec.status ?? 1,
        models: spec.models.join(","),
        group: (spec.groups ?? ["default"]).join(","),
        priority: spec.priority ?? 0,
        weight: spec.weight ?? 0,
        created_time: nowSeconds(),
        model_mapping: spec.model_mapping ? JSON.stringify(spec.model_mapping) : null,
        status_code_mapping: spec.status_code_mapping ? JSON.stringify(spec.status_code_mapping) : "",
        param_override: spec.param_override ? JSON.stringify(spec.param_override) : null,
        openai_organization: null,
        test_model: null,
        channel_info: spec.channel_info ? JSON.stringify(spec.channel_info) : "",
        other: spec.other ?? "",
        setting: spec.setting ? JSON.stringify(spec.setting) : null,
      };
      let id: number;
      if (kind === "postgres")
        id = (await db.insertInto("channels").values(values).returning("id").executeTakeFirstOrThrow()).id;
      else id = Number((await db.insertInto("channels").values(values).executeTakeFirstOrThrow()).insertId);
      for (const group of spec.groups ?? ["default"]) {
        for (const model of spec.models) {
          await db
            .insertInto("abilities")
            .values({
              group,
              model,
              channel_id: id,
              enabled: true,
              priority: spec.priority ?? 0,
              weight: spec.weight ?? 0,
              tag: null,
            })
            .execute();
        }
      }
      invalidateRelayCaches(ctx.deps);
      return id;
    },
    async token(userId, spec = {}) {
      const key = randomString(48);
      const values = {
        user_id: userId,
        key,
        status: spec.status ?? 1,
        name: spec.name ?? "test-token",
        created_time: nowSeconds(),
        expired_time: spec.expired_time ?? -1,
        remain_quota: spec.remain_quota ?? 1_000_000,
        unlimited_quota: spec.unlimited_quota ?? false,
        model_limits_enabled: !!spec.model_limits,
        model_limits: (spec.model_limits ?? []).join(","),
        allow_ips: spec.allow_ips ?? "",
        group: spec.group ?? "",
        used_quota: 0,
      };
      let id: number;
      if (kind === "postgres")
        id = (await db.insertInto("tokens").values(values).returning("id").executeTakeFirstOrThrow()).id;
      else id = Number((await db.insertInto("tokens").values(values).executeTakeFirstOrThrow()).insertId);
      return { id, key: "sk-" + key };
    },
    user: (quota, fields = {}) => ctx.user((fields.role as number) ?? 1, { quota, ...fields }),
    option: (key, value) => ctx.deps.options.set(key, value),
    call(path, key, body, headers = {}) {
      return ctx.app.handle(
        new Request("http://localhost" + path, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        }),
      );
    },
    flush: () => flushRelayWrites(ctx.deps),
    async close() {
      await mock.stop();
      await ctx.close();
    },
  };
  return fx;
}

export async function userRow(fx: RelayFixture, id: number) {
  return fx.ctx.deps.db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}

export async function tokenRow(fx: RelayFixture, id: number) {
  return fx.ctx.deps.db.selectFrom("tokens").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}

export async function logsOf(fx: RelayFixture, userId: number) {
  return fx.ctx.deps.db.selectFrom("logs").selectAll().where("user_id", "=", userId).orderBy("id").execute();
}

/** The same model ratio (and completion ratio, when given) for every model. */
export async function ratios(fx: RelayFixture, models: string[], ratio: number, completionRatio?: number) {
  const each = (value: number) => JSON.stringify(Object.fromEntries(models.map((m) => [m, value])));
  await fx.option("ModelRatio", each(ratio));
  if (completionRatio !== undefined) await fx.option("CompletionRatio", each(completionRatio));
}

/**
 * One SQLite relay fixture for the tests of the calling file or describe, made before them together with
 * what `setup` starts and configures. The upstreams `setup` returns sit next to `fx` and are stopped after
 * the tests. The fields are filled in by then: read them inside tests and helpers, not at module level.
 */
export function sharedRelayFixture<U extends Record<string, { stop(): unknown }>>(
  setup: (fx: RelayFixture) => Promise<U>,
): { fx: RelayFixture } & U {
  const shared = {} as { fx: RelayFixture } & U;
  let upstreams: { stop(): unknown }[] = [];
  beforeAll(async () => {
    shared.fx = await relayFixture("sqlite");
    const started = await setup(shared.fx);
    upstreams = Object.values(started);
    Object.assign(shared, started);
  });
  afterAll(async () => {
    for (const up of upstreams) up.stop();
    await shared.fx.close();
  });
  return shared;
}

/** The quota of a callAsNewUser user and of its token. */
export const NEW_USER_QUOTA = 10_000_000;

/** Calls once as a fresh user with a funded token, waits for write-behind, and returns the user's logs too. */
export async function callAsNewUser(
  fx: RelayFixture,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const user = await fx.user(NEW_USER_QUOTA);
  const token = await fx.token(user.id, { remain_quota: NEW_USER_QUOTA });
  const res = await fx.call(path, token.key, body, headers);
  const text = await res.text();
  await fx.flush();
  return { status: res.status, text, user, logs: await logsOf(fx, user.id) };
}

/** A client leaving mid-stream: reads the streamed answer until it includes `marker`, then aborts the request
 * and cancels the body, and waits until the mock upstream saw its stream cancelled. Returns what was read. */
export async function leaveStreamAt(
  fx: RelayFixture,
  res: Response,
  abort: AbortController,
  marker: string,
): Promise<string> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let received = "";
  while (!received.includes(marker)) received += dec.decode((await reader.read()).value!, { stream: true });
  abort.abort();
  await reader.cancel().catch(() => {});
  for (let i = 0; i < 100 && fx.mock.cancelled === 0; i++) await Bun.sleep(20);
  return received;
}
