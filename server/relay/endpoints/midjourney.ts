// midjourney-proxy's API in front of the task endpoint (channel types 2 and 5): submits, fetches, the image
// proxy and the upstream's notify callback. Task ids are the upstream's (`result` of a submit), the same in
// every answer, the drawing log and the notify calls; a user reaches only their own tasks. Errors answer in
// midjourney-proxy's shape ({code: 4, description}) with the matching HTTP status.
import type { AppDeps } from "../../deps.ts";
import type { Midjourney } from "../../../db/schema.ts";
import { createHmac, timingSafeEqual } from "node:crypto";
import { AppError } from "../../http/errors.ts";
import { MJ_ACTIONS, MJ_SUBMIT_CODE, TASK_STATUS, mjPriceKey } from "../../catalogue/tasks.ts";
import { CHANNEL_STATUS } from "../../catalogue/index.ts";
import { mjImageSignatureValid, mjImageUrl } from "../../modules/task/links.ts";
import type { Caller } from "../auth.ts";
import { mjState } from "../providers/midjourney/task.ts";
import { taskAdaptorFor } from "../providers/tasks.ts";
import { mjTaskObject } from "../formats/tasks.ts";
import { applyTaskState, newTaskPrivate, refOf, taskCall } from "../core/task-settle.ts";
import { submitTask } from "./task.ts";
import { writeOffLoop } from "../../infra/statement-worker.ts";

export const MJ_SUBMITS = [
  "imagine",
  "change",
  "simple-change",
  "describe",
  "blend",
  "action",
  "modal",
  "shorten",
  "upload-discord-images",
] as const;
export type MjSubmit = (typeof MJ_SUBMITS)[number] | "swap";
export const MJ_MODES = ["relax", "fast", "turbo"] as const;
export type MjMode = (typeof MJ_MODES)[number];

export interface MjContext {
  caller: Caller;
  ip: string;
  /** the speed asked for in the path (/fast/mj/...), or null */
  mode: MjMode | null;
}

const mjError = (status: number, description: string, headers?: Record<string, string>) =>
  Response.json({ code: 4, description, type: "midjourney_error", result: null }, { status, headers });

/** Runs a handler and answers any failure in midjourney-proxy's shape (auth, limits and quota included). */
export async function mjAnswer(run: () => Promise<Response | unknown>): Promise<Response> {
  try {
    const out = await run();
    return out instanceof Response ? out : Response.json(out);
  } catch (e) {
    if (e instanceof AppError) return mjError(e.status, e.message, e.headers);
    console.error("midjourney route failed:", e);
    return mjError(500, "internal server error, please contact the administrator");
  }
}

interface Resolved {
  action: string;
  /** the earlier task this one acts on */
  originId?: string;
}

/** What a submit asks for (new-api's reading of midjourney-proxy's requests). */
export function resolveAction(kind: MjSubmit, body: Record<string, any>): Resolved {
  const str = (v: unknown) => (typeof v === "string" ? v.trim() : typeof v === "number" ? String(v) : "");
  switch (kind) {
    case "imagine":
      if (!str(body.prompt)) throw new AppError(400, "prompt is required");
      return { action: "IMAGINE" };
    case "describe":
      return { action: "DESCRIBE" };
    case "blend":
      return { action: "BLEND" };
    case "shorten":
      return { action: "SHORTEN" };
    case "upload-discord-images":
      return { action: "UPLOAD" };
    case "swap":
      if (!str(body.sourceBase64) || !str(body.targetBase64))
        throw new AppError(400, "sourceBase64 and targetBase64 are required");
      return { action: "SWAP_FACE" };
    case "modal":
      if (!str(body.taskId)) throw new AppError(400, "taskId is required");
      return { action: "MODAL", originId: str(body.taskId) };
    case "change": {
      const action = str(body.action).toUpperCase();
      if (!str(body.taskId)) throw new AppError(400, "taskId is required");
      if (!action || !(MJ_ACTIONS as readonly string[]).includes(action))
        throw new AppError(400, "action is required: UPSCALE, VARIATION or REROLL");
      if (action !== "REROLL" && !Number(body.index)) throw new AppError(400, "index is required");
      return { action, originId: str(body.taskId) };
    }
    case "simple-change": {
      const m = /^(\S+)\s+([UuVv])([1-4])$|^(\S+)\s+([Rr])$/.exec(str(body.content));
      if (!m) throw new AppError(400, "content must be '<taskId> U1..U4', '<taskId> V1..V4' or '<taskId> R'");
      const id = m[1] ?? m[4]!;
      const letter = (m[2] ?? m[5]!).toUpperCase();
      return { action: letter === "U" ? "UPSCALE" : letter === "V" ? "VARIATION" : "REROLL", originId: id };
    }
    case "action": {
      if (!str(body.taskId)) throw new AppError(400, "taskId is required");
      const action = plusAction(str(body.customId));
      return { action, originId: str(body.taskId) };
    }
  }
}

