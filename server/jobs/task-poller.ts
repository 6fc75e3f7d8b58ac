// The task poller: every TASK_POLL_INTERVAL seconds it brings every unfinished drawing and creative task up
// to date — one fetch per channel for as many tasks as the upstream answers at once — and ends tasks the
// upstream no longer can: older than TASK_TIMEOUT_MINUTES, or on a channel that was deleted. Ending and
// refunding are core/task-settle.ts's, exactly once whichever instance gets there first; the poller adds
// only when to ask. A channel whose upstream fails to answer is skipped for 1, 2, 4 … up to 32 rounds.
// With a shared cache (Redis) one instance polls each round; without, every instance polls and the
// database still settles each task once.
import type { AppDeps } from "../deps.ts";
import type { Midjourney, Task } from "../../db/schema.ts";
import { FINISHED_STATUSES } from "../catalogue/tasks.ts";
import { failTask, pollChannel, publicIdOf, refOf, type TaskRef } from "../relay/core/task-settle.ts";

/** Rows read per table and round; with more unfinished tasks, the next round goes on after the last one read. */
const ROUND_LIMIT = 1000;
/** Channels asked at the same time. */
const CHANNEL_CONCURRENCY = 4;
const MAX_SKIP_ROUNDS = 32;

export interface PollerOptions {
  intervalMs: number;
  timeoutMs: number;
  /** rows read per table and round (default ROUND_LIMIT) */
  roundLimit?: number;
}

export interface RoundReport {
  polled: number;
  timedOut: number;
  failedChannels: number[];
}

export class TaskPoller {
  /** channel id → [failures in a row, rounds still to skip] */
  private backoff = new Map<number, { failures: number; skip: number }>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<unknown> | null = null;
  private abort = new AbortController();
  /** Per table, the last row id read: a backlog larger than a round is read in turns. */
  private cursor = { midjourneys: 0, tasks: 0 };

  constructor(
    private deps: AppDeps,
    private opts: PollerOptions,
  ) {}

  start(): void {
    if (this.timer || this.opts.intervalMs <= 0) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.lockedRound()
        .catch((e) => console.error("task poller round failed:", (e as Error).message))
        .finally(() => (this.running = null));
    }, this.opts.intervalMs);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.abort.abort(new Error("shutting down"));
    await this.running;
  }

  /** With a shared cache, the instance that takes the round's lock polls; the others wait for the next round. */
  private async lockedRound(): Promise<void> {
    const ttl = Math.floor(this.opts.intervalMs / 1000) - 1;
    if (ttl >= 1 && !(await this.deps.cache.setNx("job:task-poll", String(Date.now()), ttl))) return;
    await this.round();
  }

  async round(): Promise<RoundReport> {
    const report: RoundReport = { polled: 0, timedOut: 0, failedChannels: [] };
    const refs = await this.unfinished();
    const byChannel = new Map<number, TaskRef[]>();
    const nowMs = Date.now();
    for (const ref of refs) {
      if (this.abort.signal.aborted) return report;
      // A row without an upstream id (left by another gateway's failed submit) can never be asked about;
      // nothing was taken for it here, so it ends without a refund.
      if (!publicIdOf(ref)) {
        await failTask(this.deps, { ...ref, row: { ...ref.row, quota: 0 } }, "the task has no upstream id");
        continue;
      }
      const submittedMs =
        ref.table === "midjourneys" ? Number(ref.row.submit_time) : Number(ref.row.submit_time) * 1000;
      if (submittedMs && nowMs - submittedMs > this.opts.timeoutMs) {
        if (
          await failTask(
            this.deps,
            ref,
            `the task did not finish within ${Math.round(this.opts.timeoutMs / 60_000)} minutes`,
          )
        )
          report.timedOut++;
        continue;
      }
      const list = byChannel.get(ref.row.channel_id) ?? [];
      list.push(ref);
      byChannel.set(ref.row.channel_id, list);
    }
    const ids = [...byChannel.keys()];
    const channels = ids.length
      ? await this.deps.db.selectFrom("channels").selectAll().where("id", "in", ids).execute()
      : [];
    const found = new Map(channels.map((c) => [c.id, c]));
    const queue = [...byChannel.entries()];
    const worker = async () => {
      for (let next = queue.shift(); next && !this.abort.signal.aborted; next = queue.shift()) {
        const [channelId, list] = next;
        const channel = found.get(channelId);
        if (!channel) {
          for (const ref of list) await failTask(this.deps, ref, `channel #${channelId} no longer exists`);
          continue;
        }
        const b = this.backoff.get(channelId);
        if (b && b.skip > 0) {
          b.skip--;
          continue;
        }
        try {
          await pollChannel(this.deps, channel, list, this.abort.signal);
          this.backoff.delete(channelId);
          report.polled += list.length;
        } catch (e) {
          if (this.abort.signal.aborted) return;
          const failures = (b?.failures ?? 0) + 1;
          this.backoff.set(channelId, { failures, skip: Math.min(MAX_SKIP_ROUNDS, 2 ** (failures - 1)) });
          report.failedChannels.push(channelId);
          console.error(
            `task poller: channel #${channelId} could not be asked (${(e as Error).message}); next try in ${Math.min(MAX_SKIP_ROUNDS, 2 ** (failures - 1)) + 1} rounds`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: CHANNEL_CONCURRENCY }, worker));
    return report;
  }

  private async unfinished(): Promise<TaskRef[]> {
    const mj = (await this.page("midjourneys")) as Midjourney[];
    const tasks = (await this.page("tasks")) as Task[];
    return [...mj.map((r) => refOf("midjourneys", r)), ...tasks.map((r) => refOf("tasks", r))];
  }

  private async page(table: "midjourneys" | "tasks"): Promise<(Midjourney | Task)[]> {
    const limit = this.opts.roundLimit ?? ROUND_LIMIT;
    const read = (after: number) =>
      (this.deps.db.selectFrom(table) as any)
        .selectAll()
        .where("status", "not in", FINISHED_STATUSES)
        .where("id", ">", after)
        .orderBy("id")
        .limit(limit)
        .execute() as Promise<(Midjourney | Task)[]>;
    let rows = await read(this.cursor[table]);
    if (rows.length === 0 && this.cursor[table] > 0) rows = await read(0);
    this.cursor[table] = rows.length === limit ? rows.at(-1)!.id : 0;
    return rows;
  }
}

/** Starts the poller (main.ts); it stops on graceful shutdown before the database closes. */
export function startTaskPoller(deps: AppDeps): TaskPoller {
  const poller = new TaskPoller(deps, {
    intervalMs: deps.config.taskPollIntervalMs,
    timeoutMs: deps.config.taskTimeoutMs,
  });
  poller.start();
  deps.shutdownHooks.unshift(() => poller.stop());
  return poller;
}
