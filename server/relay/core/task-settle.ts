// Settlement of tasks (submit → poll → settle). A task is paid when the upstream takes it: its hold is
// settled into a consume log like any call, and the write-behind is flushed before the task row is written,
// so a row's `quota` is always money that really left the balances. It is refunded when the task ends in
// FAILURE: one transaction moves the row to FAILURE with a conditional UPDATE (only from an unfinished
// status) and, only if that UPDATE changed the row, gives the quota back to the user (and to a limited
// token), takes it out of used_quota of user, token and channel, and writes a system log saying so. Whoever
// finishes a task first — the poller of any instance, or the upstream's notify callback — wins that UPDATE;
// everyone else changes nothing, so a task is refunded at most once whatever the number of instances.
import { sql } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { Channel, Midjourney, Task } from "../../../db/schema.ts";
import type { Database } from "../../../db/index.ts";
import { LOG_TYPE } from "../../catalogue/index.ts";
import { FINISHED_STATUSES, TASK_STATUS } from "../../catalogue/tasks.ts";
import type { SettledEntry } from "../../jobs/writebehind.ts";
import { maybeNotifyQuota } from "../../infra/notify.ts";
import { fetchOutbound, fetchPolicy } from "../../infra/outbound.ts";
import { parseChannelInfo, splitKeys } from "../../modules/channel/keys.ts";
import { mjImageUrl } from "../../modules/task/links.ts";
import { relayState } from "../state.ts";
import { baseUrlOf } from "../providers/index.ts";
import { taskAdaptorFor, type TaskCall, type TaskState } from "../providers/tasks.ts";
import { mjTaskObject } from "../formats/tasks.ts";
import type { Admission } from "./admit.ts";
import { loggedIp } from "./settle.ts";
import { fetchBody } from "../../infra/stream-client.ts";

export type TaskTable = "midjourneys" | "tasks";

/** What a task row keeps for its own settlement (the private_data column; never sent to a client). */
export interface TaskPrivate {
  /** the token that paid (0: none) */
  token_id: number;
  /** its remain_quota was drawn (a limited token), so a refund goes back there too */
  token_limited: boolean;
  token_name: string;
  username: string;
  group: string;
  /** the price key the task was billed under (mj_imagine, suno_music, sora-2, ...) */
  model: string;
  /** which key of a multi-key channel took the task: the poller asks with the same one */
  key_index: number;
  /** the client's notifyHook (drawing tasks): told of every change while MjNotifyEnabled */
  notify_hook?: string;
  /** the end of the token's budget period the price was spent in (modules/token/limits.ts): a refund goes back there */
  budget_end?: number;
  /** new-api's: the upstream's id of a task new-api submitted under an id of its own (task_id) */
  upstream_task_id?: string;
}

export interface TaskRef {
  table: TaskTable;
  row: Midjourney | Task;
  priv: TaskPrivate;
}

export function taskPrivate(text: string | null | undefined): TaskPrivate {
  let p: any = {};
  try {
    p = text ? JSON.parse(text) : {};
  } catch {}
  return {
    token_id: Number(p.token_id) || 0,
    token_limited: p.token_limited === true,
    token_name: String(p.token_name ?? ""),
    username: String(p.username ?? ""),
    group: String(p.group ?? ""),
    model: String(p.model ?? ""),
    key_index: Number(p.key_index) || 0,
    notify_hook: typeof p.notify_hook === "string" && p.notify_hook ? p.notify_hook : undefined,
    budget_end: Number(p.budget_end) || undefined,
    upstream_task_id: typeof p.upstream_task_id === "string" && p.upstream_task_id ? p.upstream_task_id : undefined,
  };
}

export const refOf = (table: TaskTable, row: Midjourney | Task): TaskRef => ({
  table,
  row,
  priv: taskPrivate(row.private_data),
});
export const publicIdOf = (ref: TaskRef) =>
  ref.table === "midjourneys" ? (ref.row as Midjourney).mj_id : (ref.row as Task).task_id;
/** The id the upstream knows the task by: new-api keeps it apart from its own task_id when it has one. */
const upstreamIdOf = (ref: TaskRef) => ref.priv.upstream_task_id ?? publicIdOf(ref);
const isFinished = (status: string | null | undefined) => FINISHED_STATUSES.includes(status ?? "");

// ---- paying for a task ---------------------------------------------------------------------------------

export interface ChargeInfo {
  channel: Channel;
  usedChannels: number[];
  action: string;
  taskId: string;
}

