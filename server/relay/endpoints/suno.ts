// The Suno API in front of the task endpoint (channel type 36): /suno/submit/{music,lyrics}, /suno/fetch
// (POST, a list of ids) and /suno/fetch/{id}, answered as the Suno API servers answer ({code: "success",
// message, data}); failures as {code: "<error>", message, data: null} with the matching HTTP status.
import type { AppDeps } from "../../deps.ts";
import { AppError } from "../../http/errors.ts";
import { SUNO_ACTIONS, TASK_PLATFORM, TASK_STATUS, sunoPriceKey, type SunoAction } from "../../catalogue/tasks.ts";
import type { Caller } from "../auth.ts";
import { sunoTaskObject } from "../formats/tasks.ts";
import { newTaskPrivate } from "../core/task-settle.ts";
import { submitTask } from "./task.ts";
import { writeOffLoop } from "../../infra/statement-worker.ts";

export async function sunoAnswer(run: () => Promise<unknown>): Promise<Response> {
  try {
    const out = await run();
    return out instanceof Response ? out : Response.json(out);
  } catch (e) {
    if (e instanceof AppError)
      return Response.json(
        { code: e.code ?? "invalid_request", message: e.message, data: null },
        { status: e.status, headers: e.headers },
      );
    console.error("suno route failed:", e);
    return Response.json(
      { code: "internal_error", message: "internal server error, please contact the administrator", data: null },
      { status: 500 },
    );
  }
}

/** POST /suno/submit/{music,lyrics} */
export async function sunoSubmit(
  deps: AppDeps,
  actionParam: string,
  body: Record<string, any>,
  caller: Caller,
  ip: string,
): Promise<Response> {
  const action = actionParam.toUpperCase() as SunoAction;
  if (!SUNO_ACTIONS.includes(action))
    throw new AppError(400, `unknown Suno action ${actionParam.slice(0, 40)}: use music or lyrics`, "invalid_action");
  const sent: Record<string, any> = { ...body };
  if (action === "LYRICS" && !(typeof sent.prompt === "string" && sent.prompt.trim()))
    throw new AppError(400, "prompt is required", "prompt_empty");
  // The model version Suno API servers expect when the client names none (new-api's default).
  if (action === "MUSIC" && !sent.mv) sent.mv = "chirp-v3-0";
  // Continuing a clip goes to the server that made it: the task named by task_id, which must be the caller's.
  let channelId: number | undefined;
  if (sent.continue_clip_id) {
    const origin =
      typeof sent.task_id === "string" && sent.task_id
        ? (await ownTasks(deps, caller.userId, [sent.task_id]))[0]
        : undefined;
    if (!origin) throw new AppError(400, "continue_clip_id needs the task_id of one of your tasks", "task_not_exist");
    channelId = origin.channel_id;
  }
  const path = `/suno/submit/${action.toLowerCase()}`;
  const result = await submitTask(deps, {
    req: {
      mode: "task",
      format: "openai",
      path,
      search: "",
      body: sent,
      model: sunoPriceKey(action),
      stream: false,
      caller,
      ip,
    },
    platform: "suno",
    units: 1,
    action,
    channelId,
    path: () => path,
    body: () => sent,
  });
  if (!result.accepted) {
    return Response.json(
      { code: "fail_to_submit", message: result.outcome.message ?? "the Suno service refused the task", data: null },
      { status: 400 },
    );
  }
  const now = Math.floor(Date.now() / 1000);
  const input = String(sent.gpt_description_prompt || sent.prompt || "").slice(0, 4000);
  await writeOffLoop(
    deps.db,
    deps.db.insertInto("tasks").values({
      created_at: now,
      updated_at: now,
      task_id: result.outcome.id,
      platform: TASK_PLATFORM.suno,
      user_id: caller.userId,
      channel_id: result.channel.id,
      quota: result.quota,
      action,
      status: TASK_STATUS.submitted,
      fail_reason: "",
      submit_time: now,
      start_time: 0,
      finish_time: 0,
      progress: "0%",
      properties: JSON.stringify({ input }),
      private_data: newTaskPrivate(result.adm, result.keyIndex),
    }),
  );
  return Response.json(result.outcome.body);
}

const ownTasks = (deps: AppDeps, userId: number, ids: string[]) =>
  deps.db
    .selectFrom("tasks")
    .selectAll()
    .where("user_id", "=", userId)
    .where("platform", "=", TASK_PLATFORM.suno)
    .where("task_id", "in", ids)
    .execute();

/** POST /suno/fetch {ids}: the caller's tasks among them. */
export async function sunoFetchMany(deps: AppDeps, caller: Caller, body: Record<string, any>): Promise<unknown> {
  const ids: string[] = Array.isArray(body.ids)
    ? body.ids
        .map((x: unknown) => (typeof x === "number" ? String(x) : x))
        .filter((x: unknown): x is string => typeof x === "string" && x !== "")
        .slice(0, 1000)
    : [];
  const rows = ids.length ? await ownTasks(deps, caller.userId, ids) : [];
  return { code: "success", message: "", data: rows.map(sunoTaskObject) };
}

/** GET /suno/fetch/{id} */
export async function sunoFetchOne(deps: AppDeps, caller: Caller, id: string): Promise<unknown> {
  const [row] = id ? await ownTasks(deps, caller.userId, [id]) : [];
  if (!row) throw new AppError(404, `task ${id} not found`, "task_not_exist");
  return { code: "success", message: "", data: sunoTaskObject(row) };
}