/** The action behind a Plus button's customId ("MJ::JOB::upsample::2::<uuid>", "MJ::Outpaint::...", ...). */
function plusAction(customId: string): string {
  if (!customId) throw new AppError(400, "customId is required");
  const parts = customId.split("::");
  const name = (parts[1] === "JOB" ? parts[2] : parts[1]) ?? "";
  if (name.includes("upsample")) return "UPSCALE";
  if (name === "variation") return "VARIATION";
  if (name === "low_variation") return "LOW_VARIATION";
  if (name === "high_variation") return "HIGH_VARIATION";
  if (name.includes("pan")) return "PAN";
  if (name.includes("reroll")) return "REROLL";
  if (name === "Outpaint") return "ZOOM";
  if (name === "CustomZoom") return "CUSTOM_ZOOM";
  if (name === "Inpaint") return "INPAINT";
  throw new AppError(400, `unknown action in customId ${customId.slice(0, 100)}`);
}

const MODE_FLAGS = /\s*--(?:fast|relax|turbo)\b/g;

/** The upstream path: the mode becomes midjourney-proxy's /mj-<mode> prefix unless MjModeClearEnabled. */
function upstreamPath(deps: AppDeps, path: string, mode: MjMode | null): string {
  return mode && !deps.options.bool("MjModeClearEnabled") ? `/mj-${mode}${path}` : path;
}

/** The gateway's own callback for a channel's upstream: signed, so nobody else can report progress. */
export function notifySignature(deps: AppDeps, channelId: number): string {
  return createHmac("sha256", deps.config.sessionSecret).update(`mj-notify\n${channelId}`).digest("hex").slice(0, 32);
}

function notifyHookFor(deps: AppDeps, channelId: number): string | null {
  const base = deps.options.get("ServerAddress").replace(/\/+$/, "");
  return base ? `${base}/mj/notify?channel=${channelId}&sig=${notifySignature(deps, channelId)}` : null;
}

/** A user's task by its id (the newest if the upstream ids of two channels ever met). */
async function ownTask(deps: AppDeps, userId: number, mjId: string): Promise<Midjourney | undefined> {
  if (!mjId) return undefined;
  return deps.db
    .selectFrom("midjourneys")
    .selectAll()
    .where("user_id", "=", userId)
    .where("mj_id", "=", mjId)
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
}

export const mjView = (deps: AppDeps, row: Midjourney) =>
  mjTaskObject(row, mjImageUrl(deps, row.mj_id, row.image_url ?? ""));