/**
 * The upstream took the task: its hold becomes its price, recorded as a consume log, and the write-behind is
 * flushed so the charge is in the database before the caller writes the task row. Returns the quota taken.
 */
export async function chargeTask(deps: AppDeps, adm: Admission, quota: number, info: ChargeInfo): Promise<number> {
  adm.ticket.succeeded();
  const { ledger, writer } = relayState(deps);
  let taken: number;
  try {
    taken = await ledger.settle(adm.hold, quota, (q) => chargeRecords(deps, adm, q, info));
    // The token's budget is spent at submission (a task that fails later gets it back: refundIn).
    await adm.limits?.spend(taken, 0);
  } finally {
    await adm.limits?.end();
  }
  await writer.flush().catch((e) => console.error("task charge flush failed (kept queued):", (e as Error).message));
  const c = adm.req.caller;
  maybeNotifyQuota(deps, c.userId, ledger.remaining(c.userId, c.userQuota - taken), c.userSetting);
  return taken;
}

function chargeRecords(deps: AppDeps, adm: Admission, quota: number, info: ChargeInfo): SettledEntry {
  const { req, price } = adm;
  const c = req.caller;
  const now = Math.floor(Date.now() / 1000);
  const usage = {
    userId: c.userId,
    username: c.username,
    tokenId: c.tokenId,
    channelId: info.channel.id,
    model: req.model,
    quota,
    tokens: 0,
    at: now,
  };
  if (!deps.options.bool("LogConsumeEnabled")) return { usage, log: null };
  const other = {
    model_price: price.modelPrice,
    group_ratio: price.groupRatio,
    task_id: info.taskId,
    action: info.action,
    admin_info: { use_channel: info.usedChannels.map(String) },
    request_path: req.path,
  };
  return {
    usage,
    log: {
      user_id: c.userId,
      created_at: now,
      type: LOG_TYPE.consume,
      username: c.username,
      token_name: c.tokenName,
      model_name: req.model,
      content: `model price $${price.modelPrice}, group ratio ${price.groupRatio}, action ${info.action}, task ${info.taskId}`,
      quota,
      prompt_tokens: 0,
      completion_tokens: 0,
      use_time: Math.round((performance.now() - adm.started) / 1000),
      is_stream: false,
      channel_id: info.channel.id,
      token_id: c.tokenId,
      group: c.group,
      ip: loggedIp(req),
      other: JSON.stringify(other),
    },
  };
}

/** The private part of a new task row: who paid and how to reach the task again. */
export function newTaskPrivate(adm: Admission, keyIndex: number, notifyHook?: string): string {
  const c = adm.req.caller;
  const p: TaskPrivate = {
    token_id: c.tokenId,
    token_limited: c.tokenId !== 0 && !c.unlimited,
    token_name: c.tokenName,
    username: c.username,
    group: c.group,
    model: adm.req.model,
    key_index: keyIndex,
    ...(notifyHook ? { notify_hook: notifyHook } : {}),
    ...(adm.limits?.budgetEnd ? { budget_end: adm.limits.budgetEnd } : {}),
  };
  return JSON.stringify(p);
}

// ---- progress and the end of a task ---------------------------------------------------------------------

const pct = (p: string | null | undefined) => Number.parseInt(p || "0", 10) || 0;

/** The columns a state changes: progress never moves back within a status, times only fill in. The upstream's
 * start and finish times are taken when they are not before the gateway's submit time (another clock may lag). */
