// OpenAI's video API in front of the task endpoint: POST /v1/videos (JSON or multipart with an
// input_reference file), GET /v1/videos/{id} and GET /v1/videos/{id}/content, relayed to OpenAI-format
// channels. Billed by ModelPrice per second of video (the request's `seconds`, 4 when it names none, sent
// upstream explicitly so the client gets what it paid for). Errors are OpenAI error objects.
import type { AppDeps } from "../../deps.ts";
import type { Task } from "../../../db/schema.ts";
import { AppError } from "../../http/errors.ts";
import { TASK_PLATFORM, TASK_STATUS, VIDEO_ACTION, VIDEO_DEFAULT_SECONDS } from "../../catalogue/tasks.ts";
import type { Caller } from "../auth.ts";
import { scrub } from "../formats/scrub.ts";
import { videoState } from "../providers/openai/task.ts";
import { taskAdaptorFor } from "../providers/tasks.ts";
import { videoObject } from "../formats/tasks.ts";
import { newTaskPrivate, taskCall, taskPrivate } from "../core/task-settle.ts";
import { submitTask } from "./task.ts";
import { writeOffLoop } from "../../infra/statement-worker.ts";

/** Longest video a request may ask for (OpenAI offers 4, 8 and 12 seconds; other upstreams a little more). */
const MAX_SECONDS = 60;
const DEFAULT_MODEL = "sora-2";

function secondsOf(v: unknown): number {
  if (v === undefined || v === null || v === "") return VIDEO_DEFAULT_SECONDS;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_SECONDS)
    throw new AppError(400, `seconds must be a whole number from 1 to ${MAX_SECONDS}`, "invalid_value");
  return n;
}

/** POST /v1/videos; `body` is the parsed JSON object or the multipart form. */
export async function videoSubmit(
  deps: AppDeps,
  body: Record<string, any> | FormData,
  caller: Caller,
  ip: string,
): Promise<unknown> {
  const form = body instanceof FormData ? body : null;
  const get = (k: string) => (form ? form.get(k) : (body as Record<string, any>)[k]);
  const model = String(get("model") ?? "").trim() || DEFAULT_MODEL;
  const prompt = String(get("prompt") ?? "");
  if (!prompt.trim()) throw new AppError(400, "prompt is required", "missing_required_parameter");
  const seconds = secondsOf(get("seconds"));
  const path = "/v1/videos";
  const result = await submitTask(deps, {
    req: {
      mode: "task",
      format: "openai",
      path,
      search: "",
      body: form ? { prompt } : body,
      model,
      stream: false,
      caller,
      ip,
    },
    platform: "openai",
    units: seconds,
    action: VIDEO_ACTION,
    path: () => path,
    body: (_channel, call) => {
      if (!form) return { ...(body as Record<string, any>), model: call.upstreamModel, seconds: String(seconds) };
      const out = new FormData();
      for (const [k, v] of form.entries()) if (k !== "model" && k !== "seconds") out.append(k, v);
      out.append("model", call.upstreamModel);
      out.append("seconds", String(seconds));
      return out;
    },
  });
  if (!result.accepted)
    throw new AppError(502, result.outcome.message ?? "the upstream did not accept the video", "upstream_error");
  const now = Math.floor(Date.now() / 1000);
  const st = videoState(result.outcome.body);
  const row = {
    created_at: now,
    updated_at: now,
    task_id: result.outcome.id,
    platform: TASK_PLATFORM.openai,
    user_id: caller.userId,
    channel_id: result.channel.id,
    quota: result.quota,
    action: VIDEO_ACTION,
    status: st && st.status !== TASK_STATUS.unknown ? st.status : TASK_STATUS.queued,
    fail_reason: "",
    submit_time: now,
    start_time: 0,
    finish_time: 0,
    progress: st?.progress ?? "0%",
    properties: JSON.stringify({ input: prompt.slice(0, 4000), origin_model_name: model, seconds }),
    data: JSON.stringify(result.outcome.body),
    private_data: newTaskPrivate(result.adm, result.keyIndex),
  };
  // A video the upstream reports finished at once is left for the poller: it settles every ending the same way.
  if (row.status === TASK_STATUS.success || row.status === TASK_STATUS.failure) row.status = TASK_STATUS.inProgress;
  await writeOffLoop(deps.db, deps.db.insertInto("tasks").values(row));
  return videoObject({ ...row, id: 0 } as Task);
}

async function ownVideo(deps: AppDeps, caller: Caller, id: string): Promise<Task> {
  const row = id
    ? await deps.db
        .selectFrom("tasks")
        .selectAll()
        .where("user_id", "=", caller.userId)
        .where("platform", "=", TASK_PLATFORM.openai)
        .where("task_id", "=", id)
        .orderBy("id", "desc")
        .limit(1)
        .executeTakeFirst()
    : undefined;
  if (!row) throw new AppError(404, `no video found with id '${id}'`, "video_not_found");
  return row;
}

/** GET /v1/videos/{id} */
export async function videoGet(deps: AppDeps, caller: Caller, id: string): Promise<unknown> {
  return videoObject(await ownVideo(deps, caller, id));
}

/** GET /v1/videos/{id}/content[?variant=]: the file, streamed from the channel that made it. */
export async function videoContent(deps: AppDeps, caller: Caller, id: string, search: string): Promise<Response> {
  const row = await ownVideo(deps, caller, id);
  const channel = await deps.db.selectFrom("channels").selectAll().where("id", "=", row.channel_id).executeTakeFirst();
  const adaptor = channel ? taskAdaptorFor(channel.type) : undefined;
  if (!channel || !adaptor)
    throw new AppError(404, "the channel that made this video no longer exists", "video_not_found");
  const call = taskCall(channel, taskPrivate(row.private_data).key_index);
  const variant = new URLSearchParams(search).get("variant");
  const q = variant && /^[a-z_]{1,32}$/.test(variant) ? `?variant=${variant}` : "";
  const up = adaptor.request(call, "GET", `/v1/videos/${encodeURIComponent(row.task_id)}/content${q}`);
  let res: Response;
  try {
    res = await fetch(up.url, {
      method: "GET",
      headers: up.headers,
      redirect: "manual",
      signal: AbortSignal.timeout(deps.config.relayTimeoutMs),
    });
  } catch {
    throw new AppError(502, "could not connect to the upstream channel", "upstream_error");
  }
  if (!res.ok) {
    const text = await res.text().catch(() => "");
    throw new AppError(
      res.status >= 500 ? 502 : res.status,
      scrub(adaptor.errorMessage(res.status, text), call),
      "upstream_error",
    );
  }
  const headers: Record<string, string> = { "content-type": res.headers.get("content-type") ?? "video/mp4" };
  const length = res.headers.get("content-length");
  if (length) headers["content-length"] = length;
  return new Response(res.body, { status: 200, headers });
}
