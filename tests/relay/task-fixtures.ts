// Helpers of the task relay tests (Midjourney, Suno, video): a relay fixture with the poller under the
// test's control (no timer: each round() is one poll), calls with a key, and the balances a task moves.
import type { Dialect } from "../../db/index.ts";
import type { TempDb } from "../helpers/db.ts";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { TaskPoller } from "../../server/jobs/task-poller.ts";
import { invalidateRelayCaches } from "../../server/relay/state.ts";

export const PRICE_UNIT = 500_000;

export interface TaskFixture extends RelayFixture {
  poller: TaskPoller;
  /** One poll of every unfinished task. */
  round(): Promise<void>;
  get(
    path: string,
    key?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; res: Response }>;
  post(
    path: string,
    key: string | null,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any }>;
  /** A user with `quota` and a token holding `tokenQuota` (unlimited when null). */
  payer(
    quota: number,
    tokenQuota?: number | null,
  ): Promise<{ userId: number; tokenId: number; key: string; session: Awaited<ReturnType<RelayFixture["user"]>> }>;
  balances(
    userId: number,
    tokenId: number,
    channelId: number,
  ): Promise<{ quota: number; userUsed: number; remain: number; tokenUsed: number; channelUsed: number }>;
  /** Deletes a channel a test added, and makes the relay forget it at once. */
  dropChannel(id: number): Promise<void>;
}

export async function taskFixture(
  kind: Dialect = "sqlite",
  config: Record<string, unknown> = {},
  database?: TempDb,
): Promise<TaskFixture> {
  const fx = await relayFixture(kind, {}, { taskPollIntervalMs: 0, ...config }, false, database);
  const deps = fx.ctx.deps;
  const poller = new TaskPoller(deps, { intervalMs: 0, timeoutMs: Number(config.taskTimeoutMs ?? 3_600_000) });
  const parse = async (res: Response) => {
    const text = await res.clone().text();
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
  const tf: TaskFixture = Object.assign(fx, {
    poller,
    async round() {
      await poller.round();
    },
    async get(path: string, key?: string, headers: Record<string, string> = {}) {
      const res = await fx.ctx.app.handle(
        new Request("http://localhost" + path, {
          headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
        }),
      );
      return { status: res.status, body: await parse(res), res };
    },
    async post(path: string, key: string | null, body: unknown, headers: Record<string, string> = {}) {
      const res = await fx.ctx.app.handle(
        new Request("http://localhost" + path, {
          method: "POST",
          headers: {
            ...(key ? { authorization: `Bearer ${key}` } : {}),
            "content-type": "application/json",
            ...headers,
          },
          body: JSON.stringify(body),
        }),
      );
      return { status: res.status, body: await parse(res) };
    },
    async payer(quota: number, tokenQuota: number | null = quota) {
      const session = await fx.user(quota);
      const token = await fx.token(
        session.id,
        tokenQuota === null ? { unlimited_quota: true, remain_quota: 0 } : { remain_quota: tokenQuota },
      );
      return { userId: session.id, tokenId: token.id, key: token.key, session };
    },
    async dropChannel(id: number) {
      await deps.db.deleteFrom("abilities").where("channel_id", "=", id).execute();
      await deps.db.deleteFrom("channels").where("id", "=", id).execute();
      invalidateRelayCaches(deps);
    },
    async balances(userId: number, tokenId: number, channelId: number) {
      await fx.flush();
      const db = deps.db;
      const u = await db
        .selectFrom("users")
        .select(["quota", "used_quota"])
        .where("id", "=", userId)
        .executeTakeFirstOrThrow();
      const t = await db
        .selectFrom("tokens")
        .select(["remain_quota", "used_quota"])
        .where("id", "=", tokenId)
        .executeTakeFirstOrThrow();
      const c = await db
        .selectFrom("channels")
        .select(["used_quota"])
        .where("id", "=", channelId)
        .executeTakeFirstOrThrow();
      return {
        quota: Number(u.quota),
        userUsed: Number(u.used_quota),
        remain: Number(t.remain_quota),
        tokenUsed: Number(t.used_quota),
        channelUsed: Number(c.used_quota),
      };
    },
  });
  return tf;
}