function columnsFor(ref: TaskRef, st: TaskState, nowMs: number): Record<string, unknown> {
  const r = ref.row;
  const submittedMs = ref.table === "midjourneys" ? Number(r.submit_time) : Number(r.submit_time) * 1000;
  const upstreamTime = (ms: number | undefined) => (ms && ms >= submittedMs && ms <= nowMs + 60_000 ? ms : undefined);
  st = { ...st, startTime: upstreamTime(st.startTime), finishTime: upstreamTime(st.finishTime) };
  const finished = isFinished(st.status);
  const sameStatus = st.status === r.status;
  let progress = finished ? "100%" : (st.progress ?? (r.progress || "0%"));
  if (!finished && sameStatus && pct(progress) < pct(r.progress)) progress = r.progress;
  const started = st.status === TASK_STATUS.inProgress || finished;
  const failReason =
    st.status === TASK_STATUS.failure
      ? st.failReason || r.fail_reason || "the upstream reported the task as failed"
      : st.failReason || r.fail_reason || "";
  if (ref.table === "midjourneys") {
    const m = r as Midjourney;
    const set: Record<string, unknown> = {
      status: st.status,
      progress,
      fail_reason: failReason,
      start_time: Number(m.start_time) || st.startTime || (started ? nowMs : 0),
      finish_time: finished ? Number(m.finish_time) || st.finishTime || nowMs : Number(m.finish_time),
    };
    if (st.imageUrl) set.image_url = st.imageUrl;
    if (st.promptEn) set.prompt_en = st.promptEn;
    if (st.state) set.state = st.state;
    if (st.buttons !== undefined) set.buttons = JSON.stringify(st.buttons);
    if (st.properties !== undefined) set.properties = JSON.stringify(st.properties);
    return set;
  }
  const t = r as Task;
  const sec = (ms: number | undefined) => (ms ? Math.floor(ms / 1000) : 0);
  const set: Record<string, unknown> = {
    status: st.status,
    progress,
    fail_reason: failReason,
    start_time: Number(t.start_time) || sec(st.startTime) || (started ? sec(nowMs) : 0),
    finish_time: finished ? Number(t.finish_time) || sec(st.finishTime) || sec(nowMs) : Number(t.finish_time),
  };
  if (st.data !== undefined) set.data = JSON.stringify(st.data);
  return set;
}

function differs(row: Record<string, any>, set: Record<string, unknown>): boolean {
  for (const [k, v] of Object.entries(set)) {
    const cur = row[k];
    if (typeof v === "number" ? Number(cur) !== v : (cur ?? "") !== v) return true;
  }
  return false;
}

/**
 * Brings a task row up to what the upstream says. Unfinished rows only: a finished task never changes
 * again. Answers whether this call changed the row (a second instance applying the same news does not).
 */
export async function applyTaskState(deps: AppDeps, ref: TaskRef, st: TaskState): Promise<boolean> {
  if (isFinished(ref.row.status)) return false;
  const nowMs = Date.now();
  const set = columnsFor(ref, st, nowMs);
  if (!differs(ref.row as Record<string, any>, set)) return false;
  if (ref.table === "tasks") set.updated_at = Math.floor(nowMs / 1000);
  const won = isFinished(st.status) ? await finishRow(deps, ref, set) : await updateRow(deps.db, ref, set);
  if (won) taskChanged(deps, { ...ref, row: { ...ref.row, ...set } as Midjourney | Task });
  return won;
}

/** The gateway gives up on a task (time limit, channel gone): FAILURE with `reason`, refunded. */
export function failTask(deps: AppDeps, ref: TaskRef, reason: string): Promise<boolean> {
  return applyTaskState(deps, ref, { id: publicIdOf(ref), status: TASK_STATUS.failure, failReason: reason });
}

async function updateRow(db: Database, ref: TaskRef, set: Record<string, unknown>): Promise<boolean> {
  const res = await (db.updateTable(ref.table) as any)
    .set(set)
    .where("id", "=", ref.row.id)
    .where("status", "not in", FINISHED_STATUSES)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** The end of a task, once: the conditional UPDATE and, for a failure, the refund in the same transaction. */
async function finishRow(deps: AppDeps, ref: TaskRef, set: Record<string, unknown>): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await deps.db.transaction().execute(async (trx) => {
        if (!(await updateRow(trx, ref, set))) return false;
        if (set.status === TASK_STATUS.failure) await refundIn(trx, ref, String(set.fail_reason ?? ""));
        return true;
      });
    } catch (e) {
      // PostgreSQL/MySQL deadlock or serialization failure: the transaction changed nothing, run it again.
      const code = String((e as any)?.code ?? (e as any)?.errno ?? "");
      if (attempt >= 4 || !["40P01", "40001", "ER_LOCK_DEADLOCK", "1213"].includes(code)) throw e;
      await Bun.sleep(5 * (attempt + 1));
    }
  }
}

