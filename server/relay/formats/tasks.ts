// The client-facing shapes of a task, built from its row: midjourney-proxy's task object (the MJ routes
// and the notifyHook), the Suno API's task object, and OpenAI's video object. What a client reads is the
// row, so every route (fetch, list, notify) tells the same story, whatever the upstream said last.
import type { Midjourney, Task } from "../../../db/schema.ts";
import { TASK_STATUS } from "../../catalogue/tasks.ts";

/** A JSON column read back (text on every database), or `fallback` when empty or unreadable. */
export function parsedJson<T>(text: string | null | undefined, fallback: T): T {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** midjourney-proxy's task object; `imageUrl` is what the client may see (see modules/task/links.ts). */
export function mjTaskObject(row: Midjourney, imageUrl: string) {
  return {
    id: row.mj_id,
    action: row.action,
    customId: "",
    botType: "",
    prompt: row.prompt ?? "",
    promptEn: row.prompt_en ?? "",
    description: row.description ?? "",
    state: row.state ?? "",
    submitTime: Number(row.submit_time),
    startTime: Number(row.start_time),
    finishTime: Number(row.finish_time),
    imageUrl,
    status: row.status ?? "",
    progress: row.progress ?? "",
    failReason: row.fail_reason ?? "",
    buttons: parsedJson<unknown[]>(row.buttons, []),
    properties: parsedJson<Record<string, unknown>>(row.properties, {}),
  };
}

/** The Suno API's task object (new-api's TaskDto). */
export function sunoTaskObject(row: Task) {
  return {
    task_id: row.task_id,
    action: row.action,
    status: row.status ?? "",
    fail_reason: row.fail_reason ?? "",
    submit_time: Number(row.submit_time),
    start_time: Number(row.start_time),
    finish_time: Number(row.finish_time),
    progress: row.progress ?? "",
    data: parsedJson<unknown>(row.data, null),
  };
}

const VIDEO_STATUS: Record<string, string> = {
  [TASK_STATUS.success]: "completed",
  [TASK_STATUS.failure]: "failed",
  [TASK_STATUS.inProgress]: "in_progress",
};

/** OpenAI's video object: the upstream's last answer, with the status, progress and error of the row
 * (a task the gateway gave up on shows as failed even if the upstream never said so). */
export function videoObject(row: Task) {
  const last = parsedJson<Record<string, unknown>>(row.data, {});
  const status = VIDEO_STATUS[row.status] ?? "queued";
  const out: Record<string, unknown> = {
    object: "video",
    ...last,
    id: row.task_id,
    status,
    progress: Number.parseInt(row.progress || "0", 10) || 0,
    created_at: typeof last.created_at === "number" ? last.created_at : Number(row.submit_time),
  };
  if (status === "completed" && !out.completed_at && row.finish_time) out.completed_at = Number(row.finish_time);
  if (status === "failed")
    out.error = {
      code: (last.error as any)?.code ?? "video_generation_failed",
      message: row.fail_reason || "the video could not be generated",
    };
  return out;
}