/** POST /mj/submit/<kind> and /mj/insight-face/swap. */
export async function mjSubmit(
  deps: AppDeps,
  kind: MjSubmit,
  path: string,
  body: Record<string, any>,
  ctx: MjContext,
): Promise<Response> {
  if (!deps.options.bool("DrawingEnabled")) throw new AppError(403, "drawing is disabled by the administrator");
  const { action, originId } = resolveAction(kind, body);
  let prompt = typeof body.prompt === "string" ? body.prompt : "";
  let channelId: number | undefined;
  if (originId) {
    const origin = await ownTask(deps, ctx.caller.userId, originId);
    if (!origin) throw new AppError(404, `task ${originId} not found`);
    if (
      action !== "MODAL"
      && deps.options.bool("MjActionCheckSuccessEnabled")
      && origin.status !== TASK_STATUS.success
    ) {
      throw new AppError(400, `task ${originId} has not succeeded yet (status ${origin.status || "submitting"})`);
    }
    channelId = origin.channel_id;
    if (!prompt) prompt = origin.prompt ?? "";
  }
  // What goes upstream: the client's request, minus what the options keep from it.
  const sent: Record<string, any> = { ...body };
  if (!deps.options.bool("MjAccountFilterEnabled")) delete sent.accountFilter;
  const clientHook = typeof sent.notifyHook === "string" && sent.notifyHook.trim() ? sent.notifyHook.trim() : "";
  delete sent.notifyHook;
  if (deps.options.bool("MjModeClearEnabled") && typeof sent.prompt === "string")
    sent.prompt = sent.prompt.replace(MODE_FLAGS, "").trim();

  const model = mjPriceKey(action);
  const result = await submitTask(deps, {
    req: {
      mode: "task",
      format: "openai",
      path,
      search: "",
      body: sent,
      model,
      stream: false,
      caller: ctx.caller,
      ip: ctx.ip,
    },
    platform: "midjourney",
    units: 1,
    channelId,
    action,
    path: () => upstreamPath(deps, path, ctx.mode),
    body: (channel) => {
      const hook = notifyHookFor(deps, channel.id);
      return hook ? { ...sent, notifyHook: hook } : sent;
    },
  });
  const { outcome } = result;
  const nowMs = Date.now();
  const code = outcome.code ?? MJ_SUBMIT_CODE.notSubmitted;
  const row: Record<string, unknown> = {
    code,
    user_id: ctx.caller.userId,
    action,
    mj_id: outcome.id,
    prompt,
    prompt_en: "",
    description: outcome.description ?? "",
    state: "",
    submit_time: nowMs,
    start_time: 0,
    finish_time: 0,
    image_url: "",
    status: TASK_STATUS.submitted,
    progress: "0%",
    fail_reason: "",
    channel_id: result.channel.id,
    quota: 0,
    buttons: "",
    properties: "",
    created_at: Math.floor(nowMs / 1000),
    private_data: null,
  };
  if (!result.accepted) {
    // Recorded so the drawing log shows why; nothing was paid.
    Object.assign(row, {
      status: TASK_STATUS.failure,
      progress: "100%",
      finish_time: nowMs,
      fail_reason: outcome.message ?? outcome.description ?? "",
    });
    await writeOffLoop(deps.db, deps.db.insertInto("midjourneys").values(row as any));
    return Response.json(outcome.body);
  }
  row.quota = result.quota;
  row.private_data = newTaskPrivate(
    result.adm,
    result.keyIndex,
    deps.options.bool("MjNotifyEnabled") ? clientHook || undefined : undefined,
  );
  const known = outcome.state;
  if (known?.imageUrl) row.image_url = known.imageUrl;
  if (known?.status) row.status = known.status;
  // An upload has nothing left to do; a task the upstream already finished (code 21) is done too.
  if (action === "UPLOAD" || row.status === TASK_STATUS.success)
    Object.assign(row, { status: TASK_STATUS.success, progress: "100%", start_time: nowMs, finish_time: nowMs });
  // An existing task that already failed was paid like any other: the poller reads the failure and refunds it.
  else if (row.status === TASK_STATUS.failure) row.status = TASK_STATUS.submitted;
  await writeOffLoop(deps.db, deps.db.insertInto("midjourneys").values(row as any));
  // Codes 21 and 22 mean the job is taken: clients are told 1, except for the window actions that open
  // a MODAL (they need to know a window is waiting).
  const body1 =
    outcome.body && typeof outcome.body === "object" ? { ...(outcome.body as Record<string, unknown>) } : outcome.body;
  if (
    body1
    && typeof body1 === "object"
    && (code === MJ_SUBMIT_CODE.queued
      || (code === MJ_SUBMIT_CODE.exists && action !== "INPAINT" && action !== "CUSTOM_ZOOM"))
  ) {
    (body1 as Record<string, unknown>).code = MJ_SUBMIT_CODE.submitted;
  }
  return Response.json(body1);
}

/** GET /mj/task/{id}/fetch */
export async function mjFetch(deps: AppDeps, caller: Caller, id: string): Promise<unknown> {
  const row = await ownTask(deps, caller.userId, id);
  if (!row) throw new AppError(404, `task ${id} not found`);
  return mjView(deps, row);
}