/** The refund of a failed task, inside the transaction that finished it. Tokens before users (the ledger's lock order). */
async function refundIn(trx: Database, ref: TaskRef, reason: string): Promise<void> {
  const q = Number(ref.row.quota) || 0;
  if (q <= 0) return;
  const { priv, row } = ref;
  if (priv.token_id) {
    await trx
      .updateTable("tokens")
      .set((eb) => ({
        used_quota: eb("used_quota", "-", q),
        ...(priv.token_limited ? { remain_quota: eb("remain_quota", "+", q) } : {}),
        // The budget period the price was spent in gets it back, if it is still the token's current one.
        ...(priv.budget_end
          ? {
              budget_used: sql<number>`case when budget_reset_at <> ${priv.budget_end} then budget_used when budget_used > ${q} then budget_used - ${q} else 0 end`,
            }
          : {}),
      }))
      .where("id", "=", priv.token_id)
      .execute();
  }
  await trx
    .updateTable("users")
    .set((eb) => ({ quota: eb("quota", "+", q), used_quota: eb("used_quota", "-", q) }))
    .where("id", "=", row.user_id)
    .execute();
  if (row.channel_id)
    await trx
      .updateTable("channels")
      .set((eb) => ({ used_quota: eb("used_quota", "-", q) }))
      .where("id", "=", row.channel_id)
      .execute();
  const id = publicIdOf(ref);
  await trx
    .insertInto("logs")
    .values({
      user_id: row.user_id,
      created_at: Math.floor(Date.now() / 1000),
      type: LOG_TYPE.system,
      username: priv.username,
      token_name: priv.token_name,
      model_name: priv.model,
      quota: q,
      prompt_tokens: 0,
      completion_tokens: 0,
      use_time: 0,
      is_stream: false,
      channel_id: row.channel_id,
      token_id: priv.token_id,
      group: priv.group,
      ip: "",
      content: `task ${id} (${row.action}) failed: ${q} quota refunded`,
      other: JSON.stringify({ task_id: id, action: row.action, refund: true, reason: reason.slice(0, 500) }),
    })
    .execute();
}

/** Tells the client's notifyHook about a drawing task's change (MjNotifyEnabled), off the poller's path. */
function taskChanged(deps: AppDeps, ref: TaskRef): void {
  if (ref.table !== "midjourneys" || !ref.priv.notify_hook || !deps.options.bool("MjNotifyEnabled")) return;
  const row = ref.row as Midjourney;
  const body = JSON.stringify(mjTaskObject(row, mjImageUrl(deps, row.mj_id, row.image_url ?? "")));
  void fetchOutbound(ref.priv.notify_hook, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    maxRedirects: 0,
    timeoutMs: 10_000,
    maxBytes: 64 * 1024,
    policy: fetchPolicy(deps.options),
  }).catch(() => {});
}

// ---- asking the upstream ---------------------------------------------------------------------------------

/** The channel's key line a task was submitted with. */
export function taskCall(channel: Channel, keyIndex: number): TaskCall {
  const info = parseChannelInfo(channel.channel_info);
  const key = info.is_multi_key
    ? (splitKeys(channel.key ?? "")[keyIndex] ?? splitKeys(channel.key ?? "")[0] ?? "")
    : String(channel.key ?? "").trim();
  return { baseUrl: baseUrlOf(channel), key, channelType: channel.type };
}

export const POLL_TIMEOUT_MS = 15_000;

/**
 * Asks the channel's upstream about these unfinished tasks (as many per request as it allows, per key) and
 * applies what it says. Throws when the upstream cannot be asked (the poller then backs off the channel).
 */
export async function pollChannel(
  deps: AppDeps,
  channel: Channel,
  refs: TaskRef[],
  signal?: AbortSignal,
): Promise<void> {
  const adaptor = taskAdaptorFor(channel.type);
  if (!adaptor) throw new Error(`channel type ${channel.type} runs no tasks`);
  const byKey = new Map<number, TaskRef[]>();
  for (const r of refs) {
    const list = byKey.get(r.priv.key_index) ?? [];
    list.push(r);
    byKey.set(r.priv.key_index, list);
  }
  let failure: Error | null = null;
  for (const [keyIndex, list] of byKey) {
    const call = taskCall(channel, keyIndex);
    for (let i = 0; i < list.length; i += adaptor.batchSize) {
      const part = list.slice(i, i + adaptor.batchSize);
      const byId = new Map(part.map((r) => [upstreamIdOf(r), r]));
      const up = adaptor.fetch(call, [...byId.keys()]);
      const timeout = AbortSignal.timeout(POLL_TIMEOUT_MS);
      try {
        const res = await fetch(up.url, {
          method: up.method ?? "GET",
          headers: up.headers,
          body: fetchBody(up.body),
          redirect: "manual",
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        const text = await res.text();
        if (!res.ok) throw new Error(adaptor.errorMessage(res.status, text));
        for (const st of adaptor.readFetch(JSON.parse(text), [...byId.keys()])) {
          const ref = byId.get(st.id);
          if (ref) await applyTaskState(deps, ref, st);
        }
      } catch (e) {
        if (signal?.aborted) throw e;
        failure = e as Error;
      }
    }
  }
  if (failure) throw failure;
}