/** POST /mj/task/list-by-condition {ids}: the caller's tasks among them, in no particular order. */
export async function mjList(deps: AppDeps, caller: Caller, body: Record<string, any>): Promise<unknown[]> {
  const ids = Array.isArray(body.ids) ? body.ids.filter((x: unknown) => typeof x === "string" && x).slice(0, 1000) : [];
  if (ids.length === 0) return [];
  const rows = await deps.db
    .selectFrom("midjourneys")
    .selectAll()
    .where("user_id", "=", caller.userId)
    .where("mj_id", "in", ids)
    .execute();
  return rows.map((r) => mjView(deps, r));
}

/** GET /mj/task/{id}/image-seed: asked of the upstream that made the image. */
export async function mjImageSeed(deps: AppDeps, caller: Caller, id: string, mode: MjMode | null): Promise<Response> {
  const row = await ownTask(deps, caller.userId, id);
  if (!row) throw new AppError(404, `task ${id} not found`);
  const channel = await deps.db.selectFrom("channels").selectAll().where("id", "=", row.channel_id).executeTakeFirst();
  if (!channel || channel.status !== CHANNEL_STATUS.enabled)
    throw new AppError(403, "the channel of this task is disabled");
  const adaptor = taskAdaptorFor(channel.type);
  if (!adaptor || adaptor.platform !== "midjourney")
    throw new AppError(400, "the channel of this task is not a Midjourney channel");
  const call = taskCall(channel, refOf("midjourneys", row).priv.key_index);
  const up = adaptor.request(
    call,
    "GET",
    upstreamPath(deps, `/mj/task/${encodeURIComponent(row.mj_id)}/image-seed`, mode),
  );
  const res = await fetch(up.url, {
    method: "GET",
    headers: up.headers,
    redirect: "manual",
    signal: AbortSignal.timeout(30_000),
  }).catch(() => {
    throw new AppError(502, "could not reach the drawing service");
  });
  const text = await res.text();
  if (!res.ok) throw new AppError(res.status >= 500 ? 502 : res.status, "the drawing service could not read the seed");
  try {
    return Response.json(JSON.parse(text));
  } catch {
    throw new AppError(502, "the drawing service sent an unreadable answer");
  }
}

/** GET /mj/image/{id}?sig=: the task's image through the gateway (MjForwardUrlEnabled links point here). */
export async function mjImage(deps: AppDeps, id: string, sig: string): Promise<Response> {
  if (!sig || !mjImageSignatureValid(deps, id, sig)) return mjError(403, "invalid or missing image signature");
  const row = await deps.db
    .selectFrom("midjourneys")
    .select(["image_url"])
    .where("mj_id", "=", id)
    .where("image_url", "<>", "")
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  if (!row?.image_url) return mjError(404, `no image for task ${id}`);
  let res: Response;
  try {
    res = await fetch(row.image_url, { redirect: "follow", signal: AbortSignal.timeout(60_000) });
  } catch {
    return mjError(502, "could not fetch the image");
  }
  if (!res.ok) {
    await res.body?.cancel();
    return mjError(502, `the image server answered with status ${res.status}`);
  }
  const type = res.headers.get("content-type") ?? "image/png";
  const headers: Record<string, string> = {
    "content-type": type.startsWith("image/") ? type : "application/octet-stream",
    "cache-control": "private, max-age=86400",
  };
  const length = res.headers.get("content-length");
  if (length) headers["content-length"] = length;
  return new Response(res.body, { status: 200, headers });
}

/** POST /mj/notify?channel=&sig=: the upstream reports a task's progress (the hook the gateway gave it). */
export async function mjNotify(
  deps: AppDeps,
  channelParam: string,
  sig: string,
  body: Record<string, any>,
): Promise<unknown> {
  const channelId = Number(channelParam);
  const want = Buffer.from(Number.isInteger(channelId) && channelId > 0 ? notifySignature(deps, channelId) : "");
  const got = Buffer.from(sig ?? "");
  if (want.length === 0 || got.length !== want.length || !timingSafeEqual(got, want))
    throw new AppError(403, "invalid notify signature");
  const st = mjState(body);
  if (!st) throw new AppError(400, "the notification names no task");
  const row = await deps.db
    .selectFrom("midjourneys")
    .selectAll()
    .where("channel_id", "=", channelId)
    .where("mj_id", "=", st.id)
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  if (!row) throw new AppError(404, `task ${st.id} not found`);
  await applyTaskState(deps, refOf("midjourneys", row), st);
  return { code: 1, description: "ok" };
}
